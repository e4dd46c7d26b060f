package controllers_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/test/builder"

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/testenv"
)

// A MachinePool keeps creating instances from one data Secret, so its join token is rotated
// before it expires and the Secret rewritten in place; the rotated data still parses.
func TestMachinePoolTokenRotation(t *testing.T) {
	ctx := t.Context()
	f := newCluster(t, clusterSetup{})
	cfg := &bootstrapv1.IgnitionConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "pool", Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
	}
	require.NoError(t, env.Client.Create(ctx, cfg))
	require.NoError(t, env.Client.Create(ctx, builder.InfrastructureMachinePool(f.ns, "pool").Build()))
	pool := &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: "pool", Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
		Spec: clusterv1.MachinePoolSpec{
			ClusterName: f.cluster.Name,
			Replicas:    ptr.To[int32](2),
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: f.cluster.Name,
				Version:     testenv.KubernetesVersion,
				Bootstrap:   clusterv1.Bootstrap{ConfigRef: testenv.IgnitionConfigRef("pool")},
				InfrastructureRef: clusterv1.ContractVersionedObjectReference{
					APIGroup: builder.InfrastructureGroupVersion.Group, Kind: builder.GenericInfrastructureMachinePoolKind, Name: "pool",
				},
			}},
		},
	}
	require.NoError(t, env.Client.Create(ctx, pool))

	waitForCondition(t, f.ns, "pool", bootstrapv1.DataSecretAvailableCondition, metav1.ConditionTrue, bootstrapv1.DataSecretAvailableReason)
	first, _ := dataSecret(t, f.ns, "pool")
	firstID := first.Annotations[bootstrapv1.BootstrapTokenIDAnnotation]
	require.NotEmpty(t, firstID)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		mp := &clusterv1.MachinePool{}
		assert.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(pool), mp))
		assert.Equal(c, "pool", ptr.Deref(mp.Spec.Template.Spec.Bootstrap.DataSecretName, ""))
	}, eventually, tick)

	// Past half its TTL the token is replaced and the same Secret rewritten.
	var rotatedID string
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s := &corev1.Secret{}
		if assert.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "pool"}, s), "the Secret stays") {
			rotatedID = s.Annotations[bootstrapv1.BootstrapTokenIDAnnotation]
			assert.NotEqual(c, firstID, rotatedID)
		}
	}, 3*tokenTTL, tick, "the MachinePool's token is rotated before it expires")
	rotated, _ := dataSecret(t, f.ns, "pool")
	assert.Equal(t, first.UID, rotated.UID, "the Secret is rewritten in place, not recreated")
	assert.NotEqual(t, first.Data["value"], rotated.Data["value"])
	assert.Contains(t, fileIn(t, rotated.Data["value"], "/etc/kubeadm.yml"), "token: "+rotatedID+".", "the new token is in the data")
	assert.True(t, tokenExpiration(t, rotatedID).After(time.Now().Add(tokenTTL/2)), "the new token has a fresh TTL")
	// The old token is left to expire: instances booted from the old data may still be joining.
	tokenSecret(t, firstID)
}
