// Package webhooks_test sends IgnitionConfigs and IgnitionConfigTemplates through a real
// kube-apiserver with cabpi's admission webhooks (package webhooks) installed: the CRD schema
// and the webhooks together decide what is admitted. The webhooks' unit tests stay in package
// webhooks.
package webhooks_test

import (
	"os"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

var env *testenv.Environment

// TestMain runs one kube-apiserver + etcd for the package with the webhook configurations that
// `make manifests` generates (config/webhook/manifests.yaml), pointed by envtest at the
// Manager's webhook server. No controller runs: the tests look at admission only.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			Webhooks: true,
		},
		Keep:          []**testenv.Environment{&env},
		CabpiWebhooks: true,
	}))
}
