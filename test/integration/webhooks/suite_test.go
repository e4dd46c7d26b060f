package webhooks_test

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

var env *testenv.Environment

// TestMain runs one kube-apiserver + etcd for the package with the webhook configurations that
// `make manifests` generates (config/webhook/manifests.yaml), pointed by envtest at the
// Manager's webhook server. No controller runs: the tests look at admission only.
func TestMain(m *testing.M) {
	// A fuzz worker runs nothing but the fuzz target (which needs no API server), and the fuzzing
	// engine kills it within a second when it restarts workers: an envtest started there would
	// outlive it, and the engine would wait for it forever.
	flag.Parse()
	if f := flag.Lookup("test.fuzzworker"); f != nil && f.Value.String() == "true" {
		os.Exit(m.Run())
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		panic(err)
	}
	opts := testenv.Options{
		Webhooks: &envtest.WebhookInstallOptions{
			Paths: []string{filepath.Join(root, "config", "webhook", "manifests.yaml")},
		},
	}
	os.Exit(testenv.Run(m, opts, func(e *testenv.Environment) error {
		env = e
		return e.SetupCabpiWebhooks()
	}))
}
