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
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// A worker Machine referencing an IgnitionConfig, next to CAPI's own Machine controller: the
// whole contract from config to the files on the node.
func TestWorkerJoinContract(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	spec := cabpiv1.IgnitionConfigSpec{
		Variant:             cabpiv1.VariantFlatcar,
		PreKubeadmCommands:  []string{"echo pre"},
		PostKubeadmCommands: []string{"echo post"},
		Butane:              cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.1.0\nstorage:\n  files:\n  - path: /etc/hello\n    mode: 0640\n    contents:\n      inline: hi\n"},
	}
	machine := f.AddMachine(t, "w0", false, spec)

	// CAPI's Machine controller surfaces our status on the Machine.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := &clusterv1.Machine{}
		if !assert.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(machine), m)) {
			return
		}
		assert.Equal(c, "w0", ptr.Deref(m.Spec.Bootstrap.DataSecretName, ""))
		assert.True(c, ptr.Deref(m.Status.Initialization.BootstrapDataSecretCreated, false))
	}, eventually, tick)

	cfg := getConfig(t, f.Namespace, "w0")
	assert.Equal(t, "w0", cfg.Status.DataSecretName)
	assert.True(t, ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false))
	assert.Equal(t, cfg.Generation, cfg.Status.ObservedGeneration)
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	owner := metav1.GetControllerOf(cfg)
	require.NotNil(t, owner, "CAPI sets the Machine as the config's controller")
	assert.Equal(t, "Machine", owner.Kind)

	// The data Secret, as the contract and DEVELOPERS.md describe it.
	secret, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	assert.Equal(t, clusterv1.ClusterSecretType, secret.Type)
	assert.Equal(t, f.Cluster.Name, secret.Labels[clusterv1.ClusterNameLabel])
	ctl := metav1.GetControllerOf(secret)
	require.NotNil(t, ctl)
	assert.Equal(t, "IgnitionConfig", ctl.Kind)
	assert.Equal(t, cfg.UID, ctl.UID)
	assert.ElementsMatch(t, []string{"value", "format"}, keys(secret.Data))
	assert.Equal(t, "ignition", string(secret.Data["format"]))

	// The join token lives in the workload cluster; only its ID is on the Secret.
	tokenID := secret.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
	require.Len(t, tokenID, 6)
	token := tokenSecret(t, tokenID)
	assert.Equal(t, bootstrapapi.SecretTypeBootstrapToken, token.Type)
	assert.Equal(t, "true", string(token.Data[bootstrapapi.BootstrapTokenUsageAuthentication]))
	fullToken := tokenID + "." + string(token.Data[bootstrapapi.BootstrapTokenSecretKey])

	// Real Ignition: the config parses, at the version the snippet asks for (flatcar 1.1.0 -> 3.4.0).
	value := secret.Data["value"]
	_, rpt, err := ignconfig.Parse(value)
	require.NoError(t, err, rpt.String())
	assert.Contains(t, string(value), `"version":"3.4.0"`)

	// ... and applied by the real ignition-apply it writes the node's files.
	root := ignitionapply.Apply(t, value)
	kubeadmYAML := readFile(t, root, "/etc/kubeadm.yml", 0o600)
	assert.Contains(t, kubeadmYAML, "kind: JoinConfiguration")
	assert.Contains(t, kubeadmYAML, fullToken)
	assert.Contains(t, kubeadmYAML, "node.cluster.x-k8s.io/uninitialized")
	assert.Contains(t, kubeadmYAML, env.APIEndpoint().String())
	assert.Contains(t, kubeadmYAML, "sha256:")
	script := readFile(t, root, "/etc/kubeadm.sh", 0o700)
	assertInOrder(t, script, "echo pre", "kubeadm join --config /etc/kubeadm.yml", "/run/cluster-api/bootstrap-success.complete", "rm -f /etc/kubeadm.yml", "echo post")
	readFile(t, root, "/etc/hello", 0o640)
	assert.True(t, ignitionapply.UnitEnabled(t, root, "kubeadm.service"), "kubeadm.service is enabled")

	// The Secret is not churned by later reconciles.
	rv := secret.ResourceVersion
	touch(t, cfg)
	fixtures.Never(t, 2*time.Second, 200*time.Millisecond, func() bool {
		s, ok := fx.DataSecret(t, f.Namespace, "w0")
		require.True(t, ok, "the data Secret must stay")
		if s.ResourceVersion == rv {
			return false
		}
		// Say who rewrote it, so a failure here points at the writer.
		for _, mf := range s.ManagedFields {
			t.Logf("data Secret field manager %q operation %s at %v", mf.Manager, mf.Operation, mf.Time)
		}
		return true
	}, "the data Secret must not be rewritten")
}

// The join token is refreshed while the Machine has no node, then left to expire.
func TestJoinTokenRefreshedUntilNodeJoins(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	machine := f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	secret, _ := fx.DataSecret(t, f.Namespace, "w0")
	id := secret.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
	first := tokenExpiration(t, id)
	assert.Equal(t, []string{id}, fixtures.TokenIDs(fx.TokensOf(t, f.Namespace, "w0")), "the token's description names its config")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s := &corev1.Secret{}
		if assert.NoError(c, env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, s)) {
			exp, err := time.Parse(time.RFC3339, string(s.Data[bootstrapapi.BootstrapTokenExpirationKey]))
			assert.NoError(c, err)
			assert.True(c, exp.After(first))
		}
	}, 3*tokenTTL, tick, "the token's expiration is extended while the node has not joined")

	joinNode(t, machine)
	// A token check that read the Machine before the join may still refresh the token: settled is
	// taken once the token has gone a whole check interval unwritten.
	quiet(t, checkInterval, tokenObject(id))
	settled := tokenExpiration(t, id)
	// Two full check intervals (TTL/3 each) without a refresh: the token is left to expire.
	fixtures.Never(t, tokenTTL*2/3+2*time.Second, 500*time.Millisecond,
		func() bool { return tokenExpiration(t, id).After(settled.Add(time.Second)) }, "the token of a joined node is not refreshed")
	// The data Secret is unchanged: a Machine's data is rendered once.
	after, _ := fx.DataSecret(t, f.Namespace, "w0")
	assert.Equal(t, secret.Data["value"], after.Data["value"])
}

// Bad input never produces a Secret nor a token: it produces a condition a user can act on.
func TestBadInputGivesConditionAndNoSecret(t *testing.T) {
	cases := []struct {
		name    string
		setup   fixtures.ClusterSetup
		spec    cabpiv1.IgnitionConfigSpec
		version string
		reason  string
		message string
	}{
		{name: "invalid butane", reason: cabpiv1.InvalidButaneReason, message: "line",
			spec: cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.0.0\nstorage:\n  files: {\n"}}},
		{name: "wrong variant", reason: cabpiv1.InvalidButaneReason, message: "variant",
			spec: cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFCOS, Butane: cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.0.0\n"}}},
		{name: "snippet writes an owned path", reason: cabpiv1.OwnedPathConflictReason, message: "/etc/kubeadm.yml",
			spec: cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n  - path: /etc/kubeadm.yml\n    contents:\n      inline: x\n"}}},
		{name: "file at the sentinel", reason: cabpiv1.OwnedPathConflictReason, message: "bootstrap-success.complete",
			spec: cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{{Path: "/run/cluster-api/bootstrap-success.complete", Content: "x"}}}},
		{name: "unsupported Kubernetes version", reason: cabpiv1.UnsupportedKubernetesVersionReason, version: "v1.21.3", message: "1.21"},
		{name: "pinned Ignition version the variant lacks", reason: cabpiv1.UnsupportedIgnitionVersionReason, message: "3.5.0",
			spec: cabpiv1.IgnitionConfigSpec{IgnitionVersion: "3.5.0"}},
		{name: "missing CA secret", setup: fixtures.ClusterSetup{Certificates: fixtures.NoCertificates}, reason: cabpiv1.WaitingForClusterCAReason, message: "c1-ca"},
		{name: "missing endpoint", setup: fixtures.ClusterSetup{NoEndpoint: true}, reason: cabpiv1.WaitingForControlPlaneEndpointReason, message: "controlPlaneEndpoint"},
		{name: "referenced Secret missing", reason: cabpiv1.ReferenceNotFoundReason, message: `Secret "nope"`,
			spec: cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{{Path: "/etc/x", ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "nope", Key: "k"}}}}}},
		{name: "infrastructure not provisioned", setup: fixtures.ClusterSetup{NoInfrastructure: true}, reason: cabpiv1.WaitingForClusterInfrastructureReason,
			message: "infrastructureProvisioned"},
		{name: "control plane not initialized", setup: fixtures.ClusterSetup{NoControlPlaneInit: true}, reason: cabpiv1.WaitingForControlPlaneInitializedReason,
			message: "ControlPlaneInitialized"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := fx.NewCluster(t, tc.setup)
			f.AddMachine(t, "w0", false, tc.spec, func(m *clusterv1.Machine) {
				if tc.version != "" {
					m.Spec.Version = tc.version
				}
			})
			cond := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, tc.reason)
			require.NotEmpty(t, tc.message, "every case says what the message must mention")
			assert.Contains(t, cond.Message, tc.message)
			fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionFalse, cabpiv1.NotReadyReason)
			_, exists := fx.DataSecret(t, f.Namespace, "w0")
			assert.False(t, exists, "no data Secret for bad input")
			assert.Nil(t, getConfig(t, f.Namespace, "w0").Status.Initialization.DataSecretCreated)
			// Other tests' configs share the workload cluster: count this config's tokens only.
			assert.Empty(t, fixtures.TokenIDs(fx.TokensOf(t, f.Namespace, "w0")), "no join token is created for a config that cannot render")
		})
	}
}

// A paused Cluster stops reconciliation with a Paused condition; unpausing resumes it.
func TestPausedClusterIsNotReconciled(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{NoControlPlaneInit: true})
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})
	// Owned by its Machine and waiting: now pause the Cluster (CAPI pauses too).
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.WaitingForControlPlaneInitializedReason)
	setPaused(t, f.Cluster, true)
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.PausedCondition, metav1.ConditionTrue, clusterv1.PausedReason)

	// What would let it render happens while paused: nothing is rendered.
	require.NoError(t, env.MarkControlPlaneInitialized(ctx, f.Cluster))
	touch(t, getConfig(t, f.Namespace, "w0"))
	fixtures.Never(t, 2*time.Second, 200*time.Millisecond, func() bool { _, ok := fx.DataSecret(t, f.Namespace, "w0"); return ok },
		"a paused config is not rendered")

	setPaused(t, f.Cluster, false)
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.PausedCondition, metav1.ConditionFalse, clusterv1.NotPausedReason)
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
}

func setPaused(t *testing.T, cluster *clusterv1.Cluster, paused bool) {
	t.Helper()
	patch := []byte(fmt.Sprintf(`{"spec":{"paused":%t}}`, paused))
	require.NoError(t, env.Client.Patch(t.Context(), cluster, client.RawPatch(types.MergePatchType, patch)))
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// readFile reads path under root, asserting its mode.
func readFile(t *testing.T, root, path string, mode os.FileMode) string {
	t.Helper()
	full := filepath.Join(root, path)
	st, err := os.Stat(full)
	require.NoError(t, err, "%s is written", path)
	assert.Equal(t, mode, st.Mode().Perm(), "mode of %s", path)
	data, err := os.ReadFile(full)
	require.NoError(t, err)
	return string(data)
}

func assertInOrder(t *testing.T, s string, parts ...string) {
	t.Helper()
	at := 0
	for _, p := range parts {
		i := strings.Index(s[at:], p)
		if !assert.GreaterOrEqual(t, i, 0, "%q after position %d in:\n%s", p, at, s) {
			return
		}
		at += i + len(p)
	}
}

// touch changes an annotation of the config, triggering a reconcile.
func touch(t *testing.T, cfg *cabpiv1.IgnitionConfig) {
	t.Helper()
	patch := client.MergeFrom(cfg.DeepCopy())
	if cfg.Annotations == nil {
		cfg.Annotations = map[string]string{}
	}
	cfg.Annotations["test.cabpi.io/touched"] = time.Now().String()
	require.NoError(t, env.Client.Patch(t.Context(), cfg, patch))
}
