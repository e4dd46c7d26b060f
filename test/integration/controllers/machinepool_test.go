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
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// A MachinePool keeps creating instances from one data Secret, so its join token is rotated
// before it expires and the Secret rewritten in place; the rotated data still parses.
func TestMachinePoolTokenRotation(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	pool := f.AddMachinePool(t, "pool", cabpiv1.IgnitionConfigSpec{})

	fx.WaitForCondition(t, f.Namespace, "pool", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	first, _ := fx.DataSecret(t, f.Namespace, "pool")
	firstID := first.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
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
		if assert.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: "pool"}, s), "the Secret stays") {
			rotatedID = s.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
			assert.NotEqual(c, firstID, rotatedID)
		}
	}, 3*tokenTTL, tick, "the MachinePool's token is rotated before it expires")
	rotated, _ := fx.DataSecret(t, f.Namespace, "pool")
	assert.Equal(t, first.UID, rotated.UID, "the Secret is rewritten in place, not recreated")
	assert.NotEqual(t, first.Data["value"], rotated.Data["value"])
	assert.Contains(t, fileIn(t, rotated.Data["value"], "/etc/kubeadm.yml"), "token: "+rotatedID+".", "the new token is in the data")
	assert.True(t, tokenExpiration(t, rotatedID).After(time.Now().Add(tokenTTL/2)), "the new token has a fresh TTL")
	// The old token is left to expire: instances booted from the old data may still be joining.
	tokenSecret(t, firstID)
}

// A rotation that fails (here: the config's spec was changed to something that does not render)
// keeps the current data, which still works until its token expires: the Secret stays as it is,
// DataSecretAvailable stays True (the MachinePool is not told its bootstrap data went away), and
// the failure is a warning event. Once the token has expired, the condition turns False.
func TestMachinePoolFailedRotationKeepsData(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddMachinePool(t, "pool", cabpiv1.IgnitionConfigSpec{})
	fx.WaitForCondition(t, f.Namespace, "pool", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	before, _ := fx.DataSecret(t, f.Namespace, "pool")

	cfg := getConfig(t, f.Namespace, "pool")
	patch := client.MergeFrom(cfg.DeepCopy())
	cfg.Spec.Butane.Inline = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files: {\n"
	require.NoError(t, env.Client.Patch(ctx, cfg, patch))

	// When the test sees the event or the condition says nothing of when they happened (a loaded
	// machine sees them late); the times the controller recorded do: the warning event carries the
	// time of the failed rotation, the condition the time it turned False.
	tokenID := before.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
	expiration := tokenExpiration(t, tokenID)
	var failedAt time.Time
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		failedAt = time.Time{}
		for _, e := range eventsFor(c, f.Namespace, "pool", cabpiv1.InvalidButaneReason) {
			// Repeated failures are one event with a series: its eventTime is the first's.
			if strings.Contains(e.Note, "MachinePool join token not rotated") && (failedAt.IsZero() || e.EventTime.Time.Before(failedAt)) {
				failedAt = e.EventTime.Time
			}
		}
		assert.False(c, failedAt.IsZero(), "a warning event says the rotation failed")
	}, 3*tokenTTL, tick)
	assert.True(t, failedAt.Before(expiration), "the rotation failed at %s, before the token expires at %s", failedAt, expiration)

	// Once the token has expired the data joins nothing any more: now the condition says so, and
	// not before (lastTransitionTime has whole seconds, as the expiration).
	cond := fx.WaitForCondition(t, f.Namespace, "pool", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.InvalidButaneReason)
	assert.Contains(t, cond.Message, "join token expired")
	assert.False(t, cond.LastTransitionTime.Time.Before(expiration),
		"DataSecretAvailable turned False at %s, before the token expired at %s", cond.LastTransitionTime.Time, expiration)
	// Whatever the condition says, the data stays as it was: no other data was ever stored.
	cfg = getConfig(t, f.Namespace, "pool")
	assert.Equal(t, ptr.To(true), cfg.Status.Initialization.DataSecretCreated)
	after, ok := fx.DataSecret(t, f.Namespace, "pool")
	require.True(t, ok)
	assert.Equal(t, before.Data["value"], after.Data["value"], "the current data is kept")
	assert.Equal(t, tokenID, after.Annotations[cabpiv1.BootstrapTokenIDAnnotation])
	assert.True(t, tokenExpiration(t, tokenID).Before(time.Now()))
}
