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

// Package testenv is the shared test harness of cabpi: one real kube-apiserver + etcd (envtest) per
// test package, with the Cluster API CRDs, generic infrastructure CRDs and cabpi's own CRDs
// installed, a controller-runtime Manager (not started until the caller has registered its
// reconcilers), and optionally Cluster API's own controllers running in-process (ClusterCache,
// Machine, Cluster, MachineSet, MachineDeployment, MachinePool; with Options.InPlaceUpdates the
// Runtime SDK: the ExtensionConfig reconciler and the client of test/framework/runtimesdk).
//
// The envtest API server doubles as every Cluster's workload cluster: CreateWorkloadKubeconfigSecret
// writes a "<cluster>-kubeconfig" Secret pointing at it, so CAPI's ClusterCache connects to it and
// CAPI's Machine controller finds Nodes created in it (MarkMachineNodeJoined).
//
// The Manager is built from the cabpi manager's own options (setup.ManagerOptions: the same caches
// and client), and cabpi's reconciler is registered through internal/setup too (SetupCabpi, or
// NewCabpiManager for a manager of its own), so that a test cannot pass on wiring the binary does
// not use.
//
// A suite's TestMain hands Run what it needs; Run starts and stops everything around the tests:
//
//	var (
//		env *testenv.Environment
//		fx  = &fixtures.Kit{NamespacePrefix: "cabpi", Eventually: 30 * time.Second, Tick: 100 * time.Millisecond}
//	)
//
//	func TestMain(m *testing.M) {
//		os.Exit(testenv.Run(m, testenv.Suite{
//			Options:   testenv.Options{MachineController: true},
//			Keep:      []**testenv.Environment{&env, &fx.Env},
//			Cabpi:     &setup.Options{Concurrency: 5},
//			LeakCheck: true, // no secret material in the Manager's log or any event
//		}))
//	}
//
// Only packages under test/integration and test/release use this package in their tests: they
// are the tests that need an API server (docs/adr/021-test-layers.md).
//
// Binaries: KUBEBUILDER_ASSETS when set, else the directory printed by hack/envtest-assets.sh
// (which builds kube-apiserver and etcd once and caches them). `make test-unit` sets
// KUBEBUILDER_ASSETS to a directory without them, so that a unit test starting an Environment
// fails at once.
//
// Logs: silent by default. CABPI_TEST_LOG=<verbosity> (e.g. 2, 4) logs controllers (CAPI's and
// yours) and client-go to stderr; CABPI_TEST_LOG>=6 also attaches etcd/kube-apiserver output.
package testenv
