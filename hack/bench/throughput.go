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

package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/reconcilers/kubeadmconfig"
	cabpksetup "sigs.k8s.io/cluster-api/bootstrap/kubeadm/setup"
	"sigs.k8s.io/cluster-api/controllers/clustercache"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// contender is one bootstrap provider under test: its manager, started with its own defaults
// against the shared API server, and how to make one worker's bootstrap config.
type contender struct {
	name string
	// start runs the provider's manager, watching namespace ns only, until the returned stop is
	// called.
	start func(ctx context.Context, env *testenv.Environment, ns string) (stop func(), err error)
	// config returns a worker's bootstrap config and the reference a Machine makes to it.
	config func(ns, name string) (client.Object, clusterv1.ContractVersionedObjectReference)
}

var cabpi = contender{
	name: "cabpi",
	start: func(ctx context.Context, env *testenv.Environment, ns string) (func(), error) {
		opts := testenv.CabpiOptions()
		opts.Namespace = ns
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = opts.KubeAPIQPS, opts.KubeAPIBurst
		requests["cabpi"].wrap(cfg)
		mgr, err := testenv.NewCabpiManager(ctx, cfg, opts)
		if err != nil {
			return nil, err
		}
		return startManager(ctx, mgr)
	},
	config: func(ns, name string) (client.Object, clusterv1.ContractVersionedObjectReference) {
		return &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
			testenv.IgnitionConfigRef(name)
	},
}

// cabpk is Cluster API's kubeadm bootstrap provider with format: ignition, set up as its main.go
// does with its flags' defaults (kube-api-qps 100/200, clustercache-client-qps 20/30,
// kubeadmconfig-concurrency 100, clustercache-concurrency 100).
var cabpk = contender{
	name: "CABPK",
	start: func(ctx context.Context, env *testenv.Environment, ns string) (func(), error) {
		cfg := rest.CopyConfig(env.Config)
		cfg.QPS, cfg.Burst = 100, 200
		requests["CABPK"].wrap(cfg)
		mgrOpts := ctrl.Options{
			Scheme:                 env.Scheme,
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			// Informer names must be unique per process: one per CABPK manager of the run.
			Cache:  cabpksetup.ManagerCacheOptions(env.Scheme, fmt.Sprintf("kubeadmconfig-%d", cabpkRuns.Add(1)), ns, 10*time.Minute),
			Client: cabpksetup.ManagerClientOptions(),
		}
		skipNameValidation(&mgrOpts)
		mgr, err := ctrl.NewManager(cfg, mgrOpts)
		if err != nil {
			return nil, err
		}
		secretCachingClient, err := cabpksetup.CreateSecretCachingClient(mgr)
		if err != nil {
			return nil, err
		}
		cc, err := clustercache.SetupWithManager(ctx, mgr, clustercache.Options{
			SecretClient: secretCachingClient,
			Cache:        cabpksetup.ClusterCacheCacheOptions(),
			Client:       cabpksetup.ClusterCacheClientOptions("kubeadmconfig", 20, 30),
		}, controller.Options{MaxConcurrentReconciles: 100})
		if err != nil {
			return nil, err
		}
		if err := (&kubeadmconfig.Reconciler{
			Client:              mgr.GetClient(),
			SecretCachingClient: secretCachingClient,
			APIReader:           mgr.GetAPIReader(),
			ClusterCache:        cc,
			TokenTTL:            kubeadmconfig.DefaultTokenTTL,
		}).SetupWithManager(ctx, mgr, controller.Options{MaxConcurrentReconciles: 100}); err != nil {
			return nil, err
		}
		return startManager(ctx, mgr)
	},
	config: func(ns, name string) (client.Object, clusterv1.ContractVersionedObjectReference) {
		return &kubeadmv1.KubeadmConfig{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec:       kubeadmv1.KubeadmConfigSpec{Format: kubeadmv1.Ignition},
			}, clusterv1.ContractVersionedObjectReference{
				APIGroup: kubeadmv1.GroupVersion.Group, Kind: "KubeadmConfig", Name: name,
			}
	},
}

var cabpkRuns atomic.Int32

// skipNameValidation lets the bench run one manager after the other in one process.
func skipNameValidation(o *ctrl.Options) { o.Controller.SkipNameValidation = ptr.To(true) }

func startManager(ctx context.Context, mgr ctrl.Manager) (func(), error) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	synced := make(chan struct{})
	go func() { mgr.GetCache().WaitForCacheSync(ctx); close(synced) }()
	select {
	case <-synced:
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("manager stopped while starting: %w", err)
	}
	return func() { cancel(); <-done }, nil
}

// throughputResult is one contender at one N.
type throughputResult struct {
	contender string
	n         int
	elapsed   time.Duration
	// workerBytes is the size of one worker's bootstrap data (the value key of its data Secret).
	workerBytes int
	// requests are the contender's requests from the first create until every Machine had its
	// data.
	requests requestsSnapshot
}

// readyCluster makes a Cluster that workers can join at once: infrastructure provisioned,
// control plane initialized, CA and kubeconfig Secrets (the workload cluster is the same
// envtest API server, reached through the counting workloadProxy), as after a control plane
// came up.
func readyCluster(ctx context.Context, env *testenv.Environment, ns string) (*clusterv1.Cluster, error) {
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return nil, err
	}
	cluster, err := env.CreateJoinableCluster(ctx, ns, "bench")
	if err != nil {
		return nil, err
	}
	// Before any contender starts: its ClusterCache connects with this kubeconfig.
	kubeconfig, err := workload.kubeconfig(cluster.Name)
	if err != nil {
		return nil, err
	}
	s := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: secret.Name(cluster.Name, secret.Kubeconfig)}, s); err != nil {
		return nil, err
	}
	s.Data[secret.KubeconfigDataName] = kubeconfig
	return cluster, env.Client.Update(ctx, s)
}

// workload counts the contenders' requests to the workload cluster (started by run).
var workload *workloadProxy

// createWorkers creates n worker Machines of cluster (config, infrastructure machine, Machine)
// for contender c, 32 at a time.
func createWorkers(ctx context.Context, fast client.Client, c contender, cluster *clusterv1.Cluster, n int) error {
	return parallel(n, 32, func(i int) error {
		name := fmt.Sprintf("w-%04d", i)
		cfg, ref := c.config(cluster.Namespace, name)
		if err := fast.Create(ctx, cfg); err != nil {
			return err
		}
		if err := fast.Create(ctx, testenv.NewGenericInfraMachine(cluster.Namespace, name)); err != nil {
			return err
		}
		m := testenv.NewMachine(cluster, name, false)
		m.Spec.Bootstrap.ConfigRef = ref
		return fast.Create(ctx, m)
	})
}

// waitForMachines polls the Machine controller's own cache (it sees every Machine: counting
// there costs the API server nothing) until done holds for all n Machines of ns.
func waitForMachines(ctx context.Context, env *testenv.Environment, ns string, n int, what string, timeout time.Duration, done func(*clusterv1.Machine) bool) error {
	start := time.Now()
	deadline := start.Add(timeout)
	for {
		machines := &clusterv1.MachineList{}
		if err := env.Manager.GetCache().List(ctx, machines, client.InNamespace(ns)); err != nil {
			return err
		}
		count := 0
		for i := range machines.Items {
			if done(&machines.Items[i]) {
				count++
			}
		}
		if count == n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: only %d of %d Machines %s after %s", ns, count, n, what, time.Since(start).Round(time.Second))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func bootstrapDataCreated(m *clusterv1.Machine) bool {
	return ptr.Deref(m.Status.Initialization.BootstrapDataSecretCreated, false)
}

// runThroughput creates n worker Machines (config, infrastructure machine, Machine) at once
// against a running contender and times until every Machine has
// status.initialization.bootstrapDataSecretCreated, as Cluster API's Machine controller sets it.
//
// Each run has a namespace of its own, and the contender's manager watches that namespace only
// (--namespace; CABPK's watch namespace): the earlier runs' configs, whose nodes never join,
// are a leftover of the harness, not a part of a user's N Machines, and a manager that saw them
// would spend its workload-cluster budget checking their join tokens.
func runThroughput(ctx context.Context, env *testenv.Environment, fast client.Client, c contender, n int) (throughputResult, error) {
	res := throughputResult{contender: c.name, n: n}
	cluster, stop, err := startInNamespace(ctx, env, c, fmt.Sprintf("bench-%s-%d", c.namespacePrefix(), n))
	if err != nil {
		return res, err
	}
	defer stop()
	ns := cluster.Namespace

	start := time.Now()
	if err := createWorkers(ctx, fast, c, cluster, n); err != nil {
		return res, fmt.Errorf("creating Machines: %w", err)
	}
	created := time.Since(start)
	if err := waitForMachines(ctx, env, ns, n, "have bootstrap data", 20*time.Minute, bootstrapDataCreated); err != nil {
		return res, fmt.Errorf("%s: %w", c.name, err)
	}
	res.elapsed = time.Since(start)
	res.requests = requests[c.name].snapshot()
	logf("%s N=%d: %.1fs (creating the objects took %.1fs); per config: %.2f management, %.2f workload requests", c.name, n,
		res.elapsed.Seconds(), created.Seconds(), float64(total(res.requests.management))/float64(n), float64(total(res.requests.workload))/float64(n))
	if verbose {
		logf("%s management-cluster requests until then:\n%s", c.name, perConfig(res.requests.management, n))
		logf("%s workload-cluster requests until then:\n%s", c.name, perConfig(res.requests.workload, n))
	}

	data := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-0000"}, data); err != nil {
		return res, fmt.Errorf("reading a data Secret: %w", err)
	}
	res.workerBytes = len(data.Data["value"])
	return res, nil
}

// waitConnected waits until c's ClusterCache has connected to the workload cluster (the proxy saw
// its first request), then starts c's counts afresh. A manager's start (its caches' LISTs, the
// ClusterCache's connection) is not a config's; and configs created before the connection would
// each be reconciled twice, once to say the workload cluster is not reachable yet, which a
// manager that has been running does not do.
func waitConnected(c contender) error {
	deadline := time.Now().Add(time.Minute)
	for total(requests[c.name].workload.snapshot()) == 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not connect to the workload cluster within a minute", c.name)
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second) // its discovery done
	requests[c.name].reset()
	return nil
}

// lifecycleMachines is how many worker Machines runLifecycle follows.
const lifecycleMachines = 20

// quietFor is how long a manager must send nothing for runLifecycle to call it quiet.
const quietFor = 10 * time.Second

// machineRequests leaves out of s what is not a Machine's: the ClusterCache's health probe of
// each workload cluster (GET /, every 10 s) and its discovery when it connects, costs per
// Cluster; the informers' WATCHes, one per informer of the manager.
func machineRequests(s requestsSnapshot) requestsSnapshot {
	drop := func(counts map[string]int) map[string]int {
		for k := range counts {
			verb, resource, _ := strings.Cut(k, " ")
			if verb == "WATCH" || resource == "discovery" || strings.HasPrefix(resource, "/") {
				delete(counts, k)
			}
		}
		return counts
	}
	return requestsSnapshot{management: drop(s.management), workload: drop(s.workload)}
}

// lifecycleResult is what one worker Machine costs a contender, from its config's creation to
// its node joined and the manager quiet: requests divided by the Machines followed.
type lifecycleResult struct {
	contender string
	machines  int
	requests  requestsSnapshot
}

// runLifecycle follows lifecycleMachines worker Machines of a fresh Cluster along the happy
// path, counting the contender's requests to both clusters: configs created, data Secrets
// stored (the Machines' bootstrapDataSecretCreated), then each node joined as an
// infrastructure provider and a kubelet would have it (testenv.MarkMachineNodeJoined: the
// infrastructure machine provisioned with a providerID, a Ready Node), until every Machine has
// its nodeRef and the manager has sent nothing for quietFor.
func runLifecycle(ctx context.Context, env *testenv.Environment, fast client.Client, c contender) (lifecycleResult, error) {
	res := lifecycleResult{contender: c.name, machines: lifecycleMachines}
	cluster, stop, err := startInNamespace(ctx, env, c, "bench-requests-"+c.namespacePrefix())
	if err != nil {
		return res, err
	}
	defer stop()
	ns := cluster.Namespace
	counts := requests[c.name]

	if err := createWorkers(ctx, fast, c, cluster, res.machines); err != nil {
		return res, fmt.Errorf("creating Machines: %w", err)
	}
	if err := waitForMachines(ctx, env, ns, res.machines, "have bootstrap data", 5*time.Minute, bootstrapDataCreated); err != nil {
		return res, fmt.Errorf("%s: %w", c.name, err)
	}
	if err := parallel(res.machines, 4, func(i int) error {
		m := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("w-%04d", i)}}
		_, err := env.MarkMachineNodeJoined(ctx, m)
		return err
	}); err != nil {
		return res, fmt.Errorf("joining the nodes: %w", err)
	}
	if err := waitForMachines(ctx, env, ns, res.machines, "have a nodeRef", 5*time.Minute, func(m *clusterv1.Machine) bool {
		return m.Status.NodeRef.IsDefined()
	}); err != nil {
		return res, fmt.Errorf("%s: %w", c.name, err)
	}
	last, since, giveUp := machineRequests(counts.snapshot()), time.Now(), time.Now().Add(2*time.Minute)
	for time.Since(since) < quietFor && time.Now().Before(giveUp) {
		time.Sleep(time.Second)
		now := machineRequests(counts.snapshot())
		if total(now.management)+total(now.workload) != total(last.management)+total(last.workload) {
			last, since = now, time.Now()
		}
	}
	if time.Since(since) < quietFor {
		logf("%s was not quiet for %s within 2 minutes of the last nodeRef: counted until then", c.name, quietFor)
	}
	res.requests = last
	logf("%s, one worker Machine's requests (%d followed, until quiet for %s):\n management:\n%s workload:\n%s", c.name, res.machines, quietFor,
		perConfig(res.requests.management, res.machines), perConfig(res.requests.workload, res.machines))
	return res, nil
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, fn func(i int) error) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs error
	)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if errs == nil {
						errs = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errs
}

// writeRate measures how many object creations per second the API server takes from an
// unthrottled client with 32 writers: the ceiling of both contenders.
func writeRate(ctx context.Context, env *testenv.Environment, fast client.Client) (float64, error) {
	const n = 2000
	ns := "bench-write-rate"
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return 0, err
	}
	start := time.Now()
	err := parallel(n, 32, func(i int) error {
		return fast.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%05d", i)},
			Data:       map[string]string{"k": "v"},
		})
	})
	return n / time.Since(start).Seconds(), err
}

// initBytes renders kubeadm init for the first control-plane Machine of a Cluster whose four
// certificate key pairs exist (CA, etcd CA, front-proxy CA, service-account key) and returns the
// size of its bootstrap data.
func initBytes(ctx context.Context, env *testenv.Environment, fast client.Client, c contender) (int, error) {
	ns := "bench-init-" + map[string]string{"cabpi": "cabpi", "CABPK": "cabpk"}[c.name]
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return 0, err
	}
	cluster, err := env.CreateCluster(ctx, ns, "bench")
	if err != nil {
		return 0, err
	}
	if _, err := env.CreateWorkloadKubeconfigSecret(ctx, cluster); err != nil {
		return 0, err
	}
	if _, err := env.CreateClusterCertificates(ctx, cluster); err != nil {
		return 0, err
	}
	if err := env.MarkInfrastructureProvisioned(ctx, cluster); err != nil {
		return 0, err
	}
	stop, err := c.start(ctx, env, ns)
	if err != nil {
		return 0, err
	}
	defer stop()
	cfg, ref := c.config(ns, "cp-0")
	if err := fast.Create(ctx, cfg); err != nil {
		return 0, err
	}
	if err := fast.Create(ctx, testenv.NewGenericInfraMachine(ns, "cp-0")); err != nil {
		return 0, err
	}
	m := testenv.NewMachine(cluster, "cp-0", true)
	m.Spec.Bootstrap.ConfigRef = ref
	if err := fast.Create(ctx, m); err != nil {
		return 0, err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		data := &corev1.Secret{}
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cp-0"}, data)
		if err == nil && len(data.Data["value"]) > 0 {
			return len(data.Data["value"]), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%s rendered no init data in 2 minutes (last error: %v)", c.name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startInNamespace creates namespace ns with a ready Cluster, starts the contender's manager
// watching that namespace only, and waits until it is connected to the workload cluster.
func startInNamespace(ctx context.Context, env *testenv.Environment, c contender, ns string) (*clusterv1.Cluster, func(), error) {
	cluster, err := readyCluster(ctx, env, ns)
	if err != nil {
		return nil, nil, fmt.Errorf("creating the Cluster: %w", err)
	}
	stop, err := c.start(ctx, env, ns)
	if err != nil {
		return nil, nil, fmt.Errorf("starting %s: %w", c.name, err)
	}
	if err := waitConnected(c); err != nil {
		stop()
		return nil, nil, err
	}
	return cluster, stop, nil
}

// namespacePrefix is the contender's name as a namespace takes it.
func (c contender) namespacePrefix() string { return strings.ToLower(c.name) }
