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

// Package controllers_test runs cabpi's IgnitionConfig controller (package controllers) against a
// real kube-apiserver and etcd, next to Cluster API's own Cluster, Machine and MachinePool
// controllers and their ClusterCache; the API server doubles as every test cluster's workload
// cluster. The controller's unit tests stay in package controllers.
package controllers_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// tokenTTL is short so refresh and rotation are observable within a test: the controller looks
// at tokens every TTL/3 and extends them once less than 5/6 of the TTL is left.
const tokenTTL = 9 * time.Second

var (
	env *testenv.Environment
	fx  = &fixtures.Kit{NamespacePrefix: "cabpi", Eventually: eventually, Tick: tick}
)

// TestMain runs the suite's Environment, cabpi's controller registered the way the binary
// registers it, and, after the tests, the leak check: nothing the suite created may show up in
// a log line or an event.
func TestMain(m *testing.M) {
	// CAPA's machines, whose spec.ignition says where the data is stored (delivery_test.go).
	capa, err := testenv.Infrastructure("aws")
	var capaCRDs []string
	if err == nil {
		capaCRDs, err = capa.CRDFiles("awsmachines", "awsmachinepools")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			ClusterController:     true,
			MachineController:     true,
			MachinePoolController: true,
			AdditionalCRDPaths:    capaCRDs,
		},
		Keep: []**testenv.Environment{&env, &fx.Env},
		Cabpi: &setup.Options{
			Concurrency:       5,
			BootstrapTokenTTL: tokenTTL,
			// Configs reading unlabelled references are looked at again within seconds, not a minute.
			ReferenceRecheckInterval: 2 * time.Second,
		},
		LeakCheck: true,
	}))
}
