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

package e2e_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/provider"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nspawn"
)

// cutPoint is a moment of a node's bootstrap at which the suite cuts its power (SIGKILL of the
// machine's init, the machine frozen first so that nothing moves on between seeing the moment
// and the cut).
type cutPoint int

const (
	// cutInPreflight: kubeadm init or join runs and has written nothing yet.
	cutInPreflight cutPoint = iota + 1
	// cutInTLSBootstrap: the kubelet kubeadm started runs on bootstrap-kubelet.conf and has no
	// kubelet.conf yet.
	cutInTLSBootstrap
	// cutAfterKubeletConf: kubelet.conf exists and kubeadm has not exited (for a control plane,
	// its etcd member has data: kubeadm added it).
	cutAfterKubeletConf
	// cutAfterKubeadmSucceeded: kubeadm exited 0 and the script has written neither its mark of
	// success nor the sentinel.
	cutAfterKubeadmSucceeded
)

func (p cutPoint) String() string {
	return [...]string{"", "in preflight", "in the TLS bootstrap", "after kubelet.conf", "after kubeadm exited 0"}[p]
}

// Paths on a node that tell how far its bootstrap is.
const (
	bootstrapKubeletConf = "/etc/kubernetes/bootstrap-kubelet.conf"
	kubeletConfigFile    = "/var/lib/kubelet/config.yaml"
	apiServerCert        = "/etc/kubernetes/pki/apiserver.crt"
	etcdMemberDir        = "/var/lib/etcd/member"
	clientCert           = "/var/lib/kubelet/pki/kubelet-client-current.pem"
	agentRecord          = "/var/lib/cabpi-e2e/agent-rebooted"
)

// cutAt waits on the node's running boot until p, stops the node there and cuts its power.
// afterCut says the boot follows a cut: its bootstrap said what it found of the interrupted
// attempt.
//
// What the boot journaled is on the node's disk before the cut: the start of kubeadm.service and,
// after a cut, the bootstrap's decision (assertFinishedAfterCuts counts them over every boot). A
// power cut loses what journald has not read from its sockets yet, as on a real machine, and on
// a loaded host journald can be seconds behind; so kubeadm (or the script) is held with SIGSTOP at
// the point, and the cut waits until journald has those lines.
func cutAt(t *testing.T, inst *provider.Instance, controlPlane bool, p cutPoint, afterCut bool) {
	t.Helper()
	// Lstat: a link on the node (kubelet-client-current.pem) names a node path, not the host's.
	has := func(name string) bool {
		_, err := os.Lstat(filepath.Join(inst.Root(), name))
		return err == nil
	}
	nonEmpty := func(name string) bool {
		st, err := os.Stat(filepath.Join(inst.Root(), name))
		return err == nil && st.Size() > 0
	}
	kubeadm := func() *nspawn.Process {
		procs, err := inst.UnitProcesses(ignition.KubeadmUnitName)
		require.NoError(t, err)
		for _, p := range procs {
			if p.Command == "kubeadm" && len(p.Args) > 1 && (p.Args[1] == "join" || p.Args[1] == "init") {
				return &p
			}
		}
		return nil
	}
	kubelets := func() []nspawn.Process {
		procs, err := inst.UnitProcesses("kubelet.service")
		require.NoError(t, err)
		return slices.DeleteFunc(procs, func(p nspawn.Process) bool { return p.Command != "kubelet" })
	}
	deadline := time.Now().Add(joinWithin)
	until := func(what string, reached func() bool) {
		t.Helper()
		for !reached() {
			if !inst.Running() {
				logKubeadm(t, inst)
				require.FailNow(t, "stopped", "%s stopped before %s", inst.Name, what)
			}
			if time.Now().After(deadline) {
				logKubeadm(t, inst)
				require.FailNow(t, "not reached", "%s: %s not within %s", inst.Name, what, joinWithin)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	// The kubelet kubeadm configured and started runs its TLS bootstrap.
	tlsBootstrap := func() bool {
		return has(bootstrapKubeletConf) && has(kubeletConfigFile) && !has(kubeletConfig) && len(kubelets()) > 0
	}
	stop := func(pid int) { require.NoError(t, syscall.Kill(pid, syscall.SIGSTOP)) }

	switch p {
	case cutInPreflight:
		var k *nspawn.Process
		until("kubeadm runs", func() bool { k = kubeadm(); return k != nil })
		stop(k.PID)
		waitJournaled(t, inst, afterCut)
		require.NoError(t, inst.Freeze())
		for _, f := range []string{bootstrapKubeletConf, kubeletConfigFile, apiServerCert, kubeletConfig} {
			require.False(t, has(f), "cut %s: kubeadm has written nothing yet, yet %s is there", p, f)
		}
	case cutInTLSBootstrap:
		until("the TLS bootstrap of the kubelet", tlsBootstrap)
		for _, k := range kubelets() {
			stop(k.PID)
		}
		require.False(t, has(kubeletConfig), "cut %s: the kubelet has no kubelet.conf yet", p)
		waitJournaled(t, inst, afterCut)
		require.NoError(t, inst.Freeze())
	case cutAfterKubeletConf:
		// kubelet.conf written whole (the kubelet creates it, then writes it) and the client
		// certificate it names: the TLS bootstrap is over.
		bootstrapped := func() bool { return nonEmpty(kubeletConfig) && has(clientCert) }
		var k *nspawn.Process
		if controlPlane {
			// A control plane's kubelet bootstraps through its own API server, which needs the
			// etcd member that kubeadm promotes: kubeadm runs on, and the cut comes in the
			// seconds it then spends marking the node and waiting for the control plane.
			until("kubelet.conf with kubeadm running and an etcd member of the node's", func() bool {
				k = kubeadm()
				return k != nil && has(etcdMemberDir) && bootstrapped()
			})
			// Its kubelet has bootstrapped: kubeadm is held there.
			stop(k.PID)
		} else {
			// A worker's kubelet bootstraps through the cluster's endpoint: kubeadm is stopped
			// while the kubelet finishes its TLS bootstrap on its own.
			until("kubeadm in the TLS bootstrap", func() bool { return tlsBootstrap() && kubeadm() != nil })
			k = kubeadm()
			require.NotNil(t, k, "kubeadm runs")
			stop(k.PID)
			until("kubelet.conf", bootstrapped)
		}
		waitJournaled(t, inst, afterCut)
		require.NoError(t, inst.Freeze())
		st, err := nspawn.ReadProcessState(k.PID)
		require.NoError(t, err, "cut %s: kubeadm has not exited", p)
		_, exited := st.Exited()
		require.False(t, exited, "cut %s: kubeadm has not exited", p)
	case cutAfterKubeadmSucceeded:
		// The script is stopped, kubeadm runs on to its end: its exit status waits, unread.
		until("kubeadm runs", func() bool { return kubeadm() != nil })
		k := kubeadm()
		require.NotNil(t, k)
		stop(k.PPID)
		until("kubeadm exits", func() bool {
			st, err := nspawn.ReadProcessState(k.PID)
			require.NoError(t, err, "kubeadm is not reaped while the script is stopped")
			_, exited := st.Exited()
			return exited
		})
		st, err := nspawn.ReadProcessState(k.PID)
		require.NoError(t, err)
		code, _ := st.Exited()
		if code != 0 {
			logKubeadm(t, inst)
		}
		require.Equal(t, 0, code, "cut %s: kubeadm exited %d", p, code)
		waitJournaled(t, inst, afterCut)
		require.NoError(t, inst.Freeze())
		sentinel, err := inst.NodePath(ignition.SentinelPath)
		require.NoError(t, err)
		assert.NoFileExists(t, sentinel, "cut %s: no sentinel yet", p)
	}
	require.NoError(t, inst.Kill(), "cutting the power of %s %s", inst.Name, p)
	t.Logf("%s: power cut %s", inst.Name, p)
}

// waitJournaled waits until journald on the node has written this boot's start of
// kubeadm.service and, on a boot after a cut, the bootstrap's decision (what cutAt explains).
func waitJournaled(t *testing.T, inst *provider.Instance, afterCut bool) {
	t.Helper()
	want := []string{"Starting " + ignition.KubeadmUnitName}
	if afterCut {
		want = append(want, interruptedAttemptFound)
	}
	var journal string
	ok := assert.Eventually(t, func() bool {
		journal, _ = onNode(t, inst, "journalctl", "--no-pager", "--boot=0", "-u", ignition.KubeadmUnitName, "-o", "cat")
		for _, w := range want {
			if !strings.Contains(journal, w) {
				return false
			}
		}
		return true
	}, 2*time.Minute, 100*time.Millisecond, "journald on %s has this boot's %q", inst.Name, want)
	if !ok {
		t.Logf("this boot's journal of kubeadm.service on %s:\n%s", inst.Name, journal)
		t.FailNow()
	}
}

// interruptedAttemptFound begins the line the bootstrap journals on a boot after a cut.
const interruptedAttemptFound = "cabpi: interrupted attempt found: "

// logKubeadm logs the node's kubeadm journal of every boot, read from its disk when it is off.
func logKubeadm(t *testing.T, inst *provider.Instance) {
	t.Helper()
	var out []byte
	if inst.Running() {
		out, _ = inst.Journal(t.Context(), ignition.KubeadmUnitName)
	} else {
		out, _ = inst.JournalOffline(t.Context(), ignition.KubeadmUnitName)
	}
	t.Logf("journal of kubeadm.service on %s, every boot:\n%s", inst.Name, out)
}

// interruptedBoots boots a Machine's held node and cuts its power at each point in turn, one
// boot per point, then boots it once more for the bootstrap to finish.
func interruptedBoots(t *testing.T, m *clusterv1.Machine, controlPlane bool, points ...cutPoint) *provider.Instance {
	t.Helper()
	require.Eventually(t, func() bool { return instanceOf(t, m) != nil }, 2*time.Minute, time.Second, "the node of %s is made", m.Name)
	inst := instanceOf(t, m)
	for i, p := range points {
		require.NoError(t, inst.Boot(t.Context()))
		cutAt(t, inst, controlPlane, p, i > 0)
	}
	require.NoError(t, inst.Boot(t.Context()))
	return inst
}

// agentSnippet adds to the user's snippet a stand-in for the variant's update agent, under the
// agent's own unit name, which asks for a reboot (into a staged update) as soon as it starts,
// once, after recording whether the sentinel was there and how kubeadm.service ended.
func agentSnippet(f flavor, release string) string {
	agent := "locksmithd.service"
	if f.variant == cabpiv1.VariantFCOS {
		agent = "zincati.service"
	}
	return userSnippet(f, release) + fmt.Sprintf(`    - name: %s
      enabled: true
      contents: |
        [Unit]
        Description=Stand-in for the update agent: reboots into a staged update as soon as it starts
        ConditionPathExists=!%[2]s
        [Service]
        Type=oneshot
        ExecStart=/bin/sh -c 'mkdir -p /var/lib/cabpi-e2e; { test -e %[3]s && echo sentinel || echo no-sentinel; systemctl show -p Result --value kubeadm.service; } >%[2]s; systemctl --no-block reboot'
        [Install]
        WantedBy=multi-user.target
`, agent, agentRecord, ignition.SentinelPath)
}

// A first boot cut off anywhere in kubeadm still finishes (issue 29, docs/adr/034): a node's
// power is cut at a point of its bootstrap, and the boot after ends with the sentinel, the config
// removed, kubeadm.service succeeded and the Node Ready with its taint and provider ID; one Node
// for the Machine and, for a control plane, one etcd member per node. The update agent's reboot
// waits for the bootstrap.
//
// Workers: one node per point, each cut once and then left to finish. A control-plane join: one
// node cut at each point in turn, one boot per point (each boot after a cut recovers and gets as
// far as the next point before its own cut), then left to finish: a chain, because each control-
// plane node takes a join of its own and adds an etcd member to its cluster.
func TestInterruptedFirstBoot(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f.name), func(t *testing.T) {
			t.Parallel()
			for _, p := range []cutPoint{cutInPreflight, cutInTLSBootstrap, cutAfterKubeletConf, cutAfterKubeadmSucceeded} {
				t.Run("worker cut "+p.String(), func(t *testing.T) {
					t.Parallel()
					// The stand-in update agent on the node cut in the TLS bootstrap: its boot
					// after the cut resets the node and runs kubeadm join again.
					testInterruptedWorker(t, f, fmt.Sprintf("cut-%d", p), p == cutInTLSBootstrap, p)
				})
			}
			t.Run("control-plane", func(t *testing.T) {
				t.Parallel()
				testInterruptedControlPlane(t, f)
			})
		})
	}
}

func testInterruptedWorker(t *testing.T, f flavor, suffix string, agent bool, points ...cutPoint) {
	ctx := t.Context()
	name := string(f.name) + "-" + suffix
	spec := workerSpec(f, "a")
	if agent {
		spec.Butane.Inline = agentSnippet(f, "a")
	}
	labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
	config, infra, machine := standaloneMachine(clusterName, name, kubernetesVersion, labels, spec,
		infrav1.NspawnMachineSpec{Flavor: f.name, BootHeld: true})
	create(t, config, infra, machine)
	t.Cleanup(func() { deleteAndWait(t, machine, 3*time.Minute) })

	inst := interruptedBoots(t, machine, false, points...)
	if agent {
		// The agent's reboot comes once kubeadm.service has ended, with the sentinel written.
		require.Eventually(t, func() bool { return !inst.Running() }, joinWithin, time.Second,
			"the update agent reboots %s once the bootstrap has finished", name)
		record, err := os.ReadFile(filepath.Join(inst.Root(), agentRecord))
		require.NoError(t, err)
		assert.Equal(t, "sentinel\nsuccess\n", string(record), "the agent ran after the sentinel, kubeadm.service succeeded")
		require.NoError(t, inst.Boot(ctx))
		// The Node's boot ID is this boot's once the kubelet of this boot reported it (a
		// heartbeat time is not: it has whole seconds, and a kubelet whose status did not
		// change refreshes it only every few minutes).
		_, err = inst.WaitBooted(ctx)
		require.NoError(t, err)
		bootID, err := onNode(t, inst, "cat", "/proc/sys/kernel/random/boot_id")
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			n, err := workloadC.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false
			}
			_, ready := nodeReady(n)
			return ready && n.Status.NodeInfo.BootID == bootID
		}, 3*time.Minute, time.Second, "Node %s is Ready, reported by its kubelet after the agent's reboot", name)
		assert.Equal(t, "no", unitProperty(t, inst, ignition.KubeadmUnitName, "ConditionResult"), "kubeadm.service does not run after the bootstrap")
	} else {
		waitBootstrapFinished(t, inst)
	}
	require.Eventually(t, func() bool {
		cur := &clusterv1.Machine{}
		return mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), cur) == nil && machineJoined(cur)
	}, joinWithin, time.Second, "Machine %s joined", name)
	require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), machine))
	assertFinishedAfterCuts(t, inst, len(points))

	node, err := workloadC.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, machine.Spec.ProviderID, node.Spec.ProviderID, "the Node reports the Machine's provider ID")
	registered := nodes.registered(name)
	require.NotNil(t, registered, "the suite saw Node %s registered", name)
	assert.Contains(t, registered.Spec.Taints, corev1.Taint{Key: ignition.UninitializedTaintKey, Effect: corev1.TaintEffect(ignition.UninitializedTaintEffect)},
		"the Node registered with Cluster API's uninitialized taint")
	assert.Equal(t, 1, nodesWithProviderID(t, workloadC, machine.Spec.ProviderID), "one Node for the Machine")
}

func testInterruptedControlPlane(t *testing.T, f flavor) {
	ctx := t.Context()
	lc := createLBCluster(t, "cut-"+string(f.name))
	first := lc.controlPlaneMachine(t, f, lc.cluster.Name+"-cpa")
	waitMachines(t, []*clusterv1.Machine{first}, joinWithin)
	joining := lc.controlPlaneMachineWith(t, f, lc.cluster.Name+"-cpb", infrav1.NspawnMachineSpec{Flavor: f.name, BootHeld: true})

	points := []cutPoint{cutInPreflight, cutInTLSBootstrap, cutAfterKubeletConf, cutAfterKubeadmSucceeded}
	inst := interruptedBoots(t, joining, true, points...)
	waitMachines(t, []*clusterv1.Machine{joining}, joinWithin+2*time.Minute)
	waitBootstrapFinished(t, inst)
	assertFinishedAfterCuts(t, inst, len(points))

	wc := lc.workloadClient(t)
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		node, err := wc.CoreV1().Nodes().Get(ctx, joining.Name, metav1.GetOptions{})
		if !assert.NoError(c, err) {
			return
		}
		assert.Contains(c, node.Spec.Taints, corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule})
		_, ready := nodeReady(node)
		assert.True(c, ready, "Node %s Ready", joining.Name)
	}, time.Minute, time.Second, "the control-plane Node %s", joining.Name)
	require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(joining), joining))
	assert.Equal(t, 1, nodesWithProviderID(t, wc, joining.Spec.ProviderID), "one Node for the Machine")
	nodeList, err := wc.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	assert.Len(t, nodeList.Items, 2, "two Nodes: the first control-plane node and the one cut")
	assert.Equal(t, []string{first.Name, joining.Name}, lc.etcdMembers(t, []*clusterv1.Machine{first, joining}),
		"one etcd member per node: the interrupted attempts' member was reused")
}

// waitBootstrapFinished waits for kubeadm.service to end on the node's current boot.
func waitBootstrapFinished(t *testing.T, inst *provider.Instance) {
	t.Helper()
	require.Eventually(t, func() bool {
		out, _ := onNode(t, inst, "systemctl", "show", ignition.KubeadmUnitName, "--value", "-p", "ActiveState")
		return out == "active" || out == "failed"
	}, joinWithin, time.Second, "kubeadm.service ends on %s", inst.Name)
	if !assert.Equal(t, "active", unitProperty(t, inst, ignition.KubeadmUnitName, "ActiveState"), "kubeadm.service succeeded") {
		logKubeadm(t, inst)
	}
	assert.True(t, exists(t, inst, ignition.SentinelPath), "the sentinel")
}

// assertFinishedAfterCuts checks what every boot left: kubeadm.service started on each boot
// (cuts+1), every boot after a cut said what it found, and the config and the attempt's state
// are gone.
func assertFinishedAfterCuts(t *testing.T, inst *provider.Instance, cuts int) {
	t.Helper()
	if !assert.Equal(t, cuts+1, kubeadmStarts(t, inst), "kubeadm.service started on each boot until the bootstrap finished") {
		logJournalDirs(t, inst)
		logKubeadm(t, inst)
	}
	journal, _ := onNode(t, inst, "journalctl", "--no-pager", "--merge", "-u", ignition.KubeadmUnitName, "-o", "cat")
	decisions := 0
	for _, d := range []string{"kubeadm had succeeded", "the kubelet has its certificate: joined", "etcd data here: resuming kubeadm", "resetting with kubeadm reset"} {
		decisions += strings.Count(journal, interruptedAttemptFound+d)
	}
	assert.Equal(t, cuts, decisions, "each boot after a cut found the interrupted attempt and said what it does")
	assert.False(t, exists(t, inst, ignition.KubeadmConfigPath), "the token-bearing kubeadm config is removed")
	assert.False(t, exists(t, inst, ignition.AttemptStateDir), "the attempt's state is removed")
	assert.NotContains(t, journal, "[ERROR FileAvailable", "no preflight refusal of what an attempt left")
}

// nodesWithProviderID counts the workload cluster's Nodes that report providerID.
func nodesWithProviderID(t *testing.T, c kubernetes.Interface, providerID string) int {
	t.Helper()
	list, err := c.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	n := 0
	for _, node := range list.Items {
		if node.Spec.ProviderID == providerID {
			n++
		}
	}
	return n
}
