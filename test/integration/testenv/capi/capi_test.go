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

// Package capi_test runs the harness with every CAPI controller it can wire (Cluster, Machine,
// MachineSet, MachineDeployment, MachinePool, ClusterCache): a MachineDeployment of
// IgnitionConfigTemplate-based workers and a Cluster of stand-alone control-plane Machines.
package capi_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	timeout = 30 * time.Second
	tick    = 100 * time.Millisecond
)

var (
	env *testenv.Environment
	fx  = &fixtures.Kit{Eventually: timeout, Tick: tick}
)

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			ClusterController:           true,
			MachineController:           true,
			MachineSetController:        true,
			MachineDeploymentController: true,
			MachinePoolController:       true,
			KubeadmCRDs:                 true,
		},
		Keep: []**testenv.Environment{&env, &fx.Env},
	}))
}

func TestMachineDeploymentClonesIgnitionConfigs(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "md").Name
	cluster := fx.CreateCluster(t, ns, "c1", fixtures.BeforeInit()).Cluster

	tmpl := &cabpiv1.IgnitionConfigTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "workers"},
		Spec: cabpiv1.IgnitionConfigTemplateSpec{Template: cabpiv1.IgnitionConfigTemplateResource{
			Spec: cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFCOS, PreKubeadmCommands: []string{"echo hi"}},
		}},
	}
	require.NoError(t, env.Client.Create(ctx, tmpl))
	require.NoError(t, env.Client.Create(ctx, testenv.NewGenericInfraMachineTemplate(ns, "workers")))
	require.NoError(t, env.Client.Create(ctx, testenv.NewMachineDeployment(cluster, "workers", 2)))

	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		machines := &clusterv1.MachineList{}
		require.NoError(c, env.Client.List(ctx, machines, client.InNamespace(ns),
			client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: "workers"}))
		require.Len(c, machines.Items, 2)
		for _, m := range machines.Items {
			ref := m.Spec.Bootstrap.ConfigRef
			assert.Equal(c, cabpiv1.GroupVersion.Group, ref.APIGroup)
			assert.Equal(c, "IgnitionConfig", ref.Kind)
			cfg := &cabpiv1.IgnitionConfig{}
			require.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, cfg))
			assert.Equal(c, cabpiv1.VariantFCOS, cfg.Spec.Variant)
			assert.Equal(c, []string{"echo hi"}, cfg.Spec.PreKubeadmCommands)
			owner := metav1.GetControllerOf(cfg)
			require.NotNil(c, owner) // first the MachineSet, then the Machine once it reconciled
			assert.Equal(c, "Machine", owner.Kind)
			assert.Equal(c, m.Name, owner.Name)
			assert.Equal(c, cluster.Name, cfg.Labels[clusterv1.ClusterNameLabel])
		}
	}, timeout, tick)
}

func TestClusterControllerComputesControlPlaneInitialized(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "cp").Name
	cluster := fx.CreateCluster(t, ns, "c1", fixtures.BeforeInit()).Cluster
	require.NoError(t, env.WaitForClusterCacheConnected(ctx, cluster, timeout))

	var cps []*clusterv1.Machine
	for _, name := range []string{"cp-0", "cp-1", "cp-2"} {
		require.NoError(t, env.Client.Create(ctx, testenv.NewGenericInfraMachine(ns, name)))
		m := testenv.NewMachine(cluster, name, true)
		m.Spec.Bootstrap = clusterv1.Bootstrap{DataSecretName: ptr.To(name)}
		require.NoError(t, env.Client.Create(ctx, m))
		cps = append(cps, m)
	}

	// Not initialized while no control-plane Machine has a Node.
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &clusterv1.Cluster{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), got))
		cond := conditions.Get(got, clusterv1.ClusterControlPlaneInitializedCondition)
		require.NotNil(c, cond)
		assert.Equal(c, metav1.ConditionFalse, cond.Status)
	}, timeout, tick)

	_, err := env.MarkMachineNodeJoined(ctx, cps[0])
	require.NoError(t, err)

	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &clusterv1.Cluster{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), got))
		assert.True(c, conditions.IsTrue(got, clusterv1.ClusterControlPlaneInitializedCondition))
		// Stand-alone control plane: CAPI does not set status.initialization.controlPlaneInitialized.
		assert.Nil(c, got.Status.Initialization.ControlPlaneInitialized)
	}, timeout, tick)
}

func TestClusterControllerKeepsMarkedControlPlaneInitialized(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "mark").Name
	cluster := fx.CreateCluster(t, ns, "c1", fixtures.BeforeInit()).Cluster
	require.NoError(t, env.MarkControlPlaneInitialized(ctx, cluster))

	// Wait for the Cluster controller to have reconciled the marked Cluster at least once more
	// (it adds its finalizer, then writes the RemoteConnectionProbe condition once the
	// ClusterCache connected), then check it kept the marks.
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &clusterv1.Cluster{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(cluster), got))
		assert.True(c, conditions.IsTrue(got, clusterv1.ClusterRemoteConnectionProbeCondition))
		assert.True(c, conditions.IsTrue(got, clusterv1.ClusterControlPlaneInitializedCondition))
		assert.True(c, ptr.Deref(got.Status.Initialization.ControlPlaneInitialized, false))
		assert.True(c, ptr.Deref(got.Status.Initialization.InfrastructureProvisioned, false))
	}, timeout, tick)
}

func TestKubeadmCRDsInstalled(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "kubeadm").Name
	kc := &kubeadmv1.KubeadmConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kc"}}
	require.NoError(t, env.Client.Create(ctx, kc))
}
