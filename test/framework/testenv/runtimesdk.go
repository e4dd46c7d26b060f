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

package testenv

// Cluster API's Runtime SDK in-process: the feature gates, the Runtime SDK client the
// controllers call extensions through, and the ExtensionConfig reconciler that discovers them.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	extensionconfigcontroller "sigs.k8s.io/cluster-api/core/reconcilers/extensionconfig"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
	"sigs.k8s.io/cluster-api/feature"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/runtimesdk"
)

// runtimeSDKWarmUpTimeout bounds the wait for Cluster API's registry warm-up (which itself
// gives up after 60 s).
const runtimeSDKWarmUpTimeout = 60 * time.Second

// setupRuntimeSDK turns the RuntimeSDK and InPlaceUpdates feature gates on (process-wide, as the
// manager's --feature-gates does), creates Environment.RuntimeClient and registers Cluster API's
// ExtensionConfig reconciler with it, as Cluster API's core/main.go does: with a cache of
// Secrets' metadata (it watches the Secrets an ExtensionConfig takes its CA from) and the warm-up
// that reads the ExtensionConfigs present at start.
func (e *Environment) setupRuntimeSDK(ctx context.Context, ctrlOpts controller.Options) error {
	mgr := e.Manager
	gates := string(feature.RuntimeSDK) + "=true," + string(feature.InPlaceUpdates) + "=true"
	if err := feature.MutableGates.Set(gates); err != nil {
		return fmt.Errorf("testenv: enabling feature gates %s: %w", gates, err)
	}
	// The API reader: Namespaces are read only for an ExtensionConfig's namespaceSelector, and
	// through the cache that would start a Namespace informer.
	rc, err := runtimesdk.New(mgr.GetAPIReader())
	if err != nil {
		return fmt.Errorf("testenv: creating the Runtime SDK client: %w", err)
	}
	e.RuntimeClient = rc

	secretMetadata, err := cache.New(mgr.GetConfig(), cache.Options{
		Scheme:     mgr.GetScheme(),
		Mapper:     mgr.GetRESTMapper(),
		HTTPClient: mgr.GetHTTPClient(),
		DefaultTransform: func(in any) (any, error) {
			obj, ok := in.(*metav1.PartialObjectMetadata)
			if !ok || obj.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Secret") {
				return nil, fmt.Errorf("testenv: the ExtensionConfig reconciler's Secret cache got a %T", in)
			}
			return cache.TransformStripManagedFields()(obj)
		},
	})
	if err != nil {
		return fmt.Errorf("testenv: creating the Secret metadata cache of the ExtensionConfig reconciler: %w", err)
	}
	if err := mgr.Add(secretMetadata); err != nil {
		return fmt.Errorf("testenv: adding the Secret metadata cache of the ExtensionConfig reconciler: %w", err)
	}
	if err := (&extensionconfigcontroller.Reconciler{
		Client:             mgr.GetClient(),
		APIReader:          mgr.GetAPIReader(),
		RuntimeClient:      rc,
		PartialSecretCache: secretMetadata,
	}).SetupWithManager(ctx, mgr, ctrlOpts); err != nil {
		return fmt.Errorf("testenv: setting up CAPI ExtensionConfig controller: %w", err)
	}
	return nil
}

// runtimeClient is what Cluster API's reconcilers get as RuntimeClient: nil unless
// Options.InPlaceUpdates (a nil *runtimesdk.Client in the interface would not be nil to them).
func (e *Environment) runtimeClient() runtimeclient.Client {
	if e.RuntimeClient == nil {
		return nil
	}
	return e.RuntimeClient
}

// waitForRuntimeSDKWarmUp waits until Cluster API's warm-up has filled the registry: until
// then the ExtensionConfig reconciler requeues every ExtensionConfig for 10 s.
func (e *Environment) waitForRuntimeSDKWarmUp(ctx context.Context) error {
	if e.RuntimeClient == nil {
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, runtimeSDKWarmUpTimeout, true, func(context.Context) (bool, error) {
		return e.RuntimeClient.IsReady(), nil
	})
	if err != nil {
		return fmt.Errorf("testenv: the Runtime SDK registry was not warmed up within %s (an ExtensionConfig present at start whose extension does not answer?): %w", runtimeSDKWarmUpTimeout, err)
	}
	return nil
}

// WaitForExtension waits until Cluster API's ExtensionConfig reconciler has discovered the
// ExtensionConfig named name (condition Discovered true) and registered its handlers with
// RuntimeClient, and returns the handlers' names ("<handler>.<name>", sorted). The reconciler
// retries a failed discovery; on timeout the error says what was seen last (e.g. the discovery's
// error).
func (e *Environment) WaitForExtension(ctx context.Context, name string, timeout time.Duration) ([]string, error) {
	if e.RuntimeClient == nil {
		return nil, errors.New("testenv: WaitForExtension needs Options.InPlaceUpdates")
	}
	var handlers []string
	last := errors.New("not read yet")
	// Reads take ctx, not the poll's context: a read cut short by the poll's deadline (or
	// refused by the client's rate limiter as too close to it) would hide what was seen last.
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ec := &runtimev1.ExtensionConfig{}
		if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, ec); err != nil {
			last = err
			return false, nil
		}
		discovered := conditions.Get(ec, runtimev1.ExtensionConfigDiscoveredCondition)
		if discovered == nil || discovered.ObservedGeneration != ec.Generation {
			last = fmt.Errorf("ExtensionConfig %s not discovered yet", name)
			return false, nil
		}
		if discovered.Status != metav1.ConditionTrue {
			last = fmt.Errorf("ExtensionConfig %s: discovery failed: %s", name, discovered.Message)
			return false, nil
		}
		want := make([]string, 0, len(ec.Status.Handlers))
		for _, h := range ec.Status.Handlers {
			want = append(want, h.Name)
		}
		slices.Sort(want)
		handlers = e.RuntimeClient.Registered(name)
		if !slices.Equal(handlers, want) {
			last = fmt.Errorf("ExtensionConfig %s: status lists handlers %v, the Runtime SDK client has %v registered", name, want, handlers)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("testenv: waiting for ExtensionConfig %s: %w (last: %w)", name, err, last)
	}
	return handlers, nil
}
