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

// Package catalogue_test is the bad-input catalogue (suite item 1 of issue 11): one table of bad
// IgnitionConfigs, each sent through a real API server with cabpi's admission webhooks installed
// and cabpi's controller running next to Cluster API's Machine controller, each with the outcome
// a user sees (an admission error on the field at fault, or a condition on the config) and with
// what must never follow bad input: a panic, a data Secret, a join token.
package catalogue_test

import (
	"os"
	"testing"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// tokenTTL is the join tokens' lifetime: long enough that the final good config's token neither
// expires nor rotates while the test looks at it.
const tokenTTL = 10 * time.Minute

var (
	env *testenv.Environment
	fx  = &fixtures.Kit{NamespacePrefix: "catalogue", Eventually: eventually, Tick: tick}
)

// TestMain runs one kube-apiserver + etcd for the package with the webhook configurations of
// config/webhook/manifests.yaml pointed at the manager's webhook server, cabpi's controller and
// webhooks registered the way the real manager registers them (setup.SetupControllers with a
// webhook port), and Cluster API's Machine controller with its ClusterCache. The API server
// doubles as every test cluster's workload cluster: join tokens land in its kube-system.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			MachineController: true,
			Webhooks:          true,
		},
		Keep:  []**testenv.Environment{&env, &fx.Env},
		Cabpi: &setup.Options{Concurrency: 5, BootstrapTokenTTL: tokenTTL},
	}))
}
