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
