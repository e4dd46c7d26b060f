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

package testenv_test

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"

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
		Options: testenv.Options{MachineController: true, ClusterCache: true},
		Keep:    []**testenv.Environment{&env, &fx.Env},
	}))
}

// readyCluster creates a Cluster with its kubeconfig Secret, marked infrastructure provisioned
// (fixtures.BeforeInit), and checks the harness said so in the Cluster it returned.
func readyCluster(t *testing.T, ns, name string) *clusterv1.Cluster {
	t.Helper()
	cluster := fx.CreateCluster(t, ns, name, fixtures.BeforeInit()).Cluster
	require.True(t, ptr.Deref(cluster.Status.Initialization.InfrastructureProvisioned, false))
	return cluster
}

func TestCRDsCarryContractLabel(t *testing.T) {
	ctx := t.Context()
	for _, name := range []string{"ignitionconfigs.bootstrap.cluster.x-k8s.io", "ignitionconfigtemplates.bootstrap.cluster.x-k8s.io"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: name}, crd))
		assert.Equal(t, "v1alpha1", crd.Labels["cluster.x-k8s.io/v1beta2"], name)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: "genericinfrastructuremachines.infrastructure.cluster.x-k8s.io"}, crd))
	assert.Equal(t, "v1beta2", crd.Labels["cluster.x-k8s.io/v1beta2"])
}

func TestMachineControllerAdoptsIgnitionConfig(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "adopt").Name
	cluster := readyCluster(t, ns, "c1")

	// The ClusterCache connects to the envtest server through the kubeconfig Secret.
	require.NoError(t, env.WaitForClusterCacheConnected(ctx, cluster, timeout))
	remote, err := env.ClusterCache.GetClient(ctx, client.ObjectKeyFromObject(cluster))
	require.NoError(t, err)
	require.NoError(t, remote.List(ctx, &corev1.NamespaceList{}))

	cfg := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1"}}
	require.NoError(t, env.Client.Create(ctx, cfg))
	require.NoError(t, env.Client.Create(ctx, testenv.NewGenericInfraMachine(ns, "m1")))
	machine := testenv.NewMachine(cluster, "m1", false)
	require.NoError(t, env.Client.Create(ctx, machine))

	// Play the bootstrap provider: data Secret + status.
	data := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "m1", Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": []byte(`{"ignition":{"version":"3.4.0"}}`), "format": []byte(cabpiv1.DataSecretFormat)},
	}
	require.NoError(t, env.Client.Create(ctx, data))
	before := cfg.DeepCopy()
	cfg.Status.DataSecretName = data.Name
	cfg.Status.Initialization.DataSecretCreated = ptr.To(true)
	require.NoError(t, env.Client.Status().Patch(ctx, cfg, client.MergeFrom(before)))

	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		m := &clusterv1.Machine{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(machine), m))
		assert.Equal(c, ptr.To("m1"), m.Spec.Bootstrap.DataSecretName)
		assert.True(c, ptr.Deref(m.Status.Initialization.BootstrapDataSecretCreated, false))
	}, timeout, tick)

	// CAPI made the Machine the controller owner of the IgnitionConfig and labelled it.
	m := &clusterv1.Machine{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(machine), m))
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &cabpiv1.IgnitionConfig{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(cfg), got))
		owner := metav1.GetControllerOf(got)
		require.NotNil(c, owner)
		assert.Equal(c, clusterv1.GroupVersion.String(), owner.APIVersion)
		assert.Equal(c, "Machine", owner.Kind)
		assert.Equal(c, m.Name, owner.Name)
		assert.Equal(c, m.UID, owner.UID)
		assert.Equal(c, cluster.Name, got.Labels[clusterv1.ClusterNameLabel])
	}, timeout, tick)
}

func TestMarkMachineNodeJoined(t *testing.T) {
	for _, tc := range []struct {
		name          string
		cpInitialized bool
		controlPlane  bool
	}{
		{name: "control plane initialized", cpInitialized: true},
		{name: "control plane not initialized", cpInitialized: false, controlPlane: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			ns := env.CreateNamespace(t, "join").Name
			cluster := readyCluster(t, ns, "c1")
			if tc.cpInitialized {
				require.NoError(t, env.MarkControlPlaneInitialized(ctx, cluster))
				assert.True(t, conditions.IsTrue(cluster, clusterv1.ClusterControlPlaneInitializedCondition))
				assert.True(t, ptr.Deref(cluster.Status.Initialization.ControlPlaneInitialized, false))
			}
			require.NoError(t, env.WaitForClusterCacheConnected(ctx, cluster, timeout))

			require.NoError(t, env.Client.Create(ctx, testenv.NewGenericInfraMachine(ns, "m1")))
			machine := testenv.NewMachine(cluster, "m1", tc.controlPlane)
			machine.Spec.Bootstrap = clusterv1.Bootstrap{DataSecretName: ptr.To("m1")}
			require.NoError(t, env.Client.Create(ctx, machine))

			node, err := env.MarkMachineNodeJoined(ctx, machine)
			require.NoError(t, err)
			assert.Equal(t, testenv.ProviderID(machine), node.Spec.ProviderID)

			assert.EventuallyWithT(t, func(c *assert.CollectT) {
				m := &clusterv1.Machine{}
				require.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(machine), m))
				assert.Equal(c, node.Spec.ProviderID, m.Spec.ProviderID)
				assert.True(c, ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false))
				assert.Equal(c, node.Name, m.Status.NodeRef.Name)
			}, timeout, tick)
		})
	}
}

func TestCreateClusterCA(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "ca").Name
	cluster, err := env.CreateCluster(ctx, ns, "c1")
	require.NoError(t, err)
	pem, err := env.CreateClusterCA(ctx, cluster)
	require.NoError(t, err)
	require.Contains(t, string(pem), "BEGIN CERTIFICATE")

	s := &corev1.Secret{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1-ca"}, s))
	assert.Equal(t, pem, s.Data[secret.TLSCrtDataName])
	assert.NotEmpty(t, s.Data[secret.TLSKeyDataName])
	assert.Equal(t, clusterv1.ClusterSecretType, s.Type)
	assert.Equal(t, "c1", s.Labels[clusterv1.ClusterNameLabel])

	again, err := env.CreateClusterCA(ctx, cluster) // looked up, not regenerated
	require.NoError(t, err)
	assert.Equal(t, pem, again)
}
