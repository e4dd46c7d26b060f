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
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootcheck"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// delivered is what a test remembers of a config's data Secret to compare with later data.
type delivered struct {
	uid     types.UID
	tokenID string
	token   string // the whole join token, as the data carries it
	hash    string
	value   []byte
}

func deliveredData(t *testing.T, ns, name string) delivered {
	t.Helper()
	fx.WaitForCondition(t, ns, name, cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	s, ok := fx.DataSecret(t, ns, name)
	require.True(t, ok)
	d := delivered{uid: s.UID, tokenID: s.Annotations[cabpiv1.BootstrapTokenIDAnnotation], value: s.Data["value"]}
	if d.tokenID != "" {
		d.token = d.tokenID + "." + string(tokenSecret(t, d.tokenID).Data[bootstrapapi.BootstrapTokenSecretKey])
	}
	// The status patch that records the digest follows the Secret write.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		d.hash = getConfig(t, ns, name).Status.DataInputsHash
		assert.True(c, strings.HasPrefix(d.hash, "sha256:"), "status.dataInputsHash is recorded with the data: %q", d.hash)
	}, eventually, tick)
	return d
}

// waitForRerender waits until the config's data Secret differs from before and its digest is
// recorded, and returns the new data; it asserts the Secret was updated in place with the same
// join token (only one token exists for the config).
func waitForRerender(t *testing.T, ns, name string, before delivered) delivered {
	t.Helper()
	var after delivered
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, ok := fx.DataSecret(t, ns, name)
		// Compared, never printed: the data carries the join token.
		if !assert.True(c, ok) || !assert.False(c, bytes.Equal(before.value, s.Data["value"]), "the data is rendered again") {
			return
		}
		cfg := getConfig(t, ns, name)
		if !assert.NotEqual(c, before.hash, cfg.Status.DataInputsHash, "the new digest is recorded") {
			return
		}
		after = delivered{uid: s.UID, tokenID: s.Annotations[cabpiv1.BootstrapTokenIDAnnotation], hash: cfg.Status.DataInputsHash, value: s.Data["value"]}
	}, eventually, tick)
	assert.Equal(t, before.uid, after.uid, "the data Secret is updated in place, not recreated")
	assert.Equal(t, before.tokenID, after.tokenID, "the same join token ID annotation")
	if before.tokenID != "" {
		after.token = before.token
		assert.Contains(t, fileIn(t, after.value, "/etc/kubeadm.yml"), "token: "+before.token, "the same join token in the data")
		assert.Equal(t, []string{before.tokenID}, fixtures.TokenIDs(fx.TokensOf(t, ns, name)), "no second token")
	}
	fx.WaitForCondition(t, ns, name, cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	fx.WaitForCondition(t, ns, name, cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	return after
}

// patchSpec changes the config's spec with mutate.
func patchSpec(t *testing.T, ns, name string, mutate func(*cabpiv1.IgnitionConfigSpec)) {
	t.Helper()
	cfg := getConfig(t, ns, name)
	patch := client.MergeFrom(cfg.DeepCopy())
	mutate(&cfg.Spec)
	require.NoError(t, env.Client.Patch(t.Context(), cfg, patch))
}

// setSecretKey creates or updates the Secret name in ns with key=value, with the cluster-name
// label of cluster when labelled.
func setSecretKey(t *testing.T, ns, name, key, value, cluster string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if cluster != "" {
		s.Labels = map[string]string{clusterv1.ClusterNameLabel: cluster}
	}
	s.Data = map[string][]byte{key: []byte(value)}
	err := env.Client.Create(t.Context(), s)
	if err == nil {
		return
	}
	existing := &corev1.Secret{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(s), existing))
	existing.Data = s.Data
	require.NoError(t, env.Client.Update(t.Context(), existing))
}

// settled waits until obj (read into the given type) has not been written for a second: no
// event of it is on its way to the controller any more.
func settled(t *testing.T, obj client.Object, key client.ObjectKey) {
	t.Helper()
	const quiet = time.Second
	rv, since := "", time.Now()
	require.Eventually(t, func() bool {
		require.NoError(t, env.Client.Get(t.Context(), key, obj))
		if obj.GetResourceVersion() != rv {
			rv, since = obj.GetResourceVersion(), time.Now()
		}
		return time.Since(since) >= quiet
	}, eventually, tick, "%T %s keeps being written", obj, key)
}

// userToken is a join token of the user's own (spec): the controller makes no token, so nothing
// but a watch or its own requeue looks at the config again after its data is stored.
const userToken = "abcdef.0123456789abcdef"

func withUserToken(spec cabpiv1.IgnitionConfigSpec) cabpiv1.IgnitionConfigSpec {
	spec.JoinConfiguration.Discovery.BootstrapToken = kubeadmv1.BootstrapTokenDiscovery{Token: userToken}
	return spec
}

// (a) Before the Machine starts provisioning, a change to the spec, or to a referenced Secret's
// key, renders the data again in place: same Secret, same join token, new digest, and the new
// data applies with the real ignition-apply.
func TestRerenderBeforeProvisioning(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	setSecretKey(t, f.Namespace, "app-secret", "key", "secret-1", f.Cluster.Name)
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{
		{Path: "/etc/app/plain.conf", Content: "plain-1"},
		{Path: "/etc/app/from-secret.conf", ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "app-secret", Key: "key"}}},
	}})
	first := deliveredData(t, f.Namespace, "w0")
	require.NotEmpty(t, first.tokenID)
	assert.Equal(t, "plain-1", fileIn(t, first.value, "/etc/app/plain.conf"))

	patchSpec(t, f.Namespace, "w0", func(s *cabpiv1.IgnitionConfigSpec) { s.Files[0].Content = "plain-2" })
	second := waitForRerender(t, f.Namespace, "w0", first)
	root := ignitionapply.Apply(t, second.value)
	assert.Equal(t, "plain-2", readFile(t, root, "/etc/app/plain.conf", 0o644))
	assert.Equal(t, "secret-1", readFile(t, root, "/etc/app/from-secret.conf", 0o644))
	assert.Contains(t, readFile(t, root, "/etc/kubeadm.yml", 0o600), "token: "+first.token)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, eventsFor(c, f.Namespace, "w0", cabpiv1.RerenderedEventReason), "a Normal event says the data was rendered again")
	}, eventually, tick)

	setSecretKey(t, f.Namespace, "app-secret", "key", "secret-2", f.Cluster.Name)
	third := waitForRerender(t, f.Namespace, "w0", second)
	root = ignitionapply.Apply(t, third.value)
	assert.Equal(t, "plain-2", readFile(t, root, "/etc/app/plain.conf", 0o644))
	assert.Equal(t, "secret-2", readFile(t, root, "/etc/app/from-secret.conf", 0o644))
	assert.Contains(t, readFile(t, root, "/etc/kubeadm.yml", 0o600), "token: "+first.token)
}

// A labelled referenced Secret is watched: its change renders the data again at once, with
// nothing else looking at the config (a token of the user's: no token refresh requeues it). An
// unlabelled one is looked at periodically (every ReferenceRecheckInterval, shortened for the suite).
func TestReferencedSecretChangeIsSeen(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	fileFrom := func(secret string) cabpiv1.IgnitionConfigSpec {
		return withUserToken(cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{
			{Path: "/etc/app/value", ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: secret, Key: "key"}}},
		}})
	}
	setSecretKey(t, f.Namespace, "labelled", "key", "labelled-1", f.Cluster.Name)
	setSecretKey(t, f.Namespace, "unlabelled", "key", "unlabelled-1", "")
	f.AddMachine(t, "watched", false, fileFrom("labelled"))
	f.AddMachine(t, "polled", false, fileFrom("unlabelled"))
	watched, polled := deliveredData(t, f.Namespace, "watched"), deliveredData(t, f.Namespace, "polled")
	assert.Empty(t, watched.tokenID, "the user's token: none of ours")
	// The writes that follow a first render (the status, CAPI taking the data into the Machine)
	// each reconcile the config; once they are over, only a watch or a requeue does.
	for _, name := range []string{"watched", "polled"} {
		settled(t, &cabpiv1.IgnitionConfig{}, client.ObjectKey{Namespace: f.Namespace, Name: name})
		settled(t, &clusterv1.Machine{}, client.ObjectKey{Namespace: f.Namespace, Name: name})
	}

	setSecretKey(t, f.Namespace, "labelled", "key", "labelled-2", f.Cluster.Name)
	setSecretKey(t, f.Namespace, "unlabelled", "key", "unlabelled-2", "")
	watched = waitForRerender(t, f.Namespace, "watched", watched)
	assert.Equal(t, "labelled-2", fileIn(t, watched.value, "/etc/app/value"))
	polled = waitForRerender(t, f.Namespace, "polled", polled)
	assert.Equal(t, "unlabelled-2", fileIn(t, polled.value, "/etc/app/value"))
	assert.Contains(t, fileIn(t, polled.value, "/etc/kubeadm.yml"), "token: "+userToken)
}

// A labelled ConfigMap a config reads its Butane from is watched (metadata only) the same way:
// its change renders the data again with nothing else looking at the config.
func TestReferencedConfigMapChangeIsSeen(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	butane := func(motd string) map[string]string {
		return map[string]string{"config.bu": "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n  - path: /etc/motd\n    contents:\n      inline: " + motd + "\n"}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "butane",
		Labels: map[string]string{clusterv1.ClusterNameLabel: f.Cluster.Name}}, Data: butane("first")}
	require.NoError(t, env.Client.Create(ctx, cm))
	f.AddMachine(t, "watched", false, withUserToken(cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{
		ContentFrom: &cabpiv1.ButaneSource{ConfigMap: &cabpiv1.KeyReference{Name: "butane", Key: "config.bu"}}}}))
	before := deliveredData(t, f.Namespace, "watched")
	assert.Equal(t, "first", fileIn(t, before.value, "/etc/motd"))
	settled(t, &cabpiv1.IgnitionConfig{}, client.ObjectKey{Namespace: f.Namespace, Name: "watched"})
	settled(t, &clusterv1.Machine{}, client.ObjectKey{Namespace: f.Namespace, Name: "watched"})

	cm.Data = butane("second")
	require.NoError(t, env.Client.Update(ctx, cm))
	after := waitForRerender(t, f.Namespace, "watched", before)
	assert.Equal(t, "second", fileIn(t, after.value, "/etc/motd"))
}

// (b) After the Machine started provisioning (its infrastructure reported provisioned, so CAPI's
// Machine controller set spec.providerID), a spec change is never rendered: the data and its
// digest stay, and a warning event says so once.
func TestNoRerenderAfterProvisioning(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	m := f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{{Path: "/etc/app/plain.conf", Content: "plain-1"}}})
	before := deliveredData(t, f.Namespace, "w0")

	providerID, err := env.MarkMachineInfrastructureProvisioned(ctx, m)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		latest := &clusterv1.Machine{}
		assert.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(m), latest))
		assert.Equal(c, providerID, latest.Spec.ProviderID)
		assert.True(c, ptr.Deref(latest.Status.Initialization.InfrastructureProvisioned, false))
	}, eventually, tick, "CAPI's Machine controller records the provisioned infrastructure")

	patchSpec(t, f.Namespace, "w0", func(s *cabpiv1.IgnitionConfigSpec) { s.Files[0].Content = "plain-2" })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, eventsFor(c, f.Namespace, "w0", cabpiv1.NotRerenderedEventReason), 1, "a warning event says the change is not rendered")
	}, eventually, tick)
	// Token checks reconcile the config every TTL/3: several of them see the changed spec.
	fixtures.Never(t, tokenTTL, 200*time.Millisecond, func() bool {
		s, ok := fx.DataSecret(t, f.Namespace, "w0")
		require.True(t, ok)
		return string(s.Data["value"]) != string(before.value)
	}, "the data of a provisioned Machine is never rendered again")
	cfg := getConfig(t, f.Namespace, "w0")
	assert.Equal(t, before.hash, cfg.Status.DataInputsHash, "the digest of the data as delivered")
	assert.Equal(t, cfg.Generation, cfg.Status.ObservedGeneration)
	current, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	assert.Equal(t, "plain-1", fileIn(t, current.Data["value"], "/etc/app/plain.conf"))
	list := eventsFor(t, f.Namespace, "w0", cabpiv1.NotRerenderedEventReason)
	require.Len(t, list, 1)
	assert.Nil(t, list[0].Series, "said once, not at every reconcile")
	assert.Equal(t, corev1.EventTypeWarning, list[0].Type)
	assert.Contains(t, list[0].Note, "MachineDeployment")
}

// (c) A config fixed before its Machine provisions boots the fixed data: the first data writes a
// wrong value, the fix is rendered in place, and the bootstrap script of the Secret's data,
// applied and run (test/framework/bootcheck), writes the fixed one, with the same join token.
// The value is written below /run, which the script runner keeps below the applied root.
func TestFixedConfigBootsFixedData(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	write := func(value string) []string {
		return []string{"mkdir -p /run/app", "printf " + value + " > /run/app/value"}
	}
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{PreKubeadmCommands: write("wrong")})
	first := deliveredData(t, f.Namespace, "w0")

	patchSpec(t, f.Namespace, "w0", func(s *cabpiv1.IgnitionConfigSpec) { s.PreKubeadmCommands = write("fixed") })
	waitForRerender(t, f.Namespace, "w0", first)

	// The infrastructure provider reads the data when it provisions the machine: now.
	data, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	root := appliedNode(t, data.Data["value"])
	rep := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/opt/bin"})
	require.Equal(t, 0, rep.ExitCode, rep.Output)
	assert.Equal(t, "fixed", nodeFile(t, root, "/run/app/value"))
	require.Len(t, rep.KubeadmCalls, 1)
	assert.Equal(t, "join", rep.KubeadmCalls[0].Args[0])
	assert.Contains(t, rep.KubeadmCalls[0].Config, "token: "+first.token)
	assert.True(t, rep.SentinelExists)
}

// Changed inputs that do not render, before provisioning, leave the delivered data alone: it
// still boots, so DataSecretAvailable stays True with reason RerenderFailed and the error, and
// a warning event says it once. Fixing the input renders it.
func TestRerenderFailureKeepsData(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})
	before := deliveredData(t, f.Namespace, "w0")

	patchSpec(t, f.Namespace, "w0", func(s *cabpiv1.IgnitionConfigSpec) {
		s.Butane.Inline = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files: {\n"
	})
	c := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.RerenderFailedReason)
	assert.Contains(t, c.Message, cabpiv1.InvalidButaneReason)
	assert.Contains(t, c.Message, "line")
	assert.Contains(t, c.Message, "keeps the data rendered before")
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NotEmpty(c, eventsFor(c, f.Namespace, "w0", cabpiv1.RerenderFailedReason), "a warning event")
	}, eventually, tick)
	// Token checks reconcile it every TTL/3; the bad input is neither stored nor reported again.
	fixtures.Never(t, tokenTTL, 200*time.Millisecond, func() bool {
		s, ok := fx.DataSecret(t, f.Namespace, "w0")
		require.True(t, ok)
		return string(s.Data["value"]) != string(before.value)
	}, "the delivered data is kept")
	assert.Equal(t, before.hash, getConfig(t, f.Namespace, "w0").Status.DataInputsHash, "the digest of the data that is there")
	for _, e := range eventsFor(t, f.Namespace, "w0", cabpiv1.RerenderFailedReason) {
		assert.Nil(t, e.Series, "the failure is reported once, not at every reconcile")
	}

	patchSpec(t, f.Namespace, "w0", func(s *cabpiv1.IgnitionConfigSpec) {
		s.Butane.Inline = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n  - path: /etc/app/fixed\n    contents:\n      inline: fixed\n"
	})
	after := waitForRerender(t, f.Namespace, "w0", before)
	assert.Equal(t, "fixed", fileIn(t, after.value, "/etc/app/fixed"))
}

// A config whose data was delivered before digests were recorded (status.dataInputsHash empty)
// gets the digest of its current inputs recorded, and is not rendered again for it.
func TestDataDeliveredWithoutDigestIsNotRendered(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{{Path: "/etc/app/plain.conf", Content: "plain-1"}}})
	before := deliveredData(t, f.Namespace, "w0")

	// As an older cabpi left it: no digest, and a spec that no longer matches the data.
	setPaused(t, f.Cluster, true)
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.PausedCondition, metav1.ConditionTrue, clusterv1.PausedReason)
	patchSpec(t, f.Namespace, "w0", func(s *cabpiv1.IgnitionConfigSpec) { s.Files[0].Content = "plain-2" })
	cfg := getConfig(t, f.Namespace, "w0")
	require.NoError(t, env.Client.Status().Patch(ctx, cfg, client.RawPatch(types.MergePatchType, []byte(`{"status":{"dataInputsHash":null}}`))))
	setPaused(t, f.Cluster, false)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		h := getConfig(t, f.Namespace, "w0").Status.DataInputsHash
		assert.NotEmpty(c, h)
		assert.NotEqual(c, before.hash, h, "the digest of the current inputs")
	}, eventually, tick)
	fixtures.Never(t, tokenTTL, 200*time.Millisecond, func() bool {
		s, ok := fx.DataSecret(t, f.Namespace, "w0")
		require.True(t, ok)
		return string(s.Data["value"]) != string(before.value)
	}, "data delivered without a digest is not rendered again")
}

// A MachinePool that has not started provisioning (no providerIDList, infrastructure not
// provisioned) gets a spec change rendered in place too. (Its token is the user's: a rotation of
// ours, past half the TTL, would render the change as well, with a new token.)
func TestMachinePoolRerenderBeforeProvisioning(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddMachinePool(t, "pool", withUserToken(cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{{Path: "/etc/app/plain.conf", Content: "plain-1"}}}))
	before := deliveredData(t, f.Namespace, "pool")
	patchSpec(t, f.Namespace, "pool", func(s *cabpiv1.IgnitionConfigSpec) { s.Files[0].Content = "plain-2" })
	after := waitForRerender(t, f.Namespace, "pool", before)
	assert.Equal(t, "plain-2", fileIn(t, after.value, "/etc/app/plain.conf"))
	assert.Contains(t, fileIn(t, after.value, "/etc/kubeadm.yml"), "token: "+userToken)
}
