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
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// A snippet with thousands of errors (from a Secret, which admission never sees) gives a bounded
// condition message and event note: the status patch and the event go through, and say how much
// was left out.
func TestLongMessagesAreBounded(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	var doc strings.Builder
	doc.WriteString("variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n")
	for i := range 1500 {
		fmt.Fprintf(&doc, "    - path: relative/path/number/%d\n", i)
	}
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "butane"}, Data: map[string][]byte{"config.bu": []byte(doc.String())}}))
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{ContentFrom: &cabpiv1.ButaneSource{
		Secret: &cabpiv1.KeyReference{Name: "butane", Key: "config.bu"}}}})

	c := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.InvalidButaneReason)
	assert.LessOrEqual(t, len(c.Message), 8*1024)
	assert.Regexp(t, `… and \d+ more$`, c.Message)
	assert.Contains(t, c.Message, "error at $.storage.files.0.path", "the first errors are kept")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		events := eventsFor(c, f.Namespace, "w0", cabpiv1.InvalidButaneReason)
		assert.NotEmpty(c, events, "a warning event reached the API server")
		for _, e := range events {
			assert.LessOrEqual(c, len(e.Note), 1024)
		}
	}, eventually, tick)
}

// Data larger than a Secret holds is refused before any join token exists: a DataTooLarge
// condition with the sizes, no Secret, no token, however often it is retried.
func TestOversizeDataIsRefusedWithoutTokens(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	// Random text: gzip would shrink a repeated byte to nothing (file contents are compressed).
	rnd := rand.New(rand.NewPCG(12, 1))
	big := func() string {
		raw := make([]byte, 450*1024)
		for i := range raw {
			raw[i] = byte(rnd.Uint32())
		}
		return base64.StdEncoding.EncodeToString(raw)
	}
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{
		{Path: "/opt/big-1", Content: big()}, {Path: "/opt/big-2", Content: big()},
	}})
	c := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.DataTooLargeReason)
	assert.Contains(t, c.Message, "over the 1048568 a Secret holds")
	fixtures.Never(t, 3*time.Second, 200*time.Millisecond, func() bool { return len(fx.TokensOf(t, f.Namespace, "w0")) > 0 }, "no join token for data that cannot be stored")
	_, ok := fx.DataSecret(t, f.Namespace, "w0")
	assert.False(t, ok)
}

// A Machine's join token that disappears before its node joined (the manager was down past the
// TTL, the token cleaner removed it): a Machine not provisioned yet gets new data with a fresh
// token; one already provisioned with the data is a JoinTokenLost condition, data untouched.
func TestLostJoinToken(t *testing.T) {
	ctx := t.Context()
	deleteToken := func(t *testing.T, id string) {
		t.Helper()
		require.NoError(t, env.Client.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
			Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}}))
	}
	t.Run("machine not provisioned: new data, fresh token", func(t *testing.T) {
		f := fx.NewCluster(t, fixtures.ClusterSetup{})
		f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})
		fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
		before, _ := fx.DataSecret(t, f.Namespace, "w0")
		oldID := before.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
		deleteToken(t, oldID)

		require.EventuallyWithT(t, func(c *assert.CollectT) {
			after, ok := fx.DataSecret(t, f.Namespace, "w0")
			if !assert.True(c, ok) {
				return
			}
			newID := after.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
			assert.NotEqual(c, oldID, newID, "a fresh token")
			assert.Equal(c, []string{newID}, fixtures.TokenIDs(fx.TokensOf(t, f.Namespace, "w0")), "the fresh token exists, and only it")
			assert.Contains(c, fileIn(t, after.Data["value"], "/etc/kubeadm.yml"), "token: "+newID+".")
		}, 3*tokenTTL, tick)
		fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	})
	t.Run("machine provisioned: JoinTokenLost", func(t *testing.T) {
		f := fx.NewCluster(t, fixtures.ClusterSetup{})
		m := f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})
		fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
		latest := &clusterv1.Machine{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(m), latest))
		patch := client.MergeFrom(latest.DeepCopy())
		latest.Spec.ProviderID = "test:///w0"
		require.NoError(t, env.Client.Patch(ctx, latest, patch))
		// The controller reads Machines from the manager's cache: a reconcile that does not see
		// the providerID yet takes the Machine for not provisioned, and renders new data once the
		// token is gone.
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cached := &clusterv1.Machine{}
			assert.NoError(c, env.Manager.GetClient().Get(ctx, client.ObjectKeyFromObject(m), cached))
			assert.Equal(c, "test:///w0", cached.Spec.ProviderID, "cabpi's manager cache has the providerID")
		}, eventually, tick)
		before, _ := fx.DataSecret(t, f.Namespace, "w0")
		id := before.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
		deleteToken(t, id)

		c := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.JoinTokenLostReason)
		assert.Contains(t, c.Message, "join token "+id)
		assert.Contains(t, c.Message, "delete the Machine")
		fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionFalse, cabpiv1.NotReadyReason)
		after, _ := fx.DataSecret(t, f.Namespace, "w0")
		assert.Equal(t, before.Data["value"], after.Data["value"], "the data the machine booted with is not changed")
		assert.Empty(t, fx.TokensOf(t, f.Namespace, "w0"), "no token the machine could not use")
	})
}

// A manager that died after creating a config's join token and before storing its data leaves
// that token behind; the next try finds it (same ID) and puts it in the data, so retries leave
// one token per config.
func TestTokenOfAnInterruptedRenderIsReused(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddConfig(t, "w0", cabpiv1.IgnitionConfigSpec{})
	cfg := getConfig(t, f.Namespace, "w0")
	id := controllers.JoinTokenID(cfg.UID, "")
	left := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:               []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:           []byte("0123456789abcdef"),
			bootstrapapi.BootstrapTokenExpirationKey:       []byte(time.Now().Add(time.Minute).UTC().Format(time.RFC3339)),
			bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
			bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
			bootstrapapi.BootstrapTokenDescriptionKey:      []byte(fmt.Sprintf("join token created by cabpi for IgnitionConfig %s/w0", f.Namespace)),
		},
	}
	require.NoError(t, env.Client.Create(ctx, left))
	require.NoError(t, env.Client.Create(ctx, testenv.NewGenericInfraMachine(f.Namespace, "w0")))
	require.NoError(t, env.Client.Create(ctx, testenv.NewMachine(f.Cluster, "w0", false)))

	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	data, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	assert.Equal(t, id, data.Annotations[cabpiv1.BootstrapTokenIDAnnotation])
	assert.Contains(t, fileIn(t, data.Data["value"], "/etc/kubeadm.yml"), "token: "+id+".0123456789abcdef")
	assert.Equal(t, []string{id}, fixtures.TokenIDs(fx.TokensOf(t, f.Namespace, "w0")), "one token")
}
