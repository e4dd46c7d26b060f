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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/provider"
)

// onNode runs a command on the Machine's node and returns its trimmed output.
func onNode(t *testing.T, inst *provider.Instance, name string, args ...string) (string, error) {
	t.Helper()
	out, err := inst.Exec(t.Context(), name, args...)
	return strings.TrimSpace(string(out)), err
}

// exists says whether p is on the node, as the node sees it (/run is the node's own tmpfs).
func exists(t *testing.T, inst *provider.Instance, p string) bool {
	t.Helper()
	_, err := onNode(t, inst, "test", "-e", p)
	return err == nil
}

// unitProperty is one property of a unit on the node (systemctl show).
func unitProperty(t *testing.T, inst *provider.Instance, unit, property string) string {
	t.Helper()
	v, err := onNode(t, inst, "systemctl", "show", unit, "--value", "-p", property)
	require.NoError(t, err)
	return v
}

// kubeadmStarts counts the starts of kubeadm.service in the node's journal, over every boot and
// every machine ID the node had (--merge): a first boot whose power is cut before systemd
// commits its transient machine ID leaves its journal under an ID the next boot does not
// have (the next boot is a first boot again), and journalctl reads only the current ID's
// journal by default. Under load the commit came after the cut in preflight, and a boot was
// not counted.
func kubeadmStarts(t *testing.T, inst *provider.Instance) int {
	t.Helper()
	out, err := onNode(t, inst, "journalctl", "--no-pager", "--merge", "-u", "kubeadm.service", "-o", "cat", "--grep", "^Starting kubeadm.service")
	// journalctl --grep exits 1 when nothing matches, saying so or not depending on its version.
	if err != nil && (out == "" || strings.Contains(out, "-- No entries --")) {
		boots, _ := onNode(t, inst, "journalctl", "--no-pager", "--list-boots")
		t.Logf("no start of kubeadm.service in the journal of %s; the boots of its machine ID:\n%s", inst.Name, boots)
		logJournalDirs(t, inst)
		return 0
	}
	require.NoError(t, err)
	return strings.Count(out, "Starting kubeadm.service")
}

// logJournalDirs logs the node's journal directories, one per machine ID it had.
func logJournalDirs(t *testing.T, inst *provider.Instance) {
	t.Helper()
	dirs, _ := onNode(t, inst, "ls", "-l", "/var/log/journal")
	t.Logf("the journals of %s, one directory per machine ID:\n%s", inst.Name, dirs)
}

// assertNoUnitFailed checks that systemd on the node has started up with no failed unit, and
// logs the journal of each unit that failed.
func assertNoUnitFailed(t *testing.T, inst *provider.Instance, when string) {
	t.Helper()
	state, err := inst.WaitBooted(t.Context())
	require.NoError(t, err)
	if assert.Equal(t, "running", state, "no unit failed %s", when) {
		return
	}
	failed, _ := onNode(t, inst, "systemctl", "--failed", "--no-legend", "--plain")
	for _, line := range strings.Split(failed, "\n") {
		if unit, _, ok := strings.Cut(strings.TrimSpace(line), " "); ok {
			log, _ := onNode(t, inst, "journalctl", "--no-pager", "-b", "-u", unit)
			t.Logf("failed unit %s on %s:\n%s", unit, inst.Name, log)
		}
	}
}

// assertOwnDisk checks that the node's kubelet sees the node's own disk, not the host's: its
// Node's ephemeral storage (the kubelet's nodefs) is about the size of the disk the test
// infrastructure gave it, so what it counts as free is what the node left free, whatever the
// host's other users do with the host's disk (docs/adr/036-nodes-with-disks-of-their-own.md).
func assertOwnDisk(t *testing.T, node *corev1.Node, inst *provider.Instance) {
	t.Helper()
	size := inst.Spec.DiskSize
	require.Positive(t, size, "the node of %s has a disk of its own", node.Name)
	capacity := node.Status.Capacity[corev1.ResourceEphemeralStorage]
	assert.LessOrEqual(t, capacity.Value(), size, "Node %s: the kubelet's file system is the node's disk (%d bytes), not the host's", node.Name, size)
	assert.Greater(t, capacity.Value(), size*9/10, "Node %s: the kubelet's file system is the node's disk (%d bytes)", node.Name, size)
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeDiskPressure {
			assert.Equal(t, corev1.ConditionFalse, c.Status, "Node %s has no DiskPressure: %s", node.Name, c.Message)
		}
	}
}

// assertWorkerJoined checks a joined worker from both ends: Cluster API's Machine, the Node the
// node's kubelet registered, and the node itself (what cabpi's output made of it).
func assertWorkerJoined(t *testing.T, m *clusterv1.Machine, release string) {
	t.Helper()
	assertWorkerJoinedIn(t, mgmt.Client, m, release)
}

// assertWorkerJoinedIn is assertWorkerJoined for a Machine of the management cluster of c.
func assertWorkerJoinedIn(t *testing.T, c client.Client, m *clusterv1.Machine, release string) {
	t.Helper()
	ctx := t.Context()
	inst := instanceOf(t, m)
	require.NotNil(t, inst, "the node of Machine %s", m.Name)

	// Cluster API's side.
	assert.True(t, machineJoined(m), "Machine %s is Running with a nodeRef and NodeHealthy", m.Name)
	assert.Equal(t, m.Name, m.Status.NodeRef.Name, "nodeRef: the Node is named from the metadata hostname")
	nm := &infrav1.NspawnMachine{}
	require.NoError(t, c.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, nm))
	assert.Equal(t, provider.ProviderIDPrefix+nm.Status.InstanceUUID, m.Spec.ProviderID, "the Machine's provider ID is the instance's")

	// The Node, as registered by the node's kubelet and as it is now.
	node, err := workloadC.CoreV1().Nodes().Get(ctx, m.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, m.Spec.ProviderID, node.Spec.ProviderID, "the Node reports the Machine's provider ID")
	assert.Equal(t, m.Spec.Version, node.Status.NodeInfo.KubeletVersion, "the kubelet runs the Machine's version")
	assert.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: inst.Address.String()})
	assertOwnDisk(t, node, inst)
	registered := nodes.registered(m.Name)
	require.NotNil(t, registered, "the suite saw Node %s registered", m.Name)
	assert.Contains(t, registered.Spec.Taints, corev1.Taint{Key: ignition.UninitializedTaintKey, Effect: corev1.TaintEffect(ignition.UninitializedTaintEffect)},
		"the Node registered with Cluster API's uninitialized taint")
	require.NotEmpty(t, registered.ManagedFields)
	assert.Equal(t, "kubelet", registered.ManagedFields[0].Manager, "the node's kubelet registered the Node")
	require.Eventually(t, func() bool {
		n, err := workloadC.CoreV1().Nodes().Get(ctx, m.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		for _, taint := range n.Spec.Taints {
			if taint.Key == ignition.UninitializedTaintKey {
				return false
			}
		}
		return true
	}, time.Minute, time.Second, "Cluster API removes the uninitialized taint from Node %s", m.Name)

	// The node. Its Node registers before kubeadm join exits: wait for kubeadm.service to finish.
	require.Eventually(t, func() bool {
		out, _ := onNode(t, inst, "systemctl", "show", "kubeadm.service", "--value", "-p", "ActiveState")
		return out != "activating"
	}, 2*time.Minute, time.Second, "kubeadm.service finishes")
	assert.True(t, exists(t, inst, ignition.SentinelPath), "the sentinel")
	assertNoUnitFailed(t, inst, "on the first boot")
	assert.False(t, exists(t, inst, ignition.KubeadmConfigPath), "the token-bearing kubeadm config is removed")
	assert.Equal(t, "active", unitProperty(t, inst, "kubeadm.service", "ActiveState"))
	assert.Equal(t, "exited", unitProperty(t, inst, "kubeadm.service", "SubState"), "kubeadm.service is active (exited)")
	assert.Equal(t, 1, kubeadmStarts(t, inst), "kubeadm ran once")
	content, err := onNode(t, inst, "cat", userFile)
	assert.NoError(t, err)
	assert.Equal(t, release, content, "the user's file")
	if !assert.Equal(t, "active", unitProperty(t, inst, userUnit, "ActiveState"), "the user's unit ran") {
		log, _ := onNode(t, inst, "journalctl", "--no-pager", "-b", "-u", userUnit)
		t.Logf("journal of %s:\n%s", userUnit, log)
	}
	assert.Contains(t, unitProperty(t, inst, "kubeadm.service", "DropInPaths"), userDropIn, "the user's drop-in")
	assert.Contains(t, unitProperty(t, inst, "kubeadm.service", "Environment"), userDropInEnv, "the user's drop-in is in effect")
	assert.True(t, exists(t, inst, preMarker), "the pre-kubeadm command ran, before kubeadm wrote its kubeconfig")
	assert.True(t, exists(t, inst, postMarker), "the post-kubeadm command ran, after the sentinel")
}

// nodeRefSeen is when the suite first saw each Machine's nodeRef.
var nodeRefSeen sync.Map // Machine name → time.Time

func noteNodeRef(machine string) { nodeRefSeen.LoadOrStore(machine, time.Now()) }

// recordTiming adds a joined Machine's way to its Node to the timings, once.
func recordTiming(t *testing.T, f flavor, m *clusterv1.Machine) {
	t.Helper()
	if _, done := recorded.LoadOrStore(m.Name, true); done {
		return
	}
	ctx := t.Context()
	since := func(at time.Time) float64 { return at.Sub(m.CreationTimestamp.Time).Seconds() }
	row := nodeTiming{flavor: string(f.name), machine: m.Name}
	data := &corev1.Secret{}
	if m.Spec.Bootstrap.DataSecretName != nil &&
		mgmt.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: *m.Spec.Bootstrap.DataSecretName}, data) == nil {
		row.dataSecret = since(data.CreationTimestamp.Time)
	}
	nm := &infrav1.NspawnMachine{}
	if mgmt.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, nm) == nil && nm.Status.BootTime != nil {
		row.boot = since(nm.Status.BootTime.Time)
	}
	if inst := instanceOf(t, m); inst != nil {
		if v, err := onNode(t, inst, "systemctl", "show", "kubeadm.service", "--value", "-p", "ExecMainExitTimestamp", "--timestamp=us+utc"); err == nil {
			if at, err := time.Parse("Mon 2006-01-02 15:04:05.000000 MST", v); err == nil {
				row.kubeadmExit = since(at)
			}
		}
	}
	if at, ok := nodeRefSeen.Load(m.Name); ok {
		row.nodeRef = since(at.(time.Time))
	}
	timings.add(row)
}

var recorded sync.Map // Machine name → recorded

// requireKubeadmFailsWithoutSentinel looks at the node every 200 ms until kubeadm.service has
// finished, requiring that no sentinel is there at any look (why names what cannot succeed), and
// that the unit failed, within 4 minutes.
func requireKubeadmFailsWithoutSentinel(t *testing.T, inst *provider.Instance, why string) {
	t.Helper()
	deadline := time.Now().Add(4 * time.Minute)
	var state string
	for time.Now().Before(deadline) {
		if inst.Running() {
			require.False(t, exists(t, inst, ignition.SentinelPath), "a sentinel %s", why)
			out, _ := onNode(t, inst, "systemctl", "is-active", "kubeadm.service")
			if state = out; state == "failed" || state == "active" {
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, "failed", state, "kubeadm.service")
	assert.False(t, exists(t, inst, ignition.SentinelPath), "no sentinel")
}
