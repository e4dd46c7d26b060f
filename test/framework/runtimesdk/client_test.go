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

package runtimesdk

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/cluster-api/exp/runtime/server"
	"sigs.k8s.io/cluster-api/util/cache"
)

// retryFromSettings is an UpdateMachine handler that answers what the request's settings say:
// retryAfterSeconds settings[name], and the ExtensionConfig's setting "greeting" as message.
func retryFromSettings(name string, calls *atomic.Int32) func(context.Context, *runtimehooksv1.UpdateMachineRequest, *runtimehooksv1.UpdateMachineResponse) {
	return func(_ context.Context, req *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
		calls.Add(1)
		retry, err := strconv.Atoi(req.Settings[name])
		if err != nil {
			resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
			resp.SetMessage(fmt.Sprintf("%s: setting %q: %v", name, name, err))
			return
		}
		resp.SetStatus(runtimehooksv1.ResponseStatusSuccess)
		resp.SetRetryAfterSeconds(int32(retry))
		resp.SetMessage(name + " " + req.Settings["greeting"] + " " + req.Desired.Machine.Name)
	}
}

// startExtension serves handlers on loopback (StartExtension) until the test ends and returns
// its URL and CA bundle.
func startExtension(t *testing.T, handlers ...server.ExtensionHandler) (url string, caBundle []byte) {
	t.Helper()
	ext, err := StartExtension(context.Background(), handlers...)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ext.Stop()) })
	return ext.URL, ext.CABundle
}

// freePort is a loopback port nothing listens on: FreeLoopbackPort's, which no one else takes
// while the test runs, and this test never listens on.
func freePort(t *testing.T) int {
	t.Helper()
	port, err := FreeLoopbackPort()
	require.NoError(t, err)
	return port
}

func machineIn(namespace string) *clusterv1.Machine {
	return &clusterv1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "m-0"}}
}

func updateMachineRequest(settings map[string]string) *runtimehooksv1.UpdateMachineRequest {
	return &runtimehooksv1.UpdateMachineRequest{
		CommonRequest: runtimehooksv1.CommonRequest{Settings: settings},
		Desired:       runtimehooksv1.UpdateMachineRequestObjects{Machine: *machineIn("default")},
	}
}

func newWarmClient(t *testing.T) *Client {
	t.Helper()
	c, err := New(nil)
	require.NoError(t, err)
	require.NoError(t, c.WarmUp(&runtimev1.ExtensionConfigList{}))
	return c
}

func TestDiscoverRegisterCall(t *testing.T) {
	ctx := context.Background()
	var callsA, callsB, refusals atomic.Int32
	url, caBundle := startExtension(t,
		server.ExtensionHandler{Hook: runtimehooksv1.UpdateMachine, Name: "update-a", HandlerFunc: retryFromSettings("update-a", &callsA)},
		server.ExtensionHandler{
			Hook: runtimehooksv1.UpdateMachine, Name: "update-b", HandlerFunc: retryFromSettings("update-b", &callsB),
			// Not the default (10), so that discovery is seen to carry it; long enough that no call
			// here times out, however loaded the machine (with Ignore a timed-out call would pass
			// for a success).
			TimeoutSeconds: ptr.To[int32](20), FailurePolicy: ptr.To(runtimehooksv1.FailurePolicyIgnore),
		},
		server.ExtensionHandler{
			Hook: runtimehooksv1.CanUpdateMachineSet, Name: "refuse",
			HandlerFunc: func(_ context.Context, _ *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse) {
				refusals.Add(1)
				resp.SetStatus(runtimehooksv1.ResponseStatusFailure)
				resp.SetMessage("cannot do that")
			},
		},
	)

	c, err := New(nil)
	require.NoError(t, err)
	ec := ExtensionConfigFor("ext", url, caBundle)
	ec.Spec.Settings = map[string]string{"greeting": "hello", "update-a": "7"}

	discovered, err := c.Discover(ctx, ec)
	require.NoError(t, err)
	assert.Empty(t, ec.Status.Handlers, "Discover returns a copy")
	assert.ElementsMatch(t, []runtimev1.ExtensionHandler{
		{
			Name:        "update-a.ext",
			RequestHook: runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "UpdateMachine"},
			// Defaults: Cluster API's.
			TimeoutSeconds: 10, FailurePolicy: runtimev1.FailurePolicyFail,
		},
		{
			Name:           "update-b.ext",
			RequestHook:    runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "UpdateMachine"},
			TimeoutSeconds: 20, FailurePolicy: runtimev1.FailurePolicyIgnore,
		},
		{
			Name:           "refuse.ext",
			RequestHook:    runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "CanUpdateMachineSet"},
			TimeoutSeconds: 10, FailurePolicy: runtimev1.FailurePolicyFail,
		},
	}, discovered.Status.Handlers)

	// Nothing registers before the warm-up, as in Cluster API's registry.
	require.ErrorContains(t, c.Register(discovered), "not warmed up")
	_, err = c.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("default"))
	require.ErrorContains(t, err, "not warmed up")
	assert.False(t, c.IsReady())
	require.NoError(t, c.WarmUp(&runtimev1.ExtensionConfigList{}))
	assert.True(t, c.IsReady())
	require.Error(t, c.WarmUp(&runtimev1.ExtensionConfigList{}), "a second warm-up")
	require.NoError(t, c.Register(discovered))
	assert.Equal(t, []string{"refuse.ext", "update-a.ext", "update-b.ext"}, c.Registered("ext"))
	assert.Empty(t, c.Registered("other"))

	names, err := c.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("default"))
	require.NoError(t, err)
	assert.Equal(t, []string{"update-a.ext", "update-b.ext"}, names)
	names, err = c.GetAllExtensions(ctx, runtimehooksv1.CanUpdateMachineSet, machineIn("default"))
	require.NoError(t, err)
	assert.Equal(t, []string{"refuse.ext"}, names)
	names, err = c.GetAllExtensions(ctx, runtimehooksv1.CanUpdateMachine, machineIn("default"))
	require.NoError(t, err)
	assert.Empty(t, names)

	t.Run("CallAllExtensions", func(t *testing.T) {
		for _, tc := range []struct {
			name           string
			settings       map[string]string // the request's; update-a is 7 by the ExtensionConfig
			wantRetryAfter int32
		}{
			{name: "lowest of two", settings: map[string]string{"update-b": "20"}, wantRetryAfter: 7},
			{name: "the request's setting wins", settings: map[string]string{"update-a": "30", "update-b": "20"}, wantRetryAfter: 20},
			{name: "lowest non-zero", settings: map[string]string{"update-a": "0", "update-b": "5"}, wantRetryAfter: 5},
			{name: "done", settings: map[string]string{"update-a": "0", "update-b": "0"}, wantRetryAfter: 0},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := callsA.Load() + callsB.Load()
				resp := &runtimehooksv1.UpdateMachineResponse{}
				// A leftover retry in the caller's response must not survive.
				resp.SetRetryAfterSeconds(1)
				require.NoError(t, c.CallAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), updateMachineRequest(tc.settings), resp))
				assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.GetStatus())
				assert.Equal(t, tc.wantRetryAfter, resp.GetRetryAfterSeconds())
				assert.Equal(t, "update-a hello m-0, update-b hello m-0", resp.GetMessage())
				assert.Equal(t, before+2, callsA.Load()+callsB.Load(), "each handler called once")
			})
		}
	})

	t.Run("a failure response is an error with its message", func(t *testing.T) {
		resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
		err := c.CallExtension(ctx, runtimehooksv1.CanUpdateMachineSet, &clusterv1.MachineSet{}, "refuse.ext", &runtimehooksv1.CanUpdateMachineSetRequest{}, resp)
		require.ErrorContains(t, err, "cannot do that")
		assert.Equal(t, runtimehooksv1.ResponseStatusFailure, resp.GetStatus())
	})

	t.Run("a failure response of a handler with failurePolicy Ignore is an error too", func(t *testing.T) {
		// update-b fails on a setting that is not a number; Ignore covers failed calls only.
		err := c.CallAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("default"),
			updateMachineRequest(map[string]string{"update-b": "soon"}), &runtimehooksv1.UpdateMachineResponse{})
		require.ErrorContains(t, err, `setting "update-b"`)
	})

	t.Run("caller errors", func(t *testing.T) {
		for _, tc := range []struct {
			name, handler, want string
		}{
			{name: "unknown handler", handler: "nope.ext", want: "not registered"},
			{name: "handler of another hook", handler: "refuse.ext", want: "registered for hook CanUpdateMachineSet"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				before := callsA.Load() + callsB.Load() + refusals.Load()
				err := c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), tc.handler,
					updateMachineRequest(nil), &runtimehooksv1.UpdateMachineResponse{})
				require.ErrorContains(t, err, tc.want)
				assert.Equal(t, before, callsA.Load()+callsB.Load()+refusals.Load(), "no call made")
			})
		}
		err := c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), "update-a.ext",
			&runtimehooksv1.CanUpdateMachineRequest{}, &runtimehooksv1.UpdateMachineResponse{})
		require.ErrorContains(t, err, "request", "a request of another hook")
	})

	t.Run("WithCaching", func(t *testing.T) {
		responses := cache.New[runtimeclient.CallExtensionCacheEntry](ctx, time.Minute)
		withCaching := runtimeclient.WithCaching{
			Cache: responses,
			CacheKeyFunc: func(name, resourceVersion string, _ runtimehooksv1.RequestObject) string {
				return name + "@" + resourceVersion
			},
		}
		before := callsA.Load()
		for range 2 {
			resp := &runtimehooksv1.UpdateMachineResponse{}
			require.NoError(t, c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), "update-a.ext",
				updateMachineRequest(nil), resp, withCaching))
			assert.Equal(t, int32(7), resp.GetRetryAfterSeconds())
		}
		assert.Equal(t, before+1, callsA.Load(), "the second answer comes from the cache")
	})

	t.Run("Unregister", func(t *testing.T) {
		require.NoError(t, c.Unregister(ec))
		assert.Empty(t, c.Registered("ext"))
		names, err := c.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("default"))
		require.NoError(t, err)
		assert.Empty(t, names)
		resp := &runtimehooksv1.UpdateMachineResponse{}
		require.NoError(t, c.CallAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), updateMachineRequest(nil), resp))
		assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.GetStatus())
	})
}

func TestFailurePolicy(t *testing.T) {
	ctx := context.Background()
	c := newWarmClient(t)
	// Registered as Discover would have left it, at a port nothing listens on.
	ec := ExtensionConfigFor("gone", fmt.Sprintf("https://127.0.0.1:%d", freePort(t)), nil)
	ec.Status.Handlers = []runtimev1.ExtensionHandler{
		{
			Name:           "fail.gone",
			RequestHook:    runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "UpdateMachine"},
			TimeoutSeconds: 2, FailurePolicy: runtimev1.FailurePolicyFail,
		},
		{
			Name:           "ignore.gone",
			RequestHook:    runtimev1.GroupVersionHook{APIVersion: runtimehooksv1.GroupVersion.String(), Hook: "UpdateMachine"},
			TimeoutSeconds: 2, FailurePolicy: runtimev1.FailurePolicyIgnore,
		},
	}
	require.NoError(t, c.Register(ec))

	resp := &runtimehooksv1.UpdateMachineResponse{}
	require.NoError(t, c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), "ignore.gone", updateMachineRequest(nil), resp))
	assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.GetStatus())

	err := c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), "fail.gone", updateMachineRequest(nil), &runtimehooksv1.UpdateMachineResponse{})
	require.ErrorContains(t, err, "connection refused")
	err = c.CallAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), updateMachineRequest(nil), &runtimehooksv1.UpdateMachineResponse{})
	require.ErrorContains(t, err, `"fail.gone"`)
}

func TestTimeout(t *testing.T) {
	ctx := context.Background()
	release := make(chan struct{})
	url, caBundle := startExtension(t, server.ExtensionHandler{
		Hook: runtimehooksv1.UpdateMachine, Name: "stuck", TimeoutSeconds: ptr.To[int32](1),
		HandlerFunc: func(context.Context, *runtimehooksv1.UpdateMachineRequest, *runtimehooksv1.UpdateMachineResponse) {
			<-release
		},
	})
	// Registered after the server's: runs before it, so that its shutdown finds no call in flight.
	t.Cleanup(func() { close(release) })
	c := newWarmClient(t)
	discovered, err := c.Discover(ctx, ExtensionConfigFor("slow", url, caBundle))
	require.NoError(t, err)
	require.NoError(t, c.Register(discovered))
	start := time.Now()
	err = c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("default"), "stuck.slow", updateMachineRequest(nil), &runtimehooksv1.UpdateMachineResponse{})
	require.ErrorContains(t, err, "timeout, 1s")
	// The handler never answers (until the test ends): the call returned on its timeout. The bound
	// only says it did not wait for the end; -race and a loaded machine make the call slow.
	elapsed := time.Since(start)
	assert.GreaterOrEqual(t, elapsed, time.Second)
	assert.Less(t, elapsed, 30*time.Second)
}

func TestDiscoverErrors(t *testing.T) {
	ctx := context.Background()
	url, caBundle := startExtension(t, server.ExtensionHandler{
		Hook: runtimehooksv1.UpdateMachine, Name: "update",
		HandlerFunc: func(context.Context, *runtimehooksv1.UpdateMachineRequest, *runtimehooksv1.UpdateMachineResponse) {},
	})
	otherCA, err := WriteServingCert(t.TempDir(), "127.0.0.1")
	require.NoError(t, err)
	c := newWarmClient(t)

	// The right CA is what makes the call go through: the other cases differ from it in one field.
	_, err = c.Discover(ctx, ExtensionConfigFor("ok", url, caBundle))
	require.NoError(t, err)

	for _, tc := range []struct {
		name   string
		config runtimev1.ClientConfig
		want   string
	}{
		{name: "another CA", config: runtimev1.ClientConfig{URL: url, CABundle: otherCA}, want: "certificate"},
		{name: "no CA: the system's roots", config: runtimev1.ClientConfig{URL: url}, want: "certificate"},
		{name: "not PEM", config: runtimev1.ClientConfig{URL: url, CABundle: []byte("nope")}, want: "no PEM certificate"},
		{name: "http", config: runtimev1.ClientConfig{URL: "http" + url[len("https"):], CABundle: caBundle}, want: "must be https"},
		{name: "service", config: runtimev1.ClientConfig{
			Service: runtimev1.ServiceReference{Namespace: "default", Name: "ext"}, CABundle: caBundle,
		}, want: "clientConfig.service is not supported"},
		{name: "nothing listening", config: runtimev1.ClientConfig{URL: fmt.Sprintf("https://127.0.0.1:%d", freePort(t)), CABundle: caBundle}, want: "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ec := &runtimev1.ExtensionConfig{ObjectMeta: metav1.ObjectMeta{Name: "ext"}, Spec: runtimev1.ExtensionConfigSpec{ClientConfig: tc.config}}
			_, err := c.Discover(ctx, ec)
			require.ErrorContains(t, err, tc.want)
		})
	}
}

func TestNamespaceSelector(t *testing.T) {
	ctx := context.Background()
	var calls atomic.Int32
	url, caBundle := startExtension(t, server.ExtensionHandler{
		Hook: runtimehooksv1.UpdateMachine, Name: "update", HandlerFunc: retryFromSettings("update", &calls),
	})
	reader := fake.NewClientBuilder().WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "selected", Labels: map[string]string{"inplace": "yes"}}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}},
	).Build()
	c, err := New(reader)
	require.NoError(t, err)
	require.NoError(t, c.WarmUp(&runtimev1.ExtensionConfigList{}))
	ec := ExtensionConfigFor("ext", url, caBundle)
	ec.Spec.Settings = map[string]string{"update": "0"}
	ec.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"inplace": "yes"}}
	discovered, err := c.Discover(ctx, ec)
	require.NoError(t, err)
	require.NoError(t, c.Register(discovered))

	names, err := c.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("selected"))
	require.NoError(t, err)
	assert.Equal(t, []string{"update.ext"}, names)
	names, err = c.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("other"))
	require.NoError(t, err)
	assert.Empty(t, names)

	require.NoError(t, c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("selected"), "update.ext", updateMachineRequest(nil), &runtimehooksv1.UpdateMachineResponse{}))
	err = c.CallExtension(ctx, runtimehooksv1.UpdateMachine, machineIn("other"), "update.ext", updateMachineRequest(nil), &runtimehooksv1.UpdateMachineResponse{})
	require.ErrorContains(t, err, "namespaceSelector does not select")
	assert.Equal(t, int32(1), calls.Load())

	// Without a Reader a selector cannot be honoured: an error, not every Namespace.
	noReader := newWarmClient(t)
	require.NoError(t, noReader.Register(discovered))
	_, err = noReader.GetAllExtensions(ctx, runtimehooksv1.UpdateMachine, machineIn("selected"))
	require.ErrorContains(t, err, "no Reader")
}
