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

package testenv

// Machines: made, and played through as their infrastructure provider and kubelet would take
// them (provider ID, provisioned, a Ready Node).

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
)

// KubernetesVersion is the spec.version NewMachine sets.
const KubernetesVersion = "v1.34.0"

// NewMachine returns (does not create) a Machine of cluster, version KubernetesVersion, whose
// bootstrap configRef is the IgnitionConfig and whose infrastructureRef the
// GenericInfrastructureMachine of the same name. controlPlane adds the control-plane label.
func NewMachine(cluster *clusterv1.Cluster, name string, controlPlane bool) *clusterv1.Machine {
	labels := map[string]string{clusterv1.ClusterNameLabel: cluster.Name}
	if controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	return &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName:       cluster.Name,
			Version:           KubernetesVersion,
			Bootstrap:         clusterv1.Bootstrap{ConfigRef: IgnitionConfigRef(name)},
			InfrastructureRef: GenericInfraMachineRef(name),
		},
	}
}

// NodeName is the name of the Node MarkMachineNodeJoined creates for machine (Nodes are
// cluster-scoped and every Cluster shares the envtest server, so the namespace is part of it).
func NodeName(machine *clusterv1.Machine) string {
	return machine.Namespace + "-" + machine.Name
}

// ProviderID is the providerID MarkMachineNodeJoined uses when neither the Machine nor its
// infrastructure machine has one.
func ProviderID(machine *clusterv1.Machine) string {
	return "test:///" + machine.Namespace + "/" + machine.Name
}

// MarkMachineNodeJoined plays the infrastructure provider and the kubelet for machine: it creates
// a Ready Node with the Machine's providerID in the (envtest) workload cluster, then sets the
// infrastructure machine's spec.providerID and status.initialization.provisioned=true. CAPI's
// Machine controller then copies the providerID to the Machine and sets status.nodeRef (assert
// it with Eventually).
//
// Needs the ClusterCache connected to the Machine's Cluster (kubeconfig Secret +
// MarkInfrastructureProvisioned). When it is connected, this waits until the ClusterCache's
// Node cache has the Node, so the Machine reconcile triggered by the infrastructure machine
// finds it even where CAPI does not watch Nodes yet (it watches them only once the Cluster's
// ControlPlaneInitialized condition is True).
func (e *Environment) MarkMachineNodeJoined(ctx context.Context, machine *clusterv1.Machine) (*corev1.Node, error) {
	m, providerID, err := e.machineProviderID(ctx, machine)
	if err != nil {
		return nil, err
	}

	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: NodeName(m)},
		Spec:       corev1.NodeSpec{ProviderID: providerID},
	}
	if err := e.Client.Create(ctx, node); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("testenv: creating Node %s: %w", node.Name, err)
		}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(node), node); err != nil {
			return nil, err
		}
		if node.Spec.ProviderID != providerID {
			return nil, fmt.Errorf("testenv: Node %s exists with providerID %q, want %q", node.Name, node.Spec.ProviderID, providerID)
		}
	}
	before := node.DeepCopy()
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", LastHeartbeatTime: now, LastTransitionTime: now},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientPID", LastHeartbeatTime: now, LastTransitionTime: now},
	}
	node.Status.NodeInfo.KubeletVersion = m.Spec.Version
	if err := e.Client.Status().Patch(ctx, node, client.MergeFrom(before)); err != nil {
		return nil, fmt.Errorf("testenv: patching Node %s status: %w", node.Name, err)
	}

	if e.ClusterCache != nil {
		key := client.ObjectKey{Namespace: m.Namespace, Name: m.Spec.ClusterName}
		if r, err := e.ClusterCache.GetReader(ctx, key); err == nil {
			err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
				return r.Get(ctx, client.ObjectKeyFromObject(node), &corev1.Node{}) == nil, nil
			})
			if err != nil {
				return nil, fmt.Errorf("testenv: Node %s did not show up in the ClusterCache: %w", node.Name, err)
			}
		}
	}

	if err := e.markInfraMachineProvisioned(ctx, m, providerID); err != nil {
		return nil, err
	}
	return node, nil
}

// MarkMachineInfrastructureProvisioned plays the infrastructure provider alone: it sets the
// infrastructure machine's spec.providerID (its own, the Machine's, or ProviderID) and
// status.initialization.provisioned=true, and returns the providerID. CAPI's Machine controller
// then sets the Machine's spec.providerID and status.initialization.infrastructureProvisioned
// (assert it with Eventually); no Node is created, so the Machine gets no nodeRef.
func (e *Environment) MarkMachineInfrastructureProvisioned(ctx context.Context, machine *clusterv1.Machine) (string, error) {
	m, providerID, err := e.machineProviderID(ctx, machine)
	if err != nil {
		return "", err
	}
	return providerID, e.markInfraMachineProvisioned(ctx, m, providerID)
}

// machineProviderID reads machine and the providerID its infrastructure machine has or gets:
// the infrastructure machine's own, else the Machine's, else ProviderID.
func (e *Environment) machineProviderID(ctx context.Context, machine *clusterv1.Machine) (*clusterv1.Machine, string, error) {
	m := &clusterv1.Machine{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(machine), m); err != nil {
		return nil, "", fmt.Errorf("testenv: getting Machine: %w", err)
	}
	infra, err := external.GetObjectFromContractVersionedRef(ctx, e.Client, m.Spec.InfrastructureRef, m.Namespace)
	if err != nil {
		return nil, "", fmt.Errorf("testenv: getting infrastructure machine of Machine %s/%s: %w", m.Namespace, m.Name, err)
	}
	providerID, _, _ := unstructured.NestedString(infra.Object, "spec", "providerID")
	if providerID == "" {
		providerID = m.Spec.ProviderID
	}
	if providerID == "" {
		providerID = ProviderID(m)
	}
	return m, providerID, nil
}

// markInfraMachineProvisioned sets spec.providerID and status.initialization.provisioned of the
// infrastructure machine of m.
func (e *Environment) markInfraMachineProvisioned(ctx context.Context, m *clusterv1.Machine, providerID string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := external.GetObjectFromContractVersionedRef(ctx, e.Client, m.Spec.InfrastructureRef, m.Namespace)
		if err != nil {
			return err
		}
		before := obj.DeepCopy()
		if err := unstructured.SetNestedField(obj.Object, providerID, "spec", "providerID"); err != nil {
			return err
		}
		return e.Client.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	if err != nil {
		return fmt.Errorf("testenv: setting spec.providerID of %s %s: %w", m.Spec.InfrastructureRef.Kind, m.Spec.InfrastructureRef.Name, err)
	}
	if err := e.setNestedStatus(ctx, m.Namespace, m.Spec.InfrastructureRef, true, "initialization", "provisioned"); err != nil {
		return fmt.Errorf("testenv: marking %s %s provisioned: %w", m.Spec.InfrastructureRef.Kind, m.Spec.InfrastructureRef.Name, err)
	}
	return nil
}
