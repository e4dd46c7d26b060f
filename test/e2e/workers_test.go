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
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/provider"
)

// joinWithin is how long a Machine may take from creation to a Ready Node here (2 cores,
// several nodes booting at once).
const joinWithin = 4 * time.Minute

// The worker lifecycle of each flavor, from cabpi's default output for its variant, driven by
// Cluster API: a MachineDeployment of two joins (1), a node is rebooted (5), scaled to three and
// back to one (2), rolled out through a new template (3). The flavors run side by side.
func TestWorkerLifecycle(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f.name), func(t *testing.T) {
			t.Parallel()
			md := string(f.name) + "-workers"
			first, second := md+"-a", md+"-b"
			create(t, ignitionTemplate(f, first, "a"), ignitionTemplate(f, second, "b"), infraTemplate(f, md))
			deployment := machineDeployment(md, 2, first, md)
			create(t, deployment)
			t.Cleanup(func() { deleteAndWait(t, deployment, 5*time.Minute) })

			var machines []clusterv1.Machine
			ok := t.Run("joins", func(t *testing.T) {
				machines = waitDeployment(t, f, md, 2, nil, joinWithin)
				for i := range machines {
					assertWorkerJoined(t, &machines[i], "a")
				}
			})
			require.True(t, ok, "the workers did not join: the rest cannot run")

			t.Run("reboot", func(t *testing.T) { testReboot(t, &machines[0]) })

			t.Run("scale", func(t *testing.T) {
				before := names(machines)
				scale(t, md, 3)
				three := waitDeployment(t, f, md, 3, nil, joinWithin)
				for i := range three {
					if !slices.Contains(before, three[i].Name) {
						assertWorkerJoined(t, &three[i], "a")
					}
				}
				scale(t, md, 1)
				one := waitDeployment(t, f, md, 1, nil, 5*time.Minute)
				assertRemoved(t, three, names(one))
				machines = one
			})

			t.Run("rollout", func(t *testing.T) {
				old := machines
				d := &clusterv1.MachineDeployment{}
				require.NoError(t, mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(deployment), d))
				before := d.DeepCopy()
				d.Spec.Template.Spec.Bootstrap.ConfigRef.Name = second
				require.NoError(t, mgmt.Client.Patch(t.Context(), d, client.MergeFrom(before)))
				rolled := waitDeployment(t, f, md, 1, names(old), joinWithin+2*time.Minute)
				assertWorkerJoined(t, &rolled[0], "b")
				assertRemoved(t, old, names(rolled))
			})
		})
	}
}

func names(machines []clusterv1.Machine) []string {
	out := make([]string, 0, len(machines))
	for _, m := range machines {
		out = append(out, m.Name)
	}
	return out
}

// assertRemoved checks that the Machines of before not in kept are gone for good: their nodes
// powered off and removed, their Node objects deleted by Cluster API.
func assertRemoved(t *testing.T, before []clusterv1.Machine, kept []string) {
	t.Helper()
	for i := range before {
		m := &before[i]
		if slices.Contains(kept, m.Name) {
			continue
		}
		assert.Nil(t, instanceOf(t, m), "the node of the removed Machine %s is powered off and removed", m.Name)
		assert.Eventually(t, func() bool { return nodeGone(t.Context(), m.Name) }, 2*time.Minute, time.Second,
			"Cluster API deletes the Node of the removed Machine %s", m.Name)
	}
}

// testReboot powers a joined node off and boots the same root again: kubeadm.service does not
// run again, the kubelet comes back with the client certificate it got at join, and the Node is
// Ready again.
func testReboot(t *testing.T, m *clusterv1.Machine) {
	inst := instanceOf(t, m)
	require.NotNil(t, inst)
	certBefore, err := onNode(t, inst, "sha256sum", "/var/lib/kubelet/pki/kubelet-client-current.pem")
	require.NoError(t, err)

	started := time.Now()
	err = inst.PowerOff(time.Minute)
	if took := time.Since(started); err != nil || took > slowShutdown {
		logShutdown(t, inst, took)
	} else {
		t.Logf("%s powered off in %s", inst.Name, took.Round(time.Millisecond))
	}
	require.NoError(t, err)
	require.NoError(t, inst.Boot(t.Context()))
	assertNoUnitFailed(t, inst, "on the second boot")
	bootID, err := onNode(t, inst, "cat", "/proc/sys/kernel/random/boot_id")
	require.NoError(t, err)

	assert.Equal(t, "inactive", unitProperty(t, inst, "kubeadm.service", "ActiveState"), "kubeadm.service does not run again")
	assert.Equal(t, "no", unitProperty(t, inst, "kubeadm.service", "ConditionResult"), "skipped: its config is gone")
	assert.Equal(t, 1, kubeadmStarts(t, inst), "kubeadm ran once, over both boots")
	certAfter, err := onNode(t, inst, "sha256sum", "/var/lib/kubelet/pki/kubelet-client-current.pem")
	require.NoError(t, err)
	assert.Equal(t, certBefore, certAfter, "the kubelet keeps the client certificate it got at join")
	require.Eventually(t, func() bool {
		n, err := workloadC.CoreV1().Nodes().Get(t.Context(), m.Name, metav1.GetOptions{})
		if err != nil {
			return false
		}
		// This boot's kubelet reported the Node (its boot ID): a heartbeat time has whole
		// seconds, and a kubelet whose status did not change refreshes it only every few
		// minutes, so one from the second the node was powered off could be the only one.
		_, ready := nodeReady(n)
		return ready && n.Status.NodeInfo.BootID == bootID
	}, 3*time.Minute, time.Second, "Node %s is Ready again, reported by its kubelet after the reboot", m.Name)
	require.Eventually(t, func() bool {
		cur := &clusterv1.Machine{}
		return mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(m), cur) == nil && machineJoined(cur)
	}, 2*time.Minute, time.Second, "Machine %s is Running and NodeHealthy after the reboot", m.Name)
}

// slowShutdown is how long a node's clean shutdown may take before the suite logs what it waited
// for (a node here powers off in about 4 s).
const slowShutdown = 8 * time.Second

// logShutdown logs the end of the node's last boot, with monotonic times: what its shutdown
// stopped, and how long each stop took.
func logShutdown(t *testing.T, inst *provider.Instance, took time.Duration) {
	t.Helper()
	out, err := inst.LastBootEnd(t.Context(), 150)
	t.Logf("%s took %s to power off; the end of its last boot (%v):\n%s", inst.Name, took.Round(time.Millisecond), err, out)
}

// A join that cannot succeed: the instance is created with the Machine's data, the Machine's
// join token is deleted from the workload cluster, then the node boots. kubeadm join fails
// within the discovery timeout the user set, kubeadm.service is failed, no sentinel exists at
// any moment, the kubeadm config stays, the Machine gets no nodeRef, and the IgnitionConfig
// says why (JoinTokenLost).
func TestLostJoinToken(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f.name), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			name := string(f.name) + "-lost-token"
			spec := workerSpec(f, "lost")
			spec.JoinConfiguration.Timeouts.DiscoverySeconds = ptr.To[int32](discoveryLimit)
			labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
			config, infra, machine := standaloneMachine(clusterName, name, kubernetesVersion, labels, spec,
				infrav1.NspawnMachineSpec{Flavor: f.name, BootHeld: true})
			create(t, config, infra, machine)
			t.Cleanup(func() { deleteAndWait(t, machine, 3*time.Minute) })

			// The instance exists with the data, not booted, and Cluster API knows it is provisioned.
			require.Eventually(t, func() bool {
				cur := &clusterv1.Machine{}
				return mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), cur) == nil &&
					ptr.Deref(cur.Status.Initialization.InfrastructureProvisioned, false)
			}, 2*time.Minute, time.Second, "Machine %s provisioned", name)
			inst := instanceOf(t, machine)
			require.NotNil(t, inst)
			tokenID := tokenOnNode(t, filepath.Join(inst.Root(), ignition.KubeadmConfigPath))
			require.NoError(t, workloadC.CoreV1().Secrets(metav1.NamespaceSystem).Delete(ctx, "bootstrap-token-"+tokenID, metav1.DeleteOptions{}))

			require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(infra), infra))
			before := infra.DeepCopy()
			infra.Spec.BootHeld = false
			require.NoError(t, mgmt.Client.Patch(ctx, infra, client.MergeFrom(before)))

			// Never a sentinel while kubeadm runs, nor after it failed.
			requireKubeadmFailsWithoutSentinel(t, inst, "while kubeadm join cannot succeed")
			assert.True(t, exists(t, inst, ignition.KubeadmConfigPath), "the kubeadm config stays")
			assert.Equal(t, "exit-code", unitProperty(t, inst, "kubeadm.service", "Result"), "kubeadm join exited with an error")
			journal, _ := onNode(t, inst, "journalctl", "--no-pager", "-u", "kubeadm.service", "-o", "cat")
			assert.Contains(t, journal, "couldn't validate the identity of the API Server", "kubeadm join failed in discovery")

			require.Eventually(t, func() bool {
				cur := &cabpiv1.IgnitionConfig{}
				if mgmt.Client.Get(ctx, client.ObjectKeyFromObject(config), cur) != nil {
					return false
				}
				c := conditions.Get(cur, cabpiv1.DataSecretAvailableCondition)
				return c != nil && c.Status == metav1.ConditionFalse && c.Reason == cabpiv1.JoinTokenLostReason
			}, 2*time.Minute, time.Second, "IgnitionConfig %s reports JoinTokenLost", name)
			cur := &clusterv1.Machine{}
			require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), cur))
			assert.False(t, cur.Status.NodeRef.IsDefined(), "no nodeRef")
			assert.True(t, nodeGone(ctx, name), "no Node")
		})
	}
}

// tokenOnNode reads the token ID of the join configuration in the node's kubeadm config (its
// root as the host sees it, before boot).
func tokenOnNode(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var join struct {
			Kind      string              `json:"kind"`
			Discovery kubeadmv1.Discovery `json:"discovery"`
		}
		require.NoError(t, yaml.Unmarshal([]byte(doc), &join))
		if join.Kind == "JoinConfiguration" {
			id, _, ok := strings.Cut(join.Discovery.BootstrapToken.Token, ".")
			require.True(t, ok, "a bootstrap token in %s", path)
			return id
		}
	}
	t.Fatalf("no JoinConfiguration in %s", path)
	return ""
}

// The test infrastructure provider reports what it cannot boot, as the contract asks: a Machine
// whose data Secret is not Ignition gets no instance, and its NspawnMachine's Ready condition
// (which Cluster API mirrors into the Machine) says why.
func TestInfrastructureRefusesOtherBootstrapFormats(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	const name = "cloud-config-data"
	labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
	data := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")}}
	infra := &infrav1.NspawnMachine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: infrav1.NspawnMachineSpec{Flavor: infrav1.FlavorFlatcar}}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: clusterName, Version: kubernetesVersion,
			Bootstrap: clusterv1.Bootstrap{DataSecretName: ptr.To(name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "NspawnMachine", Name: name},
		},
	}
	create(t, data, infra, machine)
	t.Cleanup(func() { deleteAndWait(t, machine, time.Minute) })
	require.Eventually(t, func() bool {
		cur := &infrav1.NspawnMachine{}
		if mgmt.Client.Get(ctx, client.ObjectKeyFromObject(infra), cur) != nil {
			return false
		}
		c := conditions.Get(cur, infrav1.ReadyCondition)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == infrav1.BootstrapDataInvalidReason &&
			strings.Contains(c.Message, `format "cloud-config"`)
	}, time.Minute, time.Second, "NspawnMachine %s reports BootstrapDataInvalid", name)
	assert.Nil(t, instanceOf(t, machine), "no instance")
	cur := &clusterv1.Machine{}
	require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), cur))
	assert.False(t, ptr.Deref(cur.Status.Initialization.InfrastructureProvisioned, false), "the Machine is not provisioned")
}
