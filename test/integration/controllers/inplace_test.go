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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// sysextFrom is a spec whose Kubernetes comes from the sysext mirror at baseURL.
func sysextFrom(baseURL string) cabpiv1.IgnitionConfigSpec {
	return cabpiv1.IgnitionConfigSpec{Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext,
		Sysext: &cabpiv1.SysextSource{BaseURL: baseURL}, DigestsFrom: fixtures.Digests}}
}

// setVersion sets the Machine's spec.version, as Cluster API's MachineSet controller does for
// an in-place update.
func setVersion(t *testing.T, m *clusterv1.Machine, version string) {
	t.Helper()
	latest := &clusterv1.Machine{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(m), latest))
	patch := client.MergeFrom(latest.DeepCopy())
	latest.Spec.Version = version
	require.NoError(t, env.Client.Patch(t.Context(), latest, patch))
}

// setInPlaceUpdate adds (or removes) Cluster API's UpdateInProgress annotation on the config,
// with the spec changed by mutate (nil: unchanged) in the same write, as the MachineSet
// controller applies the new spec with the annotation.
func setInPlaceUpdate(t *testing.T, ns, name string, inProgress bool, mutate func(*cabpiv1.IgnitionConfigSpec)) {
	t.Helper()
	cfg := getConfig(t, ns, name)
	patch := client.MergeFrom(cfg.DeepCopy())
	if inProgress {
		if cfg.Annotations == nil {
			cfg.Annotations = map[string]string{}
		}
		cfg.Annotations[clusterv1.UpdateInProgressAnnotation] = ""
	} else {
		delete(cfg.Annotations, clusterv1.UpdateInProgressAnnotation)
	}
	if mutate != nil {
		mutate(&cfg.Spec)
	}
	require.NoError(t, env.Client.Patch(t.Context(), cfg, patch))
}

// warningsFor are the Warning events regarding the config ns/name.
func warningsFor(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &eventsv1.EventList{}
	require.NoError(t, env.Client.List(t.Context(), list, client.InNamespace(ns)))
	var reasons []string
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning {
			reasons = append(reasons, e.Reason)
		}
	}
	return reasons
}

// While Cluster API updates a Machine in place (the UpdateInProgress annotation on its config),
// the controller writes nothing: the Machine's new version and the new mirror are not rendered,
// the join token is not refreshed though it is due, the status and its conditions stay, no
// warning is emitted. Once the annotation is gone the status catches up with the generation,
// and the change, which only the in-place update extension applies, is neither rendered nor
// reported; a change outside what an in-place update changes still is reported.
func TestInPlaceUpdate(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	const mirrorA, mirrorB = "https://mirror-a.example/extensions", "https://mirror-b.example/extensions"
	// provisioned: its node has not joined, so its token is refreshed every few seconds.
	provisioned := f.AddMachine(t, "provisioned", false, sysextFrom(mirrorA))
	// early: before provisioning, where any change of its inputs is rendered again.
	early := f.AddMachine(t, "early", false, sysextFrom(mirrorA))
	delivered := map[string]delivered{
		"provisioned": deliveredData(t, f.Namespace, "provisioned"),
		"early":       deliveredData(t, f.Namespace, "early"),
	}
	require.NotEmpty(t, delivered["provisioned"].tokenID)
	_, err := env.MarkMachineInfrastructureProvisioned(ctx, provisioned)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		latest := &clusterv1.Machine{}
		assert.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(provisioned), latest))
		assert.True(c, ptr.Deref(latest.Status.Initialization.InfrastructureProvisioned, false))
	}, eventually, tick, "CAPI's Machine controller records the provisioned infrastructure")

	// seen is compared with equality.Semantic, which reads exported fields only.
	type seen struct {
		DataRV, TokenRV string
		Status          cabpiv1.IgnitionConfigStatus
		Generation      int64
	}
	look := func(name string) seen {
		s, ok := fx.DataSecret(t, f.Namespace, name)
		require.True(t, ok)
		cfg := getConfig(t, f.Namespace, name)
		return seen{DataRV: s.ResourceVersion, TokenRV: tokenSecret(t, delivered[name].tokenID).ResourceVersion,
			Status: cfg.Status, Generation: cfg.Generation}
	}
	for _, name := range []string{"provisioned", "early"} {
		settled(t, &cabpiv1.IgnitionConfig{}, client.ObjectKey{Namespace: f.Namespace, Name: name})
		setInPlaceUpdate(t, f.Namespace, name, true, func(s *cabpiv1.IgnitionConfigSpec) { s.Kubernetes.Sysext.BaseURL = mirrorB })
	}
	// A reconcile that read the config before the annotation has written by now: a token refresh
	// writes the token Secret alone, so the configs, their data and their tokens go a whole token
	// check interval unwritten (the periodic check would have refreshed the tokens in it).
	var written []client.Object
	for _, name := range []string{"provisioned", "early"} {
		written = append(written, configObjects(f.Namespace, name, delivered[name].tokenID)...)
	}
	quiet(t, checkInterval, written...)
	before := map[string]seen{"provisioned": look("provisioned"), "early": look("early")}
	setVersion(t, provisioned, "v1.34.1")
	setVersion(t, early, "v1.34.1")

	// A token is refreshed once less than 5/6 of its TTL is left, looked at every TTL/3: within
	// a TTL the provisioned Machine's would be, and the early Machine's data rendered again.
	fixtures.Never(t, tokenTTL, tick, func() bool {
		return !equality.Semantic.DeepEqual(look("provisioned"), before["provisioned"]) ||
			!equality.Semantic.DeepEqual(look("early"), before["early"])
	}, "nothing is written while the in-place update is in progress")
	for _, name := range []string{"provisioned", "early"} {
		assert.Empty(t, warningsFor(t, f.Namespace, name), "no warning event for %s", name)
		assert.Less(t, before[name].Status.ObservedGeneration, before[name].Generation, "the status is left as it was")
	}

	// Cluster API removes the annotation once the extension is done: the status records the
	// generation; the provisioned Machine's data is kept, nothing is reported.
	setInPlaceUpdate(t, f.Namespace, "provisioned", false, nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cfg := getConfig(t, f.Namespace, "provisioned")
		assert.Equal(c, cfg.Generation, cfg.Status.ObservedGeneration)
	}, eventually, tick)
	fixtures.Never(t, tokenTTL/3+tick, tick, func() bool {
		return look("provisioned").DataRV != before["provisioned"].DataRV
	}, "the data of the Machine updated in place is not rendered again")
	after := getConfig(t, f.Namespace, "provisioned").Status
	assert.Equal(t, before["provisioned"].Status.DataInputsHash, after.DataInputsHash)
	assert.Equal(t, before["provisioned"].Status.DataSpecHash, after.DataSpecHash, "the mirror is not part of the spec digest")
	assert.NotEmpty(t, after.DataSpecHash)
	assert.Empty(t, eventsFor(t, f.Namespace, "provisioned", cabpiv1.NotRerenderedEventReason), "an in-place update's change is not reported")
	assert.Empty(t, warningsFor(t, f.Namespace, "provisioned"))

	// A change an in-place update does not make is reported as before.
	patchSpec(t, f.Namespace, "provisioned", func(s *cabpiv1.IgnitionConfigSpec) {
		s.Files = []cabpiv1.File{{Path: "/etc/app/plain.conf", Content: "plain"}}
	})
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, eventsFor(c, f.Namespace, "provisioned", cabpiv1.NotRerenderedEventReason), 1)
	}, eventually, tick)
	assert.Equal(t, before["provisioned"].DataRV, look("provisioned").DataRV)

	// The early Machine's config, its annotation gone, is an ordinary change before
	// provisioning: rendered again (the gate held it, nothing else). Its token, not refreshed
	// meanwhile, has expired: the data gets a fresh one (Cluster API updates in place only
	// Machines whose node joined, which need none).
	setInPlaceUpdate(t, f.Namespace, "early", false, nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s, ok := fx.DataSecret(t, f.Namespace, "early")
		// Compared, never printed: the data carries the join token.
		assert.True(c, ok && strings.Contains(string(s.Data["value"]), mirrorB+"/kubernetes-v1.34.1-x86-64.raw"),
			"the data is rendered again for the new version from the new mirror")
	}, eventually, tick)
}
