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
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/provider"
)

// flavor is one kind of node with cabpi's variant for it.
type flavor struct {
	name    infrav1.Flavor
	variant cabpiv1.Variant
	// butane is the Butane variant and version of the user's snippet.
	butaneVariant, butaneVersion string
}

var flavors = []flavor{
	{name: infrav1.FlavorFlatcar, variant: cabpiv1.VariantFlatcar, butaneVariant: "flatcar", butaneVersion: "1.0.0"},
	{name: infrav1.FlavorFCOS, variant: cabpiv1.VariantFCOS, butaneVariant: "fcos", butaneVersion: "1.5.0"},
}

// What the user's snippet and commands put on a node, and how the suite finds them.
const (
	userFile       = "/etc/cabpi-e2e/release"
	userUnit       = "cabpi-e2e.service"
	userDropIn     = "50-cabpi-e2e.conf"
	userDropInEnv  = "CABPI_E2E_DROPIN=1"
	preMarker      = "/var/lib/cabpi-e2e/pre-ran-before-kubeadm"
	postMarker     = "/var/lib/cabpi-e2e/post-ran-after-sentinel"
	kubeletConfig  = "/etc/kubernetes/kubelet.conf" // written by kubeadm join
	discoveryLimit = 15                             // seconds: kubeadm's discovery timeout where a join must fail fast
)

// userSnippet is a Butane snippet with a file (whose content says which template made the node),
// a unit and a drop-in for cabpi's kubeadm.service.
func userSnippet(f flavor, release string) string {
	return fmt.Sprintf(`variant: %s
version: %s
storage:
  files:
    - path: %s
      mode: 0644
      contents:
        inline: %s
systemd:
  units:
    - name: %s
      enabled: true
      contents: |
        [Unit]
        Description=A unit of the user's snippet
        [Service]
        Type=oneshot
        RemainAfterExit=yes
        ExecStart=/bin/true
        [Install]
        WantedBy=multi-user.target
    - name: kubeadm.service
      dropins:
        - name: %s
          contents: |
            [Service]
            Environment=%s
`, f.butaneVariant, f.butaneVersion, userFile, release, userUnit, userDropIn, userDropInEnv)
}

// workerSpec is the users' worker config: the node named from OpenStack metadata with its
// provider ID, the snippet, and a command before kubeadm (which must not find kubeadm's
// kubeconfig yet) and one after (which must find the sentinel).
func workerSpec(f flavor, release string) cabpiv1.IgnitionConfigSpec {
	return cabpiv1.IgnitionConfigSpec{
		Variant:  f.variant,
		NodeName: &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformOpenStack, ProviderID: true},
		Butane:   cabpiv1.ButaneSpec{Inline: userSnippet(f, release)},
		PreKubeadmCommands: []string{
			"test ! -e " + kubeletConfig,
			"mkdir -p /var/lib/cabpi-e2e",
			"touch " + preMarker,
		},
		PostKubeadmCommands: []string{
			"test -e " + ignition.SentinelPath,
			"touch " + postMarker,
		},
	}
}

func ignitionTemplate(f flavor, name, release string) *cabpiv1.IgnitionConfigTemplate {
	return &cabpiv1.IgnitionConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: cabpiv1.IgnitionConfigTemplateSpec{Template: cabpiv1.IgnitionConfigTemplateResource{
			Spec: workerSpec(f, release)}},
	}
}

func infraTemplate(f flavor, name string) *infrav1.NspawnMachineTemplate {
	return &infrav1.NspawnMachineTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: infrav1.NspawnMachineTemplateSpec{Template: infrav1.NspawnMachineTemplateResource{
			Spec: infrav1.NspawnMachineSpec{Flavor: f.name}}},
	}
}

// machineDeployment is a MachineDeployment with the defaults Cluster API's webhook would add
// (the suite runs Cluster API's controllers, not its webhooks).
func machineDeployment(name string, replicas int32, bootstrap, infra string) *clusterv1.MachineDeployment {
	return clusterMachineDeployment(clusterName, name, replicas, bootstrap, infra)
}

// clusterMachineDeployment is machineDeployment for another Cluster than the suite's.
func clusterMachineDeployment(clusterName, name string, replicas int32, bootstrap, infra string) *clusterv1.MachineDeployment {
	selector := map[string]string{clusterv1.ClusterNameLabel: clusterName, clusterv1.MachineDeploymentNameLabel: name}
	one, zero := intstr.FromInt32(1), intstr.FromInt32(0)
	return &clusterv1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: clusterName}},
		Spec: clusterv1.MachineDeploymentSpec{
			ClusterName: clusterName,
			Replicas:    ptr.To(replicas),
			Selector:    metav1.LabelSelector{MatchLabels: selector},
			Rollout: clusterv1.MachineDeploymentRolloutSpec{Strategy: clusterv1.MachineDeploymentRolloutStrategy{
				Type:          clusterv1.RollingUpdateMachineDeploymentStrategyType,
				RollingUpdate: clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{MaxSurge: &one, MaxUnavailable: &zero},
			}},
			Template: clusterv1.MachineTemplateSpec{
				ObjectMeta: clusterv1.ObjectMeta{Labels: selector},
				Spec: clusterv1.MachineSpec{
					ClusterName: clusterName,
					Version:     kubernetesVersion,
					Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: cabpiv1.GroupVersion.Group, Kind: "IgnitionConfigTemplate", Name: bootstrap}},
					InfrastructureRef: clusterv1.ContractVersionedObjectReference{
						APIGroup: infrav1.GroupVersion.Group, Kind: "NspawnMachineTemplate", Name: infra},
				},
			},
		},
	}
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	createIn(t, mgmt.Client, objs...)
}

// createIn creates the objects in the management cluster of c.
func createIn(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		require.NoError(t, c.Create(t.Context(), o), "creating %T %s", o, o.GetName())
	}
}

// deploymentMachinesIn lists the Machines of a MachineDeployment in namespace ns of the
// management cluster of c, by name.
func deploymentMachinesIn(ctx context.Context, c client.Client, ns, md string) ([]clusterv1.Machine, error) {
	list := &clusterv1.MachineList{}
	if err := c.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md}); err != nil {
		return nil, err
	}
	slices.SortFunc(list.Items, func(a, b clusterv1.Machine) int { return strings.Compare(a.Name, b.Name) })
	return list.Items, nil
}

// machineJoined is Cluster API's view of a joined worker: phase Running, a nodeRef, NodeHealthy
// (the Node is Ready).
func machineJoined(m *clusterv1.Machine) bool {
	return m.Status.Phase == string(clusterv1.MachinePhaseRunning) && m.Status.NodeRef.IsDefined() &&
		conditions.IsTrue(m, clusterv1.MachineNodeHealthyCondition)
}

// waitDeployment waits until the MachineDeployment has exactly want Machines, every one joined,
// none of them in notAmong (Machines that must be gone), and returns them. It records when it
// first saw each Machine's nodeRef (for the timings).
func waitDeployment(t *testing.T, f flavor, md string, want int, notAmong []string, within time.Duration) []clusterv1.Machine {
	t.Helper()
	machines := waitDeploymentIn(t, mgmt.Client, namespace, md, want, notAmong, within)
	for i := range machines {
		recordTiming(t, f, &machines[i])
	}
	return machines
}

// waitDeploymentIn is waitDeployment, without the timings, in namespace ns of the management
// cluster of c.
func waitDeploymentIn(t *testing.T, c client.Client, ns, md string, want int, notAmong []string, within time.Duration) []clusterv1.Machine {
	t.Helper()
	var machines []clusterv1.Machine
	var last string
	deadline := time.Now().Add(within)
	for {
		var err error
		machines, err = deploymentMachinesIn(t.Context(), c, ns, md)
		require.NoError(t, err)
		joined := 0
		var states []string
		for i := range machines {
			m := &machines[i]
			if m.Status.NodeRef.IsDefined() {
				noteNodeRef(m.Name)
			}
			if machineJoined(m) && !slices.Contains(notAmong, m.Name) {
				joined++
			}
			states = append(states, fmt.Sprintf("%s: phase %s, nodeRef %q, NodeHealthy %v", m.Name, m.Status.Phase,
				m.Status.NodeRef.Name, conditions.IsTrue(m, clusterv1.MachineNodeHealthyCondition)))
		}
		last = strings.Join(states, "; ")
		if joined == want && len(machines) == want {
			break
		}
		if time.Now().After(deadline) {
			dumpState(t, c, machines)
			t.Fatalf("MachineDeployment %s: want %d joined Machines within %s, have: %s", md, want, within, last)
		}
		time.Sleep(time.Second)
	}
	return machines
}

// dumpState logs what a failed wait needs: each Machine's, config's and NspawnMachine's
// conditions, and its node's diagnosis.
func dumpState(t *testing.T, c client.Client, machines []clusterv1.Machine) {
	t.Helper()
	for _, m := range machines {
		t.Logf("Machine %s: %+v", m.Name, m.Status.Conditions)
		cfg := &cabpiv1.IgnitionConfig{}
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}, cfg); err == nil {
			t.Logf("IgnitionConfig %s: %+v", cfg.Name, cfg.Status.Conditions)
		}
		nm := &infrav1.NspawnMachine{}
		if err := c.Get(t.Context(), types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name}, nm); err == nil {
			t.Logf("NspawnMachine %s: %+v", nm.Name, nm.Status.Conditions)
		}
		// Not instanceOf: this is the diagnosis, now.
		inst := instances.Get(types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name})
		if inst != nil && inst.Booted() {
			t.Logf("diagnosis of the node %s:\n%s", inst.Name, inst.Diagnosis(t.Context()))
		}
	}
}

// instanceOf is the Machine's node, nil when it has none (never made, or removed). The test that
// asks for a node logs the node's diagnosis if it fails.
func instanceOf(t *testing.T, m *clusterv1.Machine) *provider.Instance {
	inst := instances.Get(types.NamespacedName{Namespace: m.Namespace, Name: m.Spec.InfrastructureRef.Name})
	if inst != nil {
		diagnoseOnFailure(t, inst)
	}
	return inst
}

// diagnosing holds the nodes each test logs the diagnosis of if it fails, once each.
var diagnosing sync.Map

// diagnoseOnFailure logs the node's diagnosis (nspawn.Machine.Diagnosis: units failed or still
// starting or stopping, queued jobs, the end of its journal) when the test ends failed, so that a
// wait on a node that timed out says why, in CI's output too (CI keeps no artifacts).
func diagnoseOnFailure(t *testing.T, inst *provider.Instance) {
	type key struct {
		t    *testing.T
		inst *provider.Instance
	}
	if _, seen := diagnosing.LoadOrStore(key{t, inst}, true); seen {
		return
	}
	t.Cleanup(func() {
		defer diagnosing.Delete(key{t, inst})
		if t.Failed() {
			// The test's context is done by now.
			t.Logf("diagnosis of the node %s:\n%s", inst.Name, inst.Diagnosis(context.Background()))
		}
	})
}

// scale sets the MachineDeployment's replicas.
func scale(t *testing.T, md string, replicas int32) {
	t.Helper()
	scaleIn(t, mgmt.Client, namespace, md, replicas)
}

// scaleIn is scale in namespace ns of the management cluster of c.
func scaleIn(t *testing.T, c client.Client, ns, md string, replicas int32) {
	t.Helper()
	d := &clusterv1.MachineDeployment{}
	require.NoError(t, c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: md}, d))
	before := d.DeepCopy()
	d.Spec.Replicas = ptr.To(replicas)
	require.NoError(t, c.Patch(t.Context(), d, client.MergeFrom(before)))
}

// deleteAndWait deletes an object and waits until it is gone (finalizers done).
func deleteAndWait(t *testing.T, o client.Object, within time.Duration) {
	t.Helper()
	require.NoError(t, client.IgnoreNotFound(mgmt.Client.Delete(context.Background(), o)))
	require.Eventually(t, func() bool {
		err := mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(o), o)
		return client.IgnoreNotFound(err) == nil && err != nil
	}, within, time.Second, "%T %s is not gone", o, o.GetName())
}

// nodeGone says whether the workload cluster has no Node of that name.
func nodeGone(ctx context.Context, name string) bool {
	_, err := workloadC.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	return client.IgnoreNotFound(err) == nil && err != nil
}

func nodeReady(n *corev1.Node) (corev1.NodeCondition, bool) {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c, c.Status == corev1.ConditionTrue
		}
	}
	return corev1.NodeCondition{}, false
}

// standaloneMachine is a Machine of a cluster with its own IgnitionConfig and NspawnMachine (no
// MachineDeployment), all named name and labelled with labels (the cluster name among them).
func standaloneMachine(clusterName, name, version string, labels map[string]string, spec cabpiv1.IgnitionConfigSpec,
	infraSpec infrav1.NspawnMachineSpec) (*cabpiv1.IgnitionConfig, *infrav1.NspawnMachine, *clusterv1.Machine) {
	config := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}, Spec: spec}
	infra := &infrav1.NspawnMachine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}, Spec: infraSpec}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: clusterName, Version: version,
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: cabpiv1.GroupVersion.Group, Kind: "IgnitionConfig", Name: name}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "NspawnMachine", Name: name},
		},
	}
	return config, infra, machine
}
