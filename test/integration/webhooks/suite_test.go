/*
Copyright The cabpi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
