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

package rbac_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

const (
	eventually = time.Minute
	tick       = 100 * time.Millisecond
)

// A Cluster without control-plane provider, from kubeadm init to a worker join, rendered by the
// manager running as the ServiceAccount of config/rbac with OwnerReferencesPermissionEnforcement
// on: the cluster certificates it generates carry a blocking controller reference to the Cluster
// (clusters/finalizers), its data Secrets one to their IgnitionConfig (ignitionconfigs/finalizers),
// the init lock is taken and released, referenced Secrets and ConfigMaps are read, a warning
// event is written, and the API server refuses none of its requests.
func TestClusterBootstrapsAsServiceAccount(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.BeforeInit())
	ns, cluster := f.Namespace, f.Cluster

	// kubeadm init: the manager takes the init lock and generates the cluster certificates.
	f.AddMachine(t, "cp-0", true, cabpiv1.IgnitionConfigSpec{})
	fx.WaitForCondition(t, ns, "cp-0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	for _, suffix := range []string{"ca", "etcd", "proxy", "sa"} {
		s := &corev1.Secret{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster.Name + "-" + suffix}, s))
		assertBlockingControllerRef(t, s, "Cluster", cluster.UID)
	}
	config := &cabpiv1.IgnitionConfig{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cp-0"}, config))
	initData, ok := fx.DataSecret(t, ns, "cp-0")
	require.True(t, ok, "the data Secret of cp-0 exists")
	assertBlockingControllerRef(t, initData, "IgnitionConfig", config.UID)
	lock := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster.Name + "-lock"}, lock),
		"the init lock is held until the control plane is initialized")

	// A worker joins: its config reads a Secret and a ConfigMap that does not exist yet (a
	// warning event says so), and its join token is created in the workload cluster.
	require.NoError(t, env.MarkControlPlaneInitialized(ctx, cluster))
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "files"},
		Data:       map[string][]byte{"motd": []byte("hello")},
	}))
	f.AddMachine(t, "w-0", false, cabpiv1.IgnitionConfigSpec{
		Variant: cabpiv1.VariantFlatcar,
		Files: []cabpiv1.File{{Path: "/etc/motd.d/cabpi.conf", ContentFrom: &cabpiv1.FileSource{
			Secret: cabpiv1.KeyReference{Name: "files", Key: "motd"},
		}}},
		Butane: cabpiv1.ButaneSpec{ContentFrom: &cabpiv1.ButaneSource{
			ConfigMap: &cabpiv1.KeyReference{Name: "butane", Key: "config.bu"},
		}},
	})
	fx.WaitForCondition(t, ns, "w-0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.ReferenceNotFoundReason)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list := &eventsv1.EventList{}
		if !assert.NoError(c, env.Client.List(ctx, list, client.InNamespace(ns))) {
			return
		}
		found := false
		for _, e := range list.Items {
			found = found || e.Regarding.Name == "w-0" && e.Reason == cabpiv1.ReferenceNotFoundReason
		}
		assert.True(c, found, "the warning event reached the API server")
	}, eventually, tick)
	require.NoError(t, env.Client.Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "butane"},
		Data:       map[string]string{"config.bu": "variant: flatcar\nversion: 1.0.0\n"},
	}))
	// The config is looked at again in 30s anyway; a change brings that forward.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-0"}, config))
	before := config.DeepCopy()
	config.Annotations = map[string]string{"test.cabpi.io/poke": "1"}
	require.NoError(t, env.Client.Patch(ctx, config, client.MergeFrom(before)))

	for _, name := range []string{"cp-0", "w-0"} {
		fx.WaitForCondition(t, ns, name, cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	}
	worker, ok := fx.DataSecret(t, ns, "w-0")
	require.True(t, ok, "the data Secret of w-0 exists")
	assertBlockingControllerRef(t, worker, "IgnitionConfig", config.UID)
	tokenID := worker.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
	require.NotEmpty(t, tokenID, "the worker joins with a token of ours")
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + tokenID}, &corev1.Secret{}),
		"the join token was created in the workload cluster (with the kubeconfig Secret's credentials)")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(lock), &corev1.ConfigMap{})
		assert.True(c, apierrors.IsNotFound(err), "the init lock is released once the control plane is initialized (got %v)", err)
	}, eventually, tick)

	assert.Empty(t, cabpi.denied(), "requests of the manager the API server refused")
}

// The manager leads through the leader election Role: it holds the lease in its namespace and
// recorded the core/v1 event of that.
func TestLeaderElectionAsServiceAccount(t *testing.T) {
	ctx := t.Context()
	lease := &coordinationv1.Lease{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: managerNamespace, Name: leaderElectionID}, lease))
	assert.NotEmpty(t, ptr.Deref(lease.Spec.HolderIdentity, ""))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		list := &corev1.EventList{}
		if !assert.NoError(c, env.Client.List(ctx, list, client.InNamespace(managerNamespace))) {
			return
		}
		found := false
		for _, e := range list.Items {
			found = found || e.Reason == "LeaderElection" && e.InvolvedObject.Name == leaderElectionID
		}
		assert.True(c, found, "the leader election event was recorded")
	}, eventually, tick)
}

// assertBlockingControllerRef checks that obj's controller is the kind with uid, and that the
// reference blocks the owner's deletion (what the admission plugin holds to finalizers rights).
func assertBlockingControllerRef(t *testing.T, obj metav1.Object, kind string, uid types.UID) {
	t.Helper()
	ref := metav1.GetControllerOf(obj)
	require.NotNil(t, ref, "%s has no controller", obj.GetName())
	assert.Equal(t, kind, ref.Kind, obj.GetName())
	assert.Equal(t, uid, ref.UID, obj.GetName())
	assert.True(t, ptr.Deref(ref.BlockOwnerDeletion, false), "%s: blockOwnerDeletion", obj.GetName())
}
