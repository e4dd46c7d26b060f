package controllers_test

import (
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"k8s.io/klog/v2/textlogger"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// tokenTTL is short so refresh and rotation are observable within a test: the controller looks
// at tokens every TTL/3 and extends them once less than 5/6 of the TTL is left.
const tokenTTL = 9 * time.Second

var env *testenv.Environment

// TestMain runs one real kube-apiserver + etcd for the package, with Cluster API's own Machine,
// MachineSet, MachineDeployment and MachinePool controllers and ClusterCache next to ours; the
// API server doubles as every test cluster's workload cluster.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// logs holds every manager log line of the suite, for the leak check.
var logs = &logCapture{}

func run(m *testing.M) int {
	// The suite's configs reading unlabelled references are looked at again within seconds,
	// not a minute (internals_test.go).
	if referenceRecheck == 0 {
		fmt.Fprintln(os.Stderr, "controllers.referenceRecheck is not linked (renamed?): see internals_test.go")
		return 1
	}
	referenceRecheck = 2 * time.Second
	var out io.Writer = logs
	if os.Getenv("CABPI_TEST_LOG") != "" {
		out = io.MultiWriter(logs, os.Stderr)
	}
	// Verbosity 5 is everything the manager itself logs (debug included); from 8 on, client-go
	// dumps request and response bodies, which is Kubernetes' own behaviour, not the manager's.
	logger := textlogger.NewLogger(textlogger.NewConfig(textlogger.Verbosity(5), textlogger.Output(out)))
	e := testenv.New(testenv.Options{
		ClusterController:     true,
		MachineController:     true,
		MachinePoolController: true,
		Logger:                &logger,
	})
	env = e
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}()
	err := e.SetupCabpi(setup.Options{Concurrency: 5, BootstrapTokenTTL: tokenTTL})
	if err == nil {
		err = e.StartManager(e.Context())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	code := m.Run()
	if code != 0 || flag.Lookup("test.run").Value.String() != "" {
		return code // a partial run made too few secrets to look for
	}
	// Nothing the suite created may show up in a log line or an event.
	leaks, err := findLeaks(e.Context(), e.Client, logs.String())
	if err != nil {
		fmt.Fprintln(os.Stderr, "leak check:", err)
		return 1
	}
	for _, l := range leaks {
		fmt.Fprintln(os.Stderr, "--- FAIL: secret material leaked:", l)
	}
	if len(leaks) > 0 {
		return 1
	}
	fmt.Printf("leak check: no secret material in %d bytes of manager logs nor in any event\n", len(logs.String()))
	return 0
}
