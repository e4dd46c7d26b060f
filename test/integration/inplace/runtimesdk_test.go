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

package inplace_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/runtimesdk"
)

func TestFeatureGatesOn(t *testing.T) {
	assert.True(t, feature.Gates.Enabled(feature.RuntimeSDK))
	assert.True(t, feature.Gates.Enabled(feature.InPlaceUpdates))
}

func TestExtensionConfigCRDInstalled(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: "extensionconfigs.runtime.cluster.x-k8s.io"}, crd))
	assert.Equal(t, apiextensionsv1.ClusterScoped, crd.Spec.Scope)
}

// TestExtensionConfigDiscoveredAndRegistered: an ExtensionConfig created in the API server is
// discovered by Cluster API's reconciler through the Runtime SDK client, its handlers land in
// its status and in the client's registry, calls reach the extension for objects of the
// Namespaces it selects (as the e2e suite's ExtensionConfig selects one), and deleting it
// unregisters them.
func TestExtensionConfigDiscoveredAndRegistered(t *testing.T) {
	ctx := t.Context()
	var calls atomic.Int32
	ext, err := runtimesdk.StartExtension(ctx, server.ExtensionHandler{
		Hook: runtimehooksv1.UpdateMachine, Name: "update-machine",
		HandlerFunc: func(_ context.Context, req *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
			calls.Add(1)
			resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
			resp.SetMessage("updating " + req.Desired.Machine.Name + " " + req.Settings["from"])
			resp.SetRetryAfterSeconds(4)
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ext.Stop()) })

	// Only this Namespace: cabpi's extension, registered in this suite too, serves UpdateMachine
	// for all, and Cluster API refuses two UpdateMachine handlers for one Machine.
	selected := env.CreateNamespace(t, "wiring")
	selected.Labels = map[string]string{"inplace.test/wiring": "true"}
	require.NoError(t, env.Client.Update(ctx, selected))
	other := env.CreateNamespace(t, "wiring-other").Name

	ec := runtimesdk.ExtensionConfigFor("wiring", ext.URL, ext.CABundle)
	ec.Spec.Settings = map[string]string{"from": "the ExtensionConfig"}
	ec.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: selected.Labels}
	require.NoError(t, env.Client.Create(ctx, ec))
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), ec)) })

	handlers, err := env.WaitForExtension(ctx, "wiring", timeout)
	require.NoError(t, err)
	assert.Equal(t, []string{"update-machine.wiring"}, handlers)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(ec), ec))
	assert.Equal(t, []runtimev1.ExtensionHandler{{
		Name:           "update-machine.wiring",
		RequestHook:    runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "UpdateMachine"},
		TimeoutSeconds: runtimehooksv1.DefaultHandlersTimeoutSeconds,
		FailurePolicy:  runtimev1.FailurePolicyFail,
	}}, ec.Status.Handlers)

	machine := &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: selected.Name, Name: "m-0"}}
	names, err := env.RuntimeClient.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machine)
	require.NoError(t, err)
	assert.Equal(t, []string{"update-machine." + cabpiExtensionConfig, "update-machine.wiring"}, names)
	names, err = env.RuntimeClient.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "m-0"}})
	require.NoError(t, err)
	assert.Equal(t, []string{"update-machine." + cabpiExtensionConfig}, names, "a Namespace the ExtensionConfig does not select")

	req := &runtimehooksv1.UpdateMachineRequest{Desired: runtimehooksv1.UpdateMachineRequestObjects{Machine: *machine}}
	resp := &runtimehooksv1.UpdateMachineResponse{}
	require.NoError(t, env.RuntimeClient.CallExtension(ctx, runtimehooksv1.UpdateMachine, machine, "update-machine.wiring", req, resp))
	assert.Equal(t, "updating m-0 the ExtensionConfig", resp.GetMessage())
	assert.Equal(t, int32(4), resp.GetRetryAfterSeconds())
	assert.Equal(t, int32(1), calls.Load())

	require.NoError(t, env.Client.Delete(ctx, ec))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ec), &runtimev1.ExtensionConfig{})) &&
			len(env.RuntimeClient.Registered("wiring")) == 0
	}, timeout, tick, "the deleted ExtensionConfig's handlers are unregistered")
}

// TestExtensionConfigDiscoveryFails: an extension whose certificate the caBundle does not verify
// is not registered, and the reconciler says why in the Discovered condition.
func TestExtensionConfigDiscoveryFails(t *testing.T) {
	ctx := t.Context()
	ext, err := runtimesdk.StartExtension(ctx, server.ExtensionHandler{
		Hook: runtimehooksv1.UpdateMachine, Name: "update-machine",
		HandlerFunc: func(context.Context, *runtimehooksv1.UpdateMachineRequest, *runtimehooksv1.UpdateMachineResponse) {},
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ext.Stop()) })
	otherCA, err := runtimesdk.WriteServingCert(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)

	ec := runtimesdk.ExtensionConfigFor("untrusted", ext.URL, otherCA)
	require.NoError(t, env.Client.Create(ctx, ec))
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), ec)) })

	// However long the reconciler takes to get to it: its verdict on this generation, whatever it
	// is, then that it is a failure, and why.
	var discovered *metav1.Condition
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &runtimev1.ExtensionConfig{}
		if !assert.NoError(c, env.Client.Get(ctx, client.ObjectKeyFromObject(ec), got)) {
			return
		}
		discovered = conditions.Get(got, runtimev1.ExtensionConfigDiscoveredCondition)
		if assert.NotNil(c, discovered, "condition Discovered not written yet") {
			assert.Equal(c, got.Generation, discovered.ObservedGeneration, "condition Discovered not written for this generation yet")
		}
	}, timeout, tick)
	assert.Equal(t, metav1.ConditionFalse, discovered.Status, "Discovered: %s", discovered.Message)
	assert.Contains(t, discovered.Message, "certificate")
	// WaitForExtension says so too: its first look already sees the verdict.
	_, err = env.WaitForExtension(ctx, "untrusted", time.Second)
	require.ErrorContains(t, err, "discovery failed")
	require.ErrorContains(t, err, "certificate")
	assert.Empty(t, env.RuntimeClient.Registered("untrusted"))
}
