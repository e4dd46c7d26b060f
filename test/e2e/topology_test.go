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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/test/builder"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
)

// A ClusterClass Cluster whose workers get the Kubernetes system extension from spec.kubernetes:
// its one worker joins at the topology's version v1.33.13; changing only the Cluster's
// spec.topology.version to v1.34.4 makes Cluster API's topology controller upgrade the control
// plane, then roll the MachineDeployment out, and the new node runs kubeadm and kubelet v1.34.4.
// No template is edited.
//
// The control plane is the suite's own (the workload API server on the host), which the class
// models as an externally managed control plane (GenericControlPlaneTemplate). The suite stands
// in for its provider: it reports the version the topology asks for once asked (the API server
// it runs is v1.34.4 throughout; kubelets of both versions are within its skew), and stores the
// cluster's certificates and kubeconfig, as a control-plane provider does.
func TestTopologyVersionUpgradesWorkers(t *testing.T) {
	t.Parallel()
	topologyVersionUpgrade(t, namespace, false)
}

// The same Cluster in the in-place namespace, whose Machines cabpi's update extension may update
// (inplace_test.go): changing spec.topology.version takes the same in-place path as a
// MachineDeployment's version, and the worker is kept, at the new version.
func TestTopologyVersionUpdatesWorkersInPlace(t *testing.T) {
	t.Parallel()
	inPlaceCluster(t)
	topologyVersionUpgrade(t, inPlaceNamespace, true)
}

func topologyVersionUpgrade(t *testing.T, ns string, inPlace bool) {
	ctx := t.Context()
	f := stockFlatcar
	name := "e2e-class"
	// The endpoint of the suite's control plane, as its NspawnCluster has it.
	suiteInfra := &infrav1.NspawnCluster{}
	require.NoError(t, mgmt.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: clusterName}, suiteInfra))
	require.True(t, suiteInfra.Spec.ControlPlaneEndpoint.IsValid())
	infraCluster := &infrav1.NspawnClusterTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: infrav1.NspawnClusterTemplateSpec{Template: infrav1.NspawnClusterTemplateResource{
			Spec: infrav1.NspawnClusterSpec{ControlPlaneEndpoint: suiteInfra.Spec.ControlPlaneEndpoint}}},
	}
	controlPlane := builder.ControlPlaneTemplate(ns, name).Build()
	bootstrap := ignitionTemplate(f, name+"-worker", "class")
	bootstrap.Namespace = ns
	bootstrap.Spec.Template.Spec.Kubernetes = cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceSysext,
		Sysext: &cabpiv1.SysextSource{BaseURL: releases.SysextURL()}}
	infra := infraTemplate(f, name+"-worker")
	infra.Namespace = ns
	// In place, one Machine may be unavailable and none added (see inPlaceDeployment).
	surge, unavailable := intstr.FromInt32(1), intstr.FromInt32(0)
	if inPlace {
		surge, unavailable = intstr.FromInt32(0), intstr.FromInt32(1)
	}
	class := &clusterv1.ClusterClass{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterClassSpec{
			Infrastructure: clusterv1.InfrastructureClass{TemplateRef: clusterv1.ClusterClassTemplateReference{
				APIVersion: infrav1.GroupVersion.String(), Kind: "NspawnClusterTemplate", Name: name}},
			ControlPlane: clusterv1.ControlPlaneClass{TemplateRef: clusterv1.ClusterClassTemplateReference{
				APIVersion: builder.ControlPlaneGroupVersion.String(), Kind: builder.GenericControlPlaneTemplateKind, Name: name}},
			Workers: clusterv1.WorkersClass{MachineDeployments: []clusterv1.MachineDeploymentClass{{
				Class: "worker",
				// What Cluster API's webhook defaults (the suite runs its controllers, not its
				// webhooks): without a strategy the MachineDeployment controller makes no MachineSet.
				Rollout: clusterv1.MachineDeploymentClassRolloutSpec{Strategy: clusterv1.MachineDeploymentClassRolloutStrategy{
					Type: clusterv1.RollingUpdateMachineDeploymentStrategyType,
					RollingUpdate: clusterv1.MachineDeploymentClassRolloutStrategyRollingUpdate{
						MaxSurge: &surge, MaxUnavailable: &unavailable},
				}},
				Bootstrap: clusterv1.MachineDeploymentClassBootstrapTemplate{TemplateRef: clusterv1.ClusterClassTemplateReference{
					APIVersion: cabpiv1.GroupVersion.String(), Kind: "IgnitionConfigTemplate", Name: bootstrap.Name}},
				Infrastructure: clusterv1.MachineDeploymentClassInfrastructureTemplate{TemplateRef: clusterv1.ClusterClassTemplateReference{
					APIVersion: infrav1.GroupVersion.String(), Kind: "NspawnMachineTemplate", Name: infra.Name}},
			}}},
		},
	}
	create(t, infraCluster, controlPlane, bootstrap, infra, class)
	templates := []client.Object{bootstrap, infra}
	topologyCluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{Topology: clusterv1.Topology{
			ClassRef: clusterv1.ClusterClassRef{Name: name},
			Version:  previousKubernetesVersion,
			Workers: clusterv1.WorkersTopology{MachineDeployments: []clusterv1.MachineDeploymentTopology{{
				Class: "worker", Name: "md", Replicas: ptr.To[int32](1)}}},
		}},
	}
	create(t, topologyCluster)
	t.Cleanup(func() { deleteAndWait(t, topologyCluster, 5*time.Minute) })

	// The suite as the control plane's provider, until the test ends.
	provide, stop := context.WithCancel(ctx)
	provided := make(chan struct{})
	go func() {
		defer close(provided)
		provideExternalControlPlane(provide, t, topologyCluster)
	}()
	// Stopped and waited for before the test ends: it logs through t.
	defer func() { stop(); <-provided }()

	md := func() *clusterv1.MachineDeployment {
		t.Helper()
		list := &clusterv1.MachineDeploymentList{}
		require.NoError(t, mgmt.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{clusterv1.ClusterNameLabel: name}))
		if len(list.Items) != 1 {
			return nil
		}
		return &list.Items[0]
	}
	var deployment *clusterv1.MachineDeployment
	require.Eventually(t, func() bool { deployment = md(); return deployment != nil }, 3*time.Minute, time.Second,
		"the topology controller creates the MachineDeployment of Cluster %s", name)

	var old []clusterv1.Machine
	ok := t.Run("joins at "+previousKubernetesVersion, func(t *testing.T) {
		old = waitDeploymentIn(t, mgmt.Client, ns, deployment.Name, 1, nil, joinWithin)
		recordTiming(t, f, &old[0])
		require.Equal(t, previousKubernetesVersion, old[0].Spec.Version)
		assertWorkerJoined(t, &old[0], "class")
		assertSysextMerged(t, instanceOf(t, &old[0]), previousKubernetesVersion)
	})
	require.True(t, ok, "the worker did not join: nothing to upgrade")

	var kept nodeBefore
	if inPlace {
		kept = prepareNode(t, &old[0])
	}
	t.Run("upgraded by spec.topology.version alone", func(t *testing.T) {
		versions := map[client.Object]string{}
		for _, o := range templates {
			require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(o), o))
			versions[o] = o.GetResourceVersion()
		}
		c := &clusterv1.Cluster{}
		require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(topologyCluster), c))
		before := c.DeepCopy()
		c.Spec.Topology.Version = kubernetesVersion
		require.NoError(t, mgmt.Client.Patch(ctx, c, client.MergeFrom(before)))

		if inPlace {
			updated := waitUpdatedInPlace(t, deployment, kubernetesVersion, names(old))
			assertKept(t, []nodeBefore{kept}, updated)
			assertDrained(t, []nodeBefore{kept})
			assertSysextMerged(t, instanceOf(t, &updated[0]), kubernetesVersion)
			assertKubernetesOnNode(t, instanceOf(t, &updated[0]), kubernetesVersion)
		} else {
			upgraded := waitDeploymentIn(t, mgmt.Client, ns, deployment.Name, 1, names(old), joinWithin+2*time.Minute)
			recordTiming(t, f, &upgraded[0])
			require.Equal(t, kubernetesVersion, upgraded[0].Spec.Version)
			assertWorkerJoined(t, &upgraded[0], "class")
			assertSysextMerged(t, instanceOf(t, &upgraded[0]), kubernetesVersion)
			assertRemoved(t, old, nil)
		}
		for _, o := range templates {
			cur := o.DeepCopyObject().(client.Object)
			require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(o), cur))
			assert.Equal(t, versions[o], cur.GetResourceVersion(), "%T %s is not edited", o, o.GetName())
		}
	})
}

// provideExternalControlPlane does for a topology Cluster's control plane what its provider
// would, until ctx ends: once the topology controller has made the control-plane object, the
// suite stores the cluster's certificates and kubeconfig (its own workload control plane's),
// and keeps the object's status at externally managed, initialized, at the version its spec
// asks for.
func provideExternalControlPlane(ctx context.Context, t *testing.T, c *clusterv1.Cluster) {
	stored := false
	for ctx.Err() == nil {
		if err := provideOnce(ctx, c, &stored); err != nil && ctx.Err() == nil {
			t.Logf("providing the control plane of %s: %v", c.Name, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func provideOnce(ctx context.Context, c *clusterv1.Cluster, stored *bool) error {
	cur := &clusterv1.Cluster{}
	if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
		return err
	}
	ref := cur.Spec.ControlPlaneRef
	if !ref.IsDefined() {
		return nil // not made yet
	}
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(builder.ControlPlaneGroupVersion.WithKind(ref.Kind))
	if err := mgmt.Client.Get(ctx, types.NamespacedName{Namespace: cur.Namespace, Name: ref.Name}, cp); err != nil {
		return err
	}
	if !*stored {
		owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cur.Name, UID: cur.UID}
		if err := workloadCP.Certificates.SaveGenerated(ctx, mgmt.Client, client.ObjectKeyFromObject(cur), owner); err != nil {
			return fmt.Errorf("storing the certificates: %w", err)
		}
		if err := kubeconfig.CreateSecretWithOwner(ctx, mgmt.Client, client.ObjectKeyFromObject(cur), workloadCP.Endpoint, owner); err != nil {
			return fmt.Errorf("writing the kubeconfig Secret: %w", err)
		}
		*stored = true
	}
	version, _, err := unstructured.NestedString(cp.Object, "spec", "version")
	if err != nil || version == "" {
		return err
	}
	current, _, _ := unstructured.NestedString(cp.Object, "status", "version")
	if current == version {
		return nil
	}
	return setExternalControlPlaneStatus(ctx, mgmt.Client, cp, version)
}
