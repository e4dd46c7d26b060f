package controllers_test

import (
	"os"
	"testing"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/bootsim"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/manager"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/testenv"
)

// tokenTTL is short so refresh and rotation are observable within a test: the controller looks
// at tokens every TTL/3 and extends them once less than 5/6 of the TTL is left.
const tokenTTL = 9 * time.Second

var env *testenv.Environment

// TestMain runs one real kube-apiserver + etcd for the package, with Cluster API's own Machine,
// MachineSet, MachineDeployment and MachinePool controllers and ClusterCache next to ours; the
// API server doubles as every test cluster's workload cluster.
func TestMain(m *testing.M) {
	// The boot simulator re-runs this binary inside its namespaces; that run is no test run.
	bootsim.RunChildIfRequested()
	opts := testenv.Options{
		ClusterController:     true,
		MachineController:     true,
		MachinePoolController: true,
	}
	os.Exit(testenv.Run(m, opts, func(e *testenv.Environment) error {
		env = e
		return manager.SetupControllers(e.Context(), e.Manager, e.ClusterCache, manager.Options{
			WebhookPort:       0,
			Concurrency:       5,
			BootstrapTokenTTL: tokenTTL,
		})
	}))
}
