// Package migration_test is issue 13's "done when" for moving from CABPK: a Flatcar worker
// KubeadmConfigTemplate as a cloud provider's docs show it (the CAPA flavor of
// internal/convert/testdata) goes through `cabpi convert`, is applied to a real API server
// with cabpi's webhooks, is cloned for a Machine by Cluster API's own MachineDeployment and
// MachineSet controllers, is rendered by cabpi's controller, and boots in the simulation; every
// warning on the way is visible to the user.
package migration_test

import (
	"os"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			MachineController:           true,
			MachineSetController:        true,
			MachineDeploymentController: true,
			Webhooks:                    true,
		},
		Keep:  []**testenv.Environment{&env},
		Cabpi: &setup.Options{Concurrency: 5},
	}))
}
