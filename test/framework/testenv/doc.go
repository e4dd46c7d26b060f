// Package testenv is the shared test harness of cabpi: one real kube-apiserver + etcd (envtest) per
// test package, with the Cluster API CRDs, generic infrastructure CRDs and cabpi's own CRDs
// installed, a controller-runtime Manager (not started until the caller has registered its
// reconcilers), and optionally Cluster API's own controllers running in-process (ClusterCache,
// Machine, Cluster, MachineSet, MachineDeployment, MachinePool).
//
// The envtest API server doubles as every Cluster's workload cluster: CreateWorkloadKubeconfigSecret
// writes a "<cluster>-kubeconfig" Secret pointing at it, so CAPI's ClusterCache connects to it and
// CAPI's Machine controller finds Nodes created in it (MarkMachineNodeJoined).
//
// Typical TestMain:
//
//	var env *testenv.Environment
//
//	func TestMain(m *testing.M) {
//		os.Exit(testenv.Run(m, testenv.Options{MachineController: true}, func(e *testenv.Environment) error {
//			env = e
//			return (&controllers.IgnitionConfigReconciler{...}).SetupWithManager(e.Context(), e.Manager)
//		}))
//	}
//
// or, spelled out:
//
//	env = testenv.New(testenv.Options{MachineController: true})
//	// register reconcilers with env.Manager
//	if err := env.StartManager(ctx); err != nil { ... }
//	code := m.Run()
//	env.Stop()
//	os.Exit(code)
//
// Binaries: KUBEBUILDER_ASSETS when set, else the directory printed by hack/envtest-assets.sh
// (which builds kube-apiserver and etcd once and caches them).
//
// Logs: silent by default. CABPI_TEST_LOG=<verbosity> (e.g. 2, 4) logs controllers (CAPI's and
// yours) and client-go to stderr; CABPI_TEST_LOG>=6 also attaches etcd/kube-apiserver output.
package testenv
