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

// Package crash_test proves the controller crash-consistent: the real manager binary is killed
// with SIGKILL at seeded random moments while 50 configs (a control plane of 3, workers, a
// MachinePool) reconcile, and started again, over and over; the end state is what an
// uninterrupted run gives.
//
// CABPI_CRASH_KILLS sets the number of kills (20 by default, what `make test` runs; `make
// test-reliability` runs 200); CABPI_CRASH_SEED replays a run (its seed is logged).
package crash_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

var (
	env *testenv.Environment
	fx  = &fixtures.Kit{NamespacePrefix: "crash"} // waits here are the tests' own
	// managerBinary is the cabpi binary built from this checkout.
	managerBinary string
)

// TestMain runs the API server with Cluster API's Cluster, Machine and MachinePool controllers
// in-process; cabpi runs as its own process, which the test kills.
func TestMain(m *testing.M) {
	// The manager binary is built into a directory of the run's, removed when the run ends.
	dir, err := os.MkdirTemp("", "cabpi-crash-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := testenv.Run(m, testenv.Suite{
		Options: testenv.Options{ClusterController: true, MachineController: true, MachinePoolController: true},
		Keep:    []**testenv.Environment{&env, &fx.Env},
		Setup: func(e *testenv.Environment) error {
			managerBinary = filepath.Join(dir, "cabpi")
			build := exec.Command("go", "build", "-o", managerBinary, ".")
			build.Dir, build.Stdout, build.Stderr = e.RepoRoot, os.Stderr, os.Stderr
			if err := build.Run(); err != nil {
				return fmt.Errorf("building the manager: %w", err)
			}
			return nil
		},
	})
	if err := os.RemoveAll(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

const (
	controlPlanes = 3
	workers       = 46
)

func TestCrashConsistency(t *testing.T) {
	ctx := t.Context()
	kills := 20
	if v := os.Getenv("CABPI_CRASH_KILLS"); v != "" {
		var err error
		kills, err = strconv.Atoi(v)
		require.NoError(t, err, "CABPI_CRASH_KILLS")
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CABPI_CRASH_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "CABPI_CRASH_SEED")
	}
	t.Logf("%d kills, CABPI_CRASH_SEED=%d", kills, seed)
	rnd := rand.New(rand.NewPCG(seed, 0))

	f := fx.NewCluster(t, fixtures.BeforeInit())
	ns, cluster := f.Namespace, f.Cluster

	// The configs arrive in batches while the managers are killed, so that kills land while
	// there is work in flight, not only on an idle manager.
	var names []string
	var pending []func()
	addMachine := func(name string, controlPlane bool) {
		names = append(names, name)
		pending = append(pending, func() { f.AddMachine(t, name, controlPlane, cabpiv1.IgnitionConfigSpec{}) })
	}
	for i := range controlPlanes {
		addMachine(fmt.Sprintf("cp-%d", i), true)
	}
	for i := range workers {
		addMachine(fmt.Sprintf("w-%d", i), false)
	}
	names = append(names, "pool")
	pending = append(pending, func() { f.AddMachinePool(t, "pool", cabpiv1.IgnitionConfigSpec{}) })
	batch := max(len(pending)/max(kills, 1), 1) + 1
	createBatch := func(n int) {
		for ; n > 0 && len(pending) > 0; n-- {
			pending[0]()
			pending = pending[1:]
		}
	}

	// The nodes: the control-plane Machine that gets kubeadm init "boots" and joins; that
	// initializes the control plane, and everything else can render its join.
	nodes := startNodeSimulator(t, ns, cluster)

	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data, err := env.Kubeconfig("envtest")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(kubeconfig, data, 0o600))
	logDir := t.TempDir()
	for i := range kills {
		m := startManager(t, kubeconfig, filepath.Join(logDir, fmt.Sprintf("run-%03d.log", i)))
		createBatch(batch)
		// The kill moment is counted from when the manager works, not from when it was started:
		// however long a loaded machine takes to start it, it is killed at work.
		m.waitUntilWorking(t)
		if i == kills-1 {
			// And at least one of the killed managers rendered something: should none of the
			// others have, the last one is killed only once it did.
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				assert.Positive(c, configsWithData(c, ns), "the manager renders nothing (log in %s)", m.log)
			}, 3*time.Minute, 100*time.Millisecond)
		}
		time.Sleep(time.Duration(50+rnd.IntN(1500)) * time.Millisecond)
		m.kill(t)
	}
	createBatch(len(pending))
	// The kills interrupted a manager at work, not only managers starting up.
	done := configsWithData(t, ns)
	t.Logf("%d of %d configs had data when the kills ended", done, len(names))
	if kills > 0 {
		require.Positive(t, done, "the killed managers rendered nothing: kill later")
	}
	require.Empty(t, pending)
	last := startManager(t, kubeconfig, filepath.Join(logDir, "final.log"))
	defer last.kill(t)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, name := range names {
			cfg := &cabpiv1.IgnitionConfig{}
			if !assert.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cfg)) {
				return
			}
			assert.True(c, conditions.IsTrue(cfg, cabpiv1.ReadyCondition), "%s is not ready: %v", name, cfg.Status.Conditions)
		}
	}, 3*time.Minute, 500*time.Millisecond, "every config converges after %d kills (logs in %s)", kills, logDir)
	nodes.stop()

	// Every config: exactly one data Secret, controlled by it, valid Ignition.
	inits := 0
	for _, name := range names {
		cfg := &cabpiv1.IgnitionConfig{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cfg))
		assert.Equal(t, name, cfg.Status.DataSecretName)
		s := &corev1.Secret{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s))
		ctl := metav1.GetControllerOf(s)
		if assert.NotNil(t, ctl, name) {
			assert.Equal(t, cfg.UID, ctl.UID, "%s is controlled by its config", name)
		}
		assert.Equal(t, clusterv1.ClusterSecretType, s.Type)
		assert.Equal(t, "ignition", string(s.Data["format"]))
		_, rpt, err := ignconfig.Parse(s.Data["value"])
		assert.NoError(t, err, "%s: %s", name, rpt.String())
		if strings.Contains(kubeadmConfigOf(s.Data["value"]), "kind: InitConfiguration") {
			inits++
		}
	}
	assert.Equal(t, 1, inits, "exactly one kubeadm init in the cluster")
	assert.LessOrEqual(t, nodes.initsSeen(), 1, "no second init was ever rendered, even for a moment")

	// At most one join token per config whose node has not joined (none of the workers has).
	tokens, err := fixtures.JoinTokens(ctx, env.Client)
	require.NoError(t, err)
	perConfig := map[string]int{}
	for config, list := range tokens {
		if name, ok := strings.CutPrefix(config, ns+"/"); ok {
			perConfig[name] = len(list)
		}
	}
	for name, n := range perConfig {
		assert.LessOrEqual(t, n, 1, "join tokens of %s", name)
	}
	assert.Len(t, perConfig, workers+controlPlanes-1+1, "every join (workers, control-plane joins, the pool) has its token")
}

// configsWithData counts the configs in ns whose status says their data Secret was created.
func configsWithData(t require.TestingT, ns string) int {
	list := &cabpiv1.IgnitionConfigList{}
	require.NoError(t, env.Client.List(context.Background(), list, client.InNamespace(ns)))
	n := 0
	for _, cfg := range list.Items {
		if ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false) {
			n++
		}
	}
	return n
}

// manager is one run of the cabpi binary.
type manager struct {
	cmd  *exec.Cmd
	log  string // where its output goes
	done chan struct{}
}

func startManager(t *testing.T, kubeconfig, logFile string) *manager {
	t.Helper()
	out, err := os.Create(logFile)
	require.NoError(t, err)
	cmd := exec.Command(managerBinary, "--kubeconfig="+kubeconfig, "--webhook-port=0",
		"--diagnostics-address=0", "--health-probe-bind-address=0", "--concurrency=10")
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	m := &manager{cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); _ = out.Close(); close(m.done) }()
	return m
}

// workersStarted is what controller-runtime logs (JSON, the manager's default) once a
// controller's caches have synced and its workers start taking reconciles; the IgnitionConfig
// controller is named ignitionconfig.
var workersStarted = regexp.MustCompile(`"msg":"Starting workers".*"controller":"ignitionconfig"`)

// waitUntilWorking waits until the manager's IgnitionConfig controller reconciles, as its log
// says (workersStarted).
func (m *manager) waitUntilWorking(t *testing.T) {
	t.Helper()
	const timeout = 3 * time.Minute
	for deadline := time.Now().Add(timeout); ; {
		out, err := os.ReadFile(m.log)
		require.NoError(t, err)
		if workersStarted.Match(out) {
			return
		}
		select {
		case <-m.done:
			// The test's temporary directory goes with the test, and CI keeps nothing: the end
			// of the log says why.
			out, _ = os.ReadFile(m.log)
			require.Fail(t, "the manager exited before its IgnitionConfig controller started", "its log ends:\n%s", out[max(len(out)-4096, 0):])
		case <-time.After(20 * time.Millisecond):
		}
		require.True(t, time.Now().Before(deadline), "the manager's IgnitionConfig controller did not start its workers within %s (log in %s)", timeout, m.log)
	}
}

// kill sends SIGKILL: the process gets no chance to finish anything it started.
func (m *manager) kill(t *testing.T) {
	t.Helper()
	_ = m.cmd.Process.Kill()
	<-m.done
}

// nodeSimulator plays the nodes: the control-plane Machine whose data holds kubeadm init joins,
// and the control plane is then initialized. It also counts every config whose data ever held
// kubeadm init.
type nodeSimulator struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	inits  map[string]bool
}

func startNodeSimulator(t *testing.T, ns string, cluster *clusterv1.Cluster) *nodeSimulator {
	ctx, cancel := context.WithCancel(t.Context())
	sim := &nodeSimulator{cancel: cancel, inits: map[string]bool{}}
	sim.wg.Add(1)
	go func() {
		defer sim.wg.Done()
		initialized := false
		for ctx.Err() == nil {
			for i := range controlPlanes {
				name := fmt.Sprintf("cp-%d", i)
				s := &corev1.Secret{}
				if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s) != nil {
					continue
				}
				if !strings.Contains(kubeadmConfigOf(s.Data["value"]), "kind: InitConfiguration") {
					continue
				}
				sim.mu.Lock()
				sim.inits[name] = true
				sim.mu.Unlock()
				if initialized {
					continue
				}
				m := &clusterv1.Machine{}
				if env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m) != nil {
					continue
				}
				if _, err := env.MarkMachineNodeJoined(ctx, m); err == nil && env.MarkControlPlaneInitialized(ctx, cluster) == nil {
					initialized = true
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return sim
}

func (s *nodeSimulator) stop() { s.cancel(); s.wg.Wait() }

func (s *nodeSimulator) initsSeen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.inits)
}

// kubeadmConfigOf returns /etc/kubeadm.yml of rendered data, gzipped or wrapped as it may be
// ("" when it has none).
func kubeadmConfigOf(data []byte) string {
	files, err := ignition.ReadFiles(data)
	if err != nil {
		return ""
	}
	return string(files[ignition.KubeadmConfigPath])
}
