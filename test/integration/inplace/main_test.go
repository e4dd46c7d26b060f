// Package inplace_test runs Cluster API's in-place update machinery in-process against cabpi's
// update extension: Cluster API's RuntimeSDK and InPlaceUpdates feature gates on, its
// ExtensionConfig reconciler discovering extensions through the suites' Runtime SDK client
// (test/framework/runtimesdk), and its Machine, MachineSet and MachineDeployment reconcilers
// given that client, as a management cluster started with those gates runs them.
package inplace_test

import (
	"os"
	"testing"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	timeout = 30 * time.Second
	tick    = 100 * time.Millisecond
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			InPlaceUpdates: true,
			// Their set-up refuses the InPlaceUpdates gate without a RuntimeClient: running
			// them checks they get one.
			MachineController:           true,
			MachineSetController:        true,
			MachineDeploymentController: true,
		},
		Keep: []**testenv.Environment{&env},
	}))
}
