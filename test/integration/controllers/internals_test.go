package controllers_test

import (
	"time"
	_ "unsafe" // go:linkname

	"k8s.io/apimachinery/pkg/types"

	_ "github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers" // what the names below are linked to
)

// Two unexported names of package controllers this suite needs and package controllers exports
// to no one: the suite lives outside the package so that the package's own tests are unit tests
// (docs/adr/021-test-layers.md). They are linked by name: a renamed function fails the build of
// this suite, a renamed variable its set-up (TestMain finds referenceRecheck zero).

// tokenIDFor is controllers.tokenIDFor, for tests that stage what a manager left behind when it
// died.
//
//go:linkname tokenIDFor github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers.tokenIDFor
func tokenIDFor(uid types.UID, previous string) string

// referenceRecheck is controllers.referenceRecheck: the suite's configs reading unlabelled
// references are looked at again within seconds, not a minute (set before the manager starts).
//
//go:linkname referenceRecheck github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers.referenceRecheck
var referenceRecheck time.Duration
