package webhooks_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/testenv"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/webhooks"
)

var env *testenv.Environment

// TestMain runs one kube-apiserver + etcd for the package with the webhook configurations that
// `make manifests` generates (config/webhook/manifests.yaml), pointed by envtest at the
// Manager's webhook server. No controller runs: the tests look at admission only.
func TestMain(m *testing.M) {
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
		if err := webhooks.SetupIgnitionConfigWebhookWithManager(e.Manager); err != nil {
			return err
		}
		return webhooks.SetupIgnitionConfigTemplateWebhookWithManager(e.Manager)
	}))
}
