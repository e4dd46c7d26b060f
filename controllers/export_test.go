package controllers

import "time"

// TokenIDFor is tokenIDFor, for tests that stage what a manager left behind when it died.
var TokenIDFor = tokenIDFor

// The suite's configs reading unlabelled references are looked at again within seconds, not a
// minute (set before the suite's manager starts).
func init() { referenceRecheck = 2 * time.Second }
