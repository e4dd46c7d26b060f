package controllers

// TokenIDFor is tokenIDFor, for tests that stage what a manager left behind when it died.
var TokenIDFor = tokenIDFor
