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

// Clusters: made, and their status played as their infrastructure and control plane providers
// would set it.

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	v1beta1conditions "sigs.k8s.io/cluster-api/util/conditions/deprecated/v1beta1"
	"sigs.k8s.io/cluster-api/util/patch"
	"sigs.k8s.io/cluster-api/util/test/builder"
)

// NewCluster returns (does not create) a v1beta2 Cluster whose controlPlaneEndpoint is the
// envtest API server and whose infrastructureRef is the GenericInfrastructureCluster of the same
// name (see NewGenericInfraCluster, CreateCluster). No controlPlaneRef: stand-alone control-plane
// Machines, as created by NewMachine(..., true).
func (e *Environment) NewCluster(namespace, name string) *clusterv1.Cluster {
	return &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: clusterv1.ClusterSpec{
			ControlPlaneEndpoint: e.APIEndpoint(),
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.InfrastructureGroupVersion.Group,
				Kind:     builder.GenericInfrastructureClusterKind,
				Name:     name,
			},
		},
	}
}

// CreateCluster creates the GenericInfrastructureCluster and the Cluster of NewCluster, changed
// by mutate before it is created.
func (e *Environment) CreateCluster(ctx context.Context, namespace, name string, mutate ...func(*clusterv1.Cluster)) (*clusterv1.Cluster, error) {
	if err := e.Client.Create(ctx, NewGenericInfraCluster(namespace, name)); err != nil {
		return nil, fmt.Errorf("testenv: creating GenericInfrastructureCluster %s/%s: %w", namespace, name, err)
	}
	cluster := e.NewCluster(namespace, name)
	for _, m := range mutate {
		m(cluster)
	}
	if err := e.Client.Create(ctx, cluster); err != nil {
		return nil, fmt.Errorf("testenv: creating Cluster %s/%s: %w", namespace, name, err)
	}
	return cluster, nil
}

// CreateJoinableCluster makes a Cluster that Machines can join at once, as after its control
// plane came up: the workload kubeconfig Secret (the workload cluster is this API server), the
// cluster CA, infrastructure provisioned and control plane initialized.
func (e *Environment) CreateJoinableCluster(ctx context.Context, namespace, name string) (*clusterv1.Cluster, error) {
	cluster, err := e.CreateCluster(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	if _, err := e.CreateWorkloadKubeconfigSecret(ctx, cluster); err != nil {
		return nil, err
	}
	if _, err := e.CreateClusterCA(ctx, cluster); err != nil {
		return nil, err
	}
	if err := e.MarkInfrastructureProvisioned(ctx, cluster); err != nil {
		return nil, err
	}
	if err := e.MarkControlPlaneInitialized(ctx, cluster); err != nil {
		return nil, err
	}
	return cluster, nil
}

// MarkInfrastructureProvisioned sets the Cluster's status.initialization.infrastructureProvisioned
// (which lets the ClusterCache connect) and, when it exists, the infrastructure cluster's
// status.initialization.provisioned (what CAPI's Cluster controller, if running, derives the
// Cluster field from; CAPI never flips the Cluster field back to false).
func (e *Environment) MarkInfrastructureProvisioned(ctx context.Context, cluster *clusterv1.Cluster) error {
	if cluster.Spec.InfrastructureRef.IsDefined() {
		err := e.setNestedStatus(ctx, cluster.Namespace, cluster.Spec.InfrastructureRef, true, "initialization", "provisioned")
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("testenv: marking %s %s provisioned: %w", cluster.Spec.InfrastructureRef.Kind, cluster.Spec.InfrastructureRef.Name, err)
		}
	}
	return e.patchCluster(ctx, cluster, func(c *clusterv1.Cluster) {
		c.Status.Initialization.InfrastructureProvisioned = ptr.To(true)
	})
}

// MarkControlPlaneInitialized sets the Cluster's status.initialization.controlPlaneInitialized,
// the v1beta2 condition ControlPlaneInitialized=True (reason Initialized; CAPI's Machine
// controller watches Nodes of the workload cluster only once it is True) and the deprecated
// v1beta1 condition; with a controlPlaneRef, also the control plane object's
// status.initialization.controlPlaneInitialized.
//
// CAPI's Cluster controller, if running, never turns a True ControlPlaneInitialized condition
// back. Left alone it computes it: without controlPlaneRef, True once a control-plane Machine has
// status.nodeRef (MarkMachineNodeJoined on one), without ever setting
// status.initialization.controlPlaneInitialized; with controlPlaneRef, from the control plane
// object's status.initialization.controlPlaneInitialized (it then sets both).
func (e *Environment) MarkControlPlaneInitialized(ctx context.Context, cluster *clusterv1.Cluster) error {
	if cluster.Spec.ControlPlaneRef.IsDefined() {
		err := e.setNestedStatus(ctx, cluster.Namespace, cluster.Spec.ControlPlaneRef, true, "initialization", "controlPlaneInitialized")
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("testenv: marking %s %s initialized: %w", cluster.Spec.ControlPlaneRef.Kind, cluster.Spec.ControlPlaneRef.Name, err)
		}
	}
	return e.patchCluster(ctx, cluster, func(c *clusterv1.Cluster) {
		c.Status.Initialization.ControlPlaneInitialized = ptr.To(true)
		conditions.Set(c, metav1.Condition{
			Type:   clusterv1.ClusterControlPlaneInitializedCondition,
			Status: metav1.ConditionTrue,
			Reason: clusterv1.ClusterControlPlaneInitializedReason,
		})
		v1beta1conditions.MarkTrue(c, clusterv1.ControlPlaneInitializedV1Beta1Condition)
	},
		// CAPI's Cluster controller may be writing the same conditions (False): ours win.
		patch.WithOwnedConditions{Conditions: []string{clusterv1.ClusterControlPlaneInitializedCondition}},
		patch.WithOwnedV1Beta1Conditions{Conditions: []clusterv1.ConditionType{clusterv1.ControlPlaneInitializedV1Beta1Condition}},
	)
}

// patchCluster re-reads cluster, applies mutate and patches it with CAPI's patch helper (which
// merges conditions with concurrent writers), then copies the result into cluster.
func (e *Environment) patchCluster(ctx context.Context, cluster *clusterv1.Cluster, mutate func(*clusterv1.Cluster), opts ...patch.Option) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		latest := &clusterv1.Cluster{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cluster), latest); err != nil {
			return err
		}
		h, err := patch.NewHelper(latest, e.Client)
		if err != nil {
			return err
		}
		mutate(latest)
		if err := h.Patch(ctx, latest, opts...); err != nil {
			return err
		}
		latest.DeepCopyInto(cluster)
		return nil
	})
}
