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

package controllers_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/controllers/external"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// A data Secret deleted before the node joined is rendered again (the infrastructure may still
// need it), with the config's join token while it is valid; one deleted after the node joined is
// not (the node needs it no more).
func TestDeletedDataSecret(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddMachine(t, "pending", false, cabpiv1.IgnitionConfigSpec{})
	joined := f.AddMachine(t, "joined", false, cabpiv1.IgnitionConfigSpec{})
	for _, name := range []string{"pending", "joined"} {
		fx.WaitForCondition(t, f.Namespace, name, cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	}
	joinNode(t, joined)
	// A reconcile of the joined config that read its Machine before the join would take the
	// deleted data for data to render again: none is under way once the config, its data and its
	// token have gone a check interval unwritten (its token would otherwise have been refreshed).
	joinedData, _ := fx.DataSecret(t, f.Namespace, "joined")
	quiet(t, checkInterval, configObjects(f.Namespace, "joined", joinedData.Annotations[cabpiv1.BootstrapTokenIDAnnotation])...)

	pending, _ := fx.DataSecret(t, f.Namespace, "pending")
	for _, name := range []string{"pending", "joined"} {
		s, ok := fx.DataSecret(t, f.Namespace, name)
		require.True(t, ok)
		require.NoError(t, env.Client.Delete(ctx, s))
		touch(t, getConfig(t, f.Namespace, name))
	}

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s := &corev1.Secret{}
		if assert.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: "pending"}, s)) {
			assert.NotEqual(c, pending.UID, s.UID, "a new Secret")
			// The config's token is still valid: the new data carries it rather than a second one.
			id := pending.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
			assert.Equal(c, id, s.Annotations[cabpiv1.BootstrapTokenIDAnnotation], "with the config's join token")
			assert.Equal(c, []string{id}, fixtures.TokenIDs(fx.TokensOf(t, f.Namespace, "pending")), "and no second token")
		}
	}, eventually, tick, "the data Secret of a Machine whose node has not joined is rendered again")
	fx.WaitForCondition(t, f.Namespace, "pending", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)

	fixtures.Never(t, 3*time.Second, 200*time.Millisecond, func() bool {
		_, ok := fx.DataSecret(t, f.Namespace, "joined")
		return ok
	}, "the data Secret of a joined node is not rendered again")
	cfg := getConfig(t, f.Namespace, "joined")
	assert.Equal(t, ptr.To(true), cfg.Status.Initialization.DataSecretCreated)
	assert.Equal(t, "joined", cfg.Status.DataSecretName)
}

// A data Secret with no owner that exists before its config is reconciled, for a Machine that
// started provisioning (restored from a backup with the rest of a running cluster: the machine
// may have booted from it), is adopted, not rendered again, and gets the contract's owner
// reference and cluster-name label.
func TestRestoredDataSecretIsAdopted(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	restored := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "w0"},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": []byte(`{"ignition":{"version":"3.3.0"}}`), "format": []byte("ignition")},
	}
	require.NoError(t, env.Client.Create(ctx, restored))
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{}, func(m *clusterv1.Machine) { m.Spec.ProviderID = "nspawn://w0" })

	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	// Cluster API's patch helper writes the conditions first, then the rest of the status.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cfg := getConfig(t, f.Namespace, "w0")
		assert.Equal(c, ptr.To(true), cfg.Status.Initialization.DataSecretCreated)
		assert.Equal(c, "w0", cfg.Status.DataSecretName)
	}, eventually, tick)

	s, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	assert.Equal(t, restored.Data["value"], s.Data["value"], "an adopted Secret is not rendered again")
	assert.Equal(t, f.Cluster.Name, s.Labels[clusterv1.ClusterNameLabel])
	ctl := metav1.GetControllerOf(s)
	require.NotNil(t, ctl, "the config controls the adopted Secret")
	assert.Equal(t, getConfig(t, f.Namespace, "w0").UID, ctl.UID)
	assert.Empty(t, fixtures.TokenIDs(fx.TokensOf(t, f.Namespace, "w0")), "no join token for data that is not rendered")
}

// A data Secret in form with no owner, put there before the config rendered and before its
// Machine started provisioning, by anyone who may create Secrets in the namespace, is not
// adopted: the Machine's data is cabpi's own, rendered over it (with a join token of its own),
// the Secret is the config's, and a warning event says so.
func TestPlantedDataSecretIsRenderedOver(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	planted := []byte(`{"ignition":{"version":"3.3.0"},"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA planted"]}]}}`)
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "w0"},
		Type:       clusterv1.ClusterSecretType,
		Data:       map[string][]byte{"value": planted, "format": []byte("ignition")},
	}))
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})

	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Equal(c, "w0", getConfig(t, f.Namespace, "w0").Status.DataSecretName)
	}, eventually, tick)
	s, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	assert.NotEqual(t, planted, s.Data["value"], "the planted data is not served")
	assert.NotContains(t, string(s.Data["value"]), "planted")
	assert.Contains(t, string(s.Data["value"]), "kubeadm", "the config's own rendered data")
	ctl := metav1.GetControllerOf(s)
	require.NotNil(t, ctl)
	assert.Equal(t, getConfig(t, f.Namespace, "w0").UID, ctl.UID)
	assert.Len(t, fixtures.TokenIDs(fx.TokensOf(t, f.Namespace, "w0")), 1, "a join token of its own")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, eventsFor(c, f.Namespace, "w0", cabpiv1.DataSecretReplacedEventReason), "an event says the Secret was replaced")
	}, eventually, tick)
}

// A Secret with the data Secret's name that another object controls is never overwritten: the
// config says so in its condition.
func TestForeignDataSecretIsNotOverwritten(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "someone-else"}}
	require.NoError(t, env.Client.Create(ctx, owner))
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "w0", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true),
		}}},
		Data: map[string][]byte{"value": []byte("not ours")},
	}
	require.NoError(t, env.Client.Create(ctx, foreign))
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})

	cond := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.DataSecretConflictReason)
	assert.Contains(t, cond.Message, "ConfigMap someone-else")
	s, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	assert.Equal(t, []byte("not ours"), s.Data["value"])
	assert.Nil(t, getConfig(t, f.Namespace, "w0").Status.Initialization.DataSecretCreated)
}

// An uncontrolled Secret with the data Secret's name is adopted only when it is bootstrap data in
// form (type cluster.x-k8s.io/secret, format ignition, a value that parses as Ignition): anything
// else would be served to the machine. It is a DataSecretConflict, left as it is.
func TestUncontrolledSecretNotOursIsNotAdopted(t *testing.T) {
	ctx := t.Context()
	valid := []byte(`{"ignition":{"version":"3.3.0"}}`)
	cases := map[string]*corev1.Secret{
		"an Opaque cloud-config": {Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")}},
		"the right type with format cloud-config": {Type: clusterv1.ClusterSecretType,
			Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")}},
		"format ignition but not Ignition": {Type: clusterv1.ClusterSecretType,
			Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("ignition")}},
		"Ignition but Opaque": {Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{"value": valid, "format": []byte("ignition")}},
	}
	for name, foreign := range cases {
		t.Run(name, func(t *testing.T) {
			f := fx.NewCluster(t, fixtures.ClusterSetup{})
			foreign.ObjectMeta = metav1.ObjectMeta{Namespace: f.Namespace, Name: "w0"}
			require.NoError(t, env.Client.Create(ctx, foreign))
			f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})

			cond := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.DataSecretConflictReason)
			assert.Contains(t, cond.Message, "is not bootstrap data of this kind")
			s, ok := fx.DataSecret(t, f.Namespace, "w0")
			require.True(t, ok)
			assert.Equal(t, foreign.Data, s.Data, "left as it is")
			assert.Nil(t, metav1.GetControllerOf(s), "not adopted")
			assert.Nil(t, getConfig(t, f.Namespace, "w0").Status.Initialization.DataSecretCreated)
			assert.Empty(t, fx.TokensOf(t, f.Namespace, "w0"))
		})
	}
}

// Data once delivered stays delivered when the Cluster's infrastructureProvisioned turns false
// (around a clusterctl move): only data not rendered yet waits for the infrastructure.
func TestDeliveredDataSurvivesInfrastructureNotProvisioned(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	// A Cluster controller reconcile that read the Cluster before it was marked provisioned writes
	// infrastructureProvisioned=true when it ends, which can be after the flip below (it was, in
	// CI). Its status patch sets the phase too: once the manager's cache has the phase and the
	// condition, the reconciles that follow read a provisioned Cluster and leave the field alone.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cached := &clusterv1.Cluster{}
		if !assert.NoError(c, env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(f.Cluster), cached)) {
			return
		}
		assert.Equal(c, string(clusterv1.ClusterPhaseProvisioned), cached.Status.Phase)
		assert.True(c, conditions.IsTrue(cached, clusterv1.ClusterInfrastructureReadyCondition))
	}, eventually, tick, "Cluster API's Cluster controller records the provisioned infrastructure")

	// Both the infrastructure cluster and the Cluster say not provisioned (CAPI's Cluster
	// controller, running here, would otherwise set the Cluster's field back from the former).
	infra, err := external.GetObjectFromContractVersionedRef(ctx, env.Client, f.Cluster.Spec.InfrastructureRef, f.Namespace)
	require.NoError(t, err)
	infraBefore := infra.DeepCopy()
	require.NoError(t, unstructured.SetNestedField(infra.Object, false, "status", "initialization", "provisioned"))
	require.NoError(t, env.Client.Status().Patch(ctx, infra, client.MergeFrom(infraBefore)))
	// Cluster API's Cluster controller keeps a provisioned Cluster provisioned, and sets the field
	// from the infrastructure cluster it reads through the shared cache: until that cache has the
	// change, a reconcile triggered by the Cluster patch below would set the field back to true.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cached := infra.NewEmptyInstance().(*unstructured.Unstructured)
		if !assert.NoError(c, env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(infra), cached)) {
			return
		}
		provisioned, found, err := unstructured.NestedBool(cached.Object, "status", "initialization", "provisioned")
		assert.NoError(c, err)
		assert.True(c, found && !provisioned, "the manager's cache still shows the infrastructure provisioned")
	}, eventually, tick)
	cluster := &clusterv1.Cluster{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(f.Cluster), cluster))
	before := cluster.DeepCopy()
	cluster.Status.Initialization.InfrastructureProvisioned = ptr.To(false)
	require.NoError(t, env.Client.Status().Patch(ctx, cluster, client.MergeFrom(before)))
	// Our reconciler reads the Cluster through the same cache: w1 must not be created before it
	// has the change, or it renders against the old value.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cached := &clusterv1.Cluster{}
		if !assert.NoError(c, env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(f.Cluster), cached)) {
			return
		}
		assert.False(c, ptr.Deref(cached.Status.Initialization.InfrastructureProvisioned, true))
	}, eventually, tick)
	// A new config, not rendered yet, waits; its reconcile also proves the controller saw the flip.
	f.AddMachine(t, "w1", false, cabpiv1.IgnitionConfigSpec{})
	fx.WaitForCondition(t, f.Namespace, "w1", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.WaitingForClusterInfrastructureReason)

	// Make the delivered config reconcile after the flip, then check it kept its data.
	cfg := getConfig(t, f.Namespace, "w0")
	patch := client.MergeFrom(cfg.DeepCopy())
	cfg.Annotations = map[string]string{"example.com/touch": "1"}
	require.NoError(t, env.Client.Patch(ctx, cfg, patch))
	fixtures.Never(t, 3*time.Second, tick, func() bool {
		c := conditions.Get(getConfig(t, f.Namespace, "w0"), cabpiv1.DataSecretAvailableCondition)
		return c == nil || c.Status != metav1.ConditionTrue
	}, "delivered data stays available")
	assert.True(t, conditions.IsTrue(getConfig(t, f.Namespace, "w0"), cabpiv1.ReadyCondition))
}
