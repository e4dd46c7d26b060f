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

// Package runtimesdk is the suites' Cluster API Runtime SDK client: what Cluster API's controllers
// call Runtime Extensions through (sigs.k8s.io/cluster-api/exp/runtime/client.Client), for the
// controllers the suites run in-process. Cluster API's own implementation is in its internal/
// (internal/runtime/client and internal/runtime/registry) and cannot be imported, so this is a
// smaller one that behaves the same where Cluster API's callers look:
//
//   - Discover POSTs a DiscoveryRequest to the ExtensionConfig's spec.clientConfig.url over HTTPS,
//     trusting spec.clientConfig.caBundle, and returns the ExtensionConfig with status.handlers
//     named "<handler>.<ExtensionConfig>", timeout (default 10 s) and failurePolicy (default Fail)
//     filled in. A clientConfig.service is not supported: the suites' extensions listen on
//     loopback, which only a URL reaches.
//   - WarmUp, Register, Unregister and IsReady keep the handlers in memory, keyed by name; like
//     Cluster API's registry, nothing registers before WarmUp.
//   - GetAllExtensions lists the handlers of a hook whose ExtensionConfig's namespaceSelector
//     matches the object's Namespace (read through the Reader given to New).
//   - CallExtension POSTs the request (apiVersion/kind from the catalog, settings merged from the
//     ExtensionConfig's spec.settings, the request's own winning) to
//     <url>/<group>/<version>/<hook>/<handler> within the handler's timeout. A response with status
//     Failure is an error carrying its message; with failurePolicy Ignore a failed call (transport,
//     HTTP status, undecodable body) counts as an empty success.
//   - CallAllExtensions calls every handler of the hook in turn, stops at the first error and
//     aggregates: status Success, the lowest non-zero retryAfterSeconds, the messages joined.
//
// Not supported (an error says so): handlers registered for another version of a hook than the
// one called (Cluster API converts between hook versions; every hook has one version today) and
// client certificates (the suites' extensions do not ask for them).
package runtimesdk

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	runtimeclient "sigs.k8s.io/cluster-api/exp/runtime/client"
)

// defaultTimeout is how long a call may take when the handler names no timeout, and how long
// discovery may take: runtimehooksv1.DefaultHandlersTimeoutSeconds, as Cluster API does.
const defaultTimeout = runtimehooksv1.DefaultHandlersTimeoutSeconds * time.Second

// maxTimeoutSeconds is the longest timeout a discovered handler may ask for (Cluster API's bound).
const maxTimeoutSeconds = 30

var _ runtimeclient.Client = &Client{}

// Client is a Runtime SDK client with an in-memory registry. Create it with New.
type Client struct {
	catalog *runtimecatalog.Catalog
	reader  client.Reader
	http    *httpClients

	mu       sync.RWMutex
	ready    bool
	handlers map[string]*registration // by handler name, "<handler>.<ExtensionConfig>"
}

// registration is what the registry keeps of a discovered handler: what a call needs.
type registration struct {
	name                string
	extensionConfig     string
	resourceVersion     string // of the ExtensionConfig, for callers that cache responses
	gvh                 runtimecatalog.GroupVersionHook
	namespaceSelector   labels.Selector
	clientConfig        runtimev1.ClientConfig
	timeout             time.Duration
	failurePolicy       runtimev1.FailurePolicy
	settings            map[string]string
	shortName           string // the handler's name in its extension's discovery response
	namespaceSelectorOn bool   // whether namespaceSelector selects anything less than all
}

// New returns a Client that knows Cluster API's v1alpha1 hooks. reader reads the Namespaces that
// ExtensionConfigs' namespaceSelectors are matched against (the API reader, not a cache, avoids
// a Namespace informer); it may be nil when no ExtensionConfig has a namespaceSelector.
func New(reader client.Reader) (*Client, error) {
	catalog := runtimecatalog.New()
	if err := runtimehooksv1.AddToCatalog(catalog); err != nil {
		return nil, fmt.Errorf("runtimesdk: building the hook catalog: %w", err)
	}
	return &Client{
		catalog:  catalog,
		reader:   reader,
		http:     newHTTPClients(),
		handlers: map[string]*registration{},
	}, nil
}

// Catalog is the hook catalog of the Client (Cluster API's v1alpha1 hooks), for a test's
// extension server (sigs.k8s.io/cluster-api/exp/runtime/server).
func (c *Client) Catalog() *runtimecatalog.Catalog { return c.catalog }

// WarmUp registers the handlers of every ExtensionConfig in list and makes the Client ready.
// It replaces what was registered before; it fails, registering nothing, when one of them is
// invalid, and when the Client is ready already (as Cluster API's registry does).
func (c *Client) WarmUp(list *runtimev1.ExtensionConfigList) error {
	if list == nil {
		return errors.New("runtimesdk: warm-up: ExtensionConfigList is nil")
	}
	handlers := map[string]*registration{}
	for i := range list.Items {
		regs, err := registrationsOf(&list.Items[i])
		if err != nil {
			return fmt.Errorf("runtimesdk: warm-up: %w", err)
		}
		for _, r := range regs {
			handlers[r.name] = r
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ready {
		return errors.New("runtimesdk: warm-up: the registry is warmed up already")
	}
	c.handlers, c.ready = handlers, true
	return nil
}

// IsReady reports whether WarmUp has run.
func (c *Client) IsReady() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.ready
}

// Register replaces the handlers of extensionConfig with those in its status.handlers.
func (c *Client) Register(extensionConfig *runtimev1.ExtensionConfig) error {
	if extensionConfig == nil {
		return errors.New("runtimesdk: register: ExtensionConfig is nil")
	}
	regs, err := registrationsOf(extensionConfig)
	if err != nil {
		return fmt.Errorf("runtimesdk: register: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return fmt.Errorf("runtimesdk: register ExtensionConfig %q: the registry is not warmed up", extensionConfig.Name)
	}
	c.removeLocked(extensionConfig.Name)
	for _, r := range regs {
		c.handlers[r.name] = r
	}
	return nil
}

// Unregister removes the handlers of extensionConfig.
func (c *Client) Unregister(extensionConfig *runtimev1.ExtensionConfig) error {
	if extensionConfig == nil {
		return errors.New("runtimesdk: unregister: ExtensionConfig is nil")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.ready {
		return fmt.Errorf("runtimesdk: unregister ExtensionConfig %q: the registry is not warmed up", extensionConfig.Name)
	}
	c.removeLocked(extensionConfig.Name)
	return nil
}

func (c *Client) removeLocked(extensionConfig string) {
	for name, r := range c.handlers {
		if r.extensionConfig == extensionConfig {
			delete(c.handlers, name)
		}
	}
}

// Registered returns the names of the handlers registered for the ExtensionConfig named
// extensionConfig, sorted: what a test waits for after creating one (Cluster API's reconciler
// registers its handlers once discovered).
func (c *Client) Registered(extensionConfig string) []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var names []string
	for name, r := range c.handlers {
		if r.extensionConfig == extensionConfig {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// registrationsOf reads the handlers of an ExtensionConfig's status (what Discover wrote).
func registrationsOf(ec *runtimev1.ExtensionConfig) ([]*registration, error) {
	selector := labels.Everything()
	selectorOn := false
	if ec.Spec.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(ec.Spec.NamespaceSelector)
		if err != nil {
			return nil, fmt.Errorf("ExtensionConfig %q: namespaceSelector: %w", ec.Name, err)
		}
		selector, selectorOn = s, !s.Empty()
	}
	regs := make([]*registration, 0, len(ec.Status.Handlers))
	for _, h := range ec.Status.Handlers {
		gv, err := schema.ParseGroupVersion(h.RequestHook.APIVersion)
		if err != nil {
			return nil, fmt.Errorf("ExtensionConfig %q: handler %q: apiVersion %q: %w", ec.Name, h.Name, h.RequestHook.APIVersion, err)
		}
		short, ok := strings.CutSuffix(h.Name, "."+ec.Name)
		if !ok {
			return nil, fmt.Errorf("ExtensionConfig %q: handler %q is not named <handler>.%s", ec.Name, h.Name, ec.Name)
		}
		timeout := defaultTimeout
		if h.TimeoutSeconds != 0 {
			timeout = time.Duration(h.TimeoutSeconds) * time.Second
		}
		regs = append(regs, &registration{
			name:                h.Name,
			shortName:           short,
			extensionConfig:     ec.Name,
			resourceVersion:     ec.ResourceVersion,
			gvh:                 runtimecatalog.GroupVersionHook{Group: gv.Group, Version: gv.Version, Hook: h.RequestHook.Hook},
			namespaceSelector:   selector,
			namespaceSelectorOn: selectorOn,
			clientConfig:        *ec.Spec.ClientConfig.DeepCopy(),
			timeout:             timeout,
			failurePolicy:       h.FailurePolicy,
			settings:            copySettings(ec.Spec.Settings),
		})
	}
	return regs, nil
}

func copySettings(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

// Discover asks the extension of extensionConfig for its handlers and returns a copy of
// extensionConfig whose status.handlers lists them (replacing what was there).
func (c *Client) Discover(ctx context.Context, extensionConfig *runtimev1.ExtensionConfig) (*runtimev1.ExtensionConfig, error) {
	gvh, err := c.catalog.GroupVersionHook(runtimehooksv1.Discovery)
	if err != nil {
		return nil, fmt.Errorf("runtimesdk: discover %q: %w", extensionConfig.Name, err)
	}
	response := &runtimehooksv1.DiscoveryResponse{}
	if err := c.post(ctx, extensionConfig.Spec.ClientConfig, gvh, "", defaultTimeout, &runtimehooksv1.DiscoveryRequest{}, response); err != nil {
		return nil, fmt.Errorf("runtimesdk: discover %q: %w", extensionConfig.Name, err)
	}
	if err := statusError(response); err != nil {
		return nil, fmt.Errorf("runtimesdk: discover %q: %w", extensionConfig.Name, err)
	}

	discovered := extensionConfig.DeepCopy()
	discovered.Status.Handlers = make([]runtimev1.ExtensionHandler, 0, len(response.Handlers))
	seen := map[string]bool{}
	var errs []error
	for _, h := range response.Handlers {
		if err := c.validateDiscovered(h, seen); err != nil {
			errs = append(errs, err)
			continue
		}
		discovered.Status.Handlers = append(discovered.Status.Handlers, runtimev1.ExtensionHandler{
			Name:           h.Name + "." + extensionConfig.Name,
			RequestHook:    runtimev1.GroupVersionHook{APIVersion: h.RequestHook.APIVersion, Hook: h.RequestHook.Hook},
			TimeoutSeconds: ptr.Deref(h.TimeoutSeconds, runtimehooksv1.DefaultHandlersTimeoutSeconds),
			FailurePolicy:  runtimev1.FailurePolicy(ptr.Deref(h.FailurePolicy, runtimehooksv1.FailurePolicyFail)),
		})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("runtimesdk: discover %q: invalid response: %w", extensionConfig.Name, err)
	}
	return discovered, nil
}

// validateDiscovered checks a handler of a discovery response as Cluster API does: a unique DNS
// label as name, a hook of the catalog, a timeout within 0..30 s, a known failure policy.
func (c *Client) validateDiscovered(h runtimehooksv1.ExtensionHandler, seen map[string]bool) error {
	var errs []error
	if seen[h.Name] {
		errs = append(errs, fmt.Errorf("handler name %q is not unique", h.Name))
	}
	seen[h.Name] = true
	for _, msg := range validation.IsDNS1123Label(h.Name) {
		errs = append(errs, fmt.Errorf("handler name %q: %s", h.Name, msg))
	}
	if t := ptr.Deref(h.TimeoutSeconds, 0); t < 0 || t > maxTimeoutSeconds {
		errs = append(errs, fmt.Errorf("handler %q: timeoutSeconds %d is not within 0..%d", h.Name, t, maxTimeoutSeconds))
	}
	if p := ptr.Deref(h.FailurePolicy, runtimehooksv1.FailurePolicyFail); p != runtimehooksv1.FailurePolicyFail && p != runtimehooksv1.FailurePolicyIgnore {
		errs = append(errs, fmt.Errorf("handler %q: failurePolicy %q is neither Fail nor Ignore", h.Name, p))
	}
	gv, err := schema.ParseGroupVersion(h.RequestHook.APIVersion)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("handler %q: apiVersion %q: %w", h.Name, h.RequestHook.APIVersion, err))
	case !c.catalog.IsHookRegistered(runtimecatalog.GroupVersionHook{Group: gv.Group, Version: gv.Version, Hook: h.RequestHook.Hook}):
		errs = append(errs, fmt.Errorf("handler %q: hook %s %s is not in the catalog", h.Name, h.RequestHook.APIVersion, h.RequestHook.Hook))
	}
	return errors.Join(errs...)
}

// GetAllExtensions returns the names of the handlers registered for hook whose namespaceSelector
// matches the Namespace of forObject, sorted.
func (c *Client) GetAllExtensions(ctx context.Context, hook runtimecatalog.Hook, forObject client.Object) ([]string, error) {
	gvh, err := c.catalog.GroupVersionHook(hook)
	if err != nil {
		return nil, fmt.Errorf("runtimesdk: handlers of hook %s: %w", runtimecatalog.HookName(hook), err)
	}
	regs, err := c.registered(gvh.GroupHook())
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, r := range regs {
		matches, err := c.namespaceMatches(ctx, r, forObject)
		if err != nil {
			return nil, fmt.Errorf("runtimesdk: handlers of hook %s: %w", gvh.GroupHook(), err)
		}
		if matches {
			names = append(names, r.name)
		}
	}
	slices.Sort(names)
	return names, nil
}

func (c *Client) registered(gh runtimecatalog.GroupHook) ([]*registration, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil, fmt.Errorf("runtimesdk: handlers of hook %s: the registry is not warmed up", gh)
	}
	var regs []*registration
	for _, r := range c.handlers {
		if r.gvh.GroupHook() == gh {
			regs = append(regs, r)
		}
	}
	return regs, nil
}

func (c *Client) get(name string) (*registration, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.ready {
		return nil, fmt.Errorf("runtimesdk: handler %q: the registry is not warmed up", name)
	}
	r, ok := c.handlers[name]
	if !ok {
		return nil, fmt.Errorf("runtimesdk: handler %q is not registered", name)
	}
	return r, nil
}

// namespaceMatches reports whether the Namespace of obj has the labels r's ExtensionConfig
// selects. Without a selector (the suites' ExtensionConfigs) no Namespace is read.
func (c *Client) namespaceMatches(ctx context.Context, r *registration, obj client.Object) (bool, error) {
	if !r.namespaceSelectorOn {
		return true, nil
	}
	if c.reader == nil {
		return false, fmt.Errorf("handler %q: ExtensionConfig %q has a namespaceSelector and the Client no Reader to read Namespaces", r.name, r.extensionConfig)
	}
	ns := &corev1.Namespace{}
	if err := c.reader.Get(ctx, client.ObjectKey{Name: obj.GetNamespace()}, ns); err != nil {
		return false, fmt.Errorf("handler %q: reading Namespace %q: %w", r.name, obj.GetNamespace(), err)
	}
	return r.namespaceSelector.Matches(labels.Set(ns.Labels)), nil
}

// CallAllExtensions calls every handler registered for hook that matches forObject, in name
// order, and stops at the first error. response gets status Success, the lowest non-zero
// retryAfterSeconds of the responses (for hooks that retry) and their messages joined by ", ".
func (c *Client) CallAllExtensions(ctx context.Context, hook runtimecatalog.Hook, forObject client.Object, request runtimehooksv1.RequestObject, response runtimehooksv1.ResponseObject) error {
	gvh, err := c.validateCall(hook, request, response)
	if err != nil {
		return err
	}
	names, err := c.GetAllExtensions(ctx, hook, forObject)
	if err != nil {
		return err
	}
	var messages []string
	var retryAfter int32
	for _, name := range names {
		obj, err := c.catalog.NewResponse(gvh)
		if err != nil {
			return fmt.Errorf("runtimesdk: calling handlers of hook %s: %w", gvh.GroupHook(), err)
		}
		one := obj.(runtimehooksv1.ResponseObject)
		if err := c.CallExtension(ctx, hook, forObject, name, request, one); err != nil {
			return fmt.Errorf("runtimesdk: calling handlers of hook %s: %w", gvh.GroupHook(), err)
		}
		if retry, ok := one.(runtimehooksv1.RetryResponseObject); ok {
			retryAfter = lowestNonZero(retryAfter, retry.GetRetryAfterSeconds())
		}
		if m := one.GetMessage(); m != "" {
			messages = append(messages, m)
		}
	}
	response.SetStatus(runtimehooksv1.ResponseStatusSuccess)
	response.SetMessage(strings.Join(messages, ", "))
	if retry, ok := response.(runtimehooksv1.RetryResponseObject); ok {
		retry.SetRetryAfterSeconds(retryAfter)
	}
	return nil
}

func lowestNonZero(a, b int32) int32 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	default:
		return min(a, b)
	}
}

// CallExtension calls the handler named name for hook and decodes its answer into response.
// A response with status Failure is an error with its message. A failed call (transport, HTTP
// status, body) is an error unless the handler's failurePolicy is Ignore: response is then an
// empty success. Invalid requests, unknown handlers and a namespaceSelector that does not match
// forObject are errors whatever the policy. With runtimeclient.WithCaching, a response cached
// for the same key is returned without a call, and a successful response is cached.
func (c *Client) CallExtension(ctx context.Context, hook runtimecatalog.Hook, forObject client.Object, name string, request runtimehooksv1.RequestObject, response runtimehooksv1.ResponseObject, opts ...runtimeclient.CallExtensionOption) error {
	options := &runtimeclient.CallExtensionOptions{}
	for _, o := range opts {
		o.ApplyToOptions(options)
	}
	gvh, err := c.validateCall(hook, request, response)
	if err != nil {
		return err
	}
	r, err := c.get(name)
	if err != nil {
		return err
	}
	if r.gvh.GroupHook() != gvh.GroupHook() {
		return fmt.Errorf("runtimesdk: handler %q is registered for hook %s, not %s", name, r.gvh.GroupHook(), gvh.GroupHook())
	}
	if r.gvh.Version != gvh.Version {
		return fmt.Errorf("runtimesdk: handler %q is registered for hook version %s, called with %s: converting between hook versions is not supported", name, r.gvh.Version, gvh.Version)
	}
	matches, err := c.namespaceMatches(ctx, r, forObject)
	if err != nil {
		return fmt.Errorf("runtimesdk: calling handler %q: %w", name, err)
	}
	if !matches {
		return fmt.Errorf("runtimesdk: calling handler %q: its namespaceSelector does not select the Namespace of %s", name, client.ObjectKeyFromObject(forObject))
	}

	request = withSettings(request, r.settings)
	var cacheKey string
	if options.WithCaching {
		cacheKey = options.CacheKeyFunc(r.name, r.resourceVersion, request)
		if entry, ok := options.Cache.Has(cacheKey); ok {
			out, cached := reflect.ValueOf(response), reflect.ValueOf(entry.Response)
			if out.Type() != cached.Type() {
				return fmt.Errorf("runtimesdk: calling handler %q: cached response is a %s, not a %s", name, cached.Type(), out.Type())
			}
			out.Elem().Set(cached.Elem())
			return nil
		}
	}

	if err := c.post(ctx, r.clientConfig, r.gvh, r.shortName, r.timeout, request, response); err != nil {
		var callErr *callError
		if errors.As(err, &callErr) && r.failurePolicy == runtimev1.FailurePolicyIgnore {
			ctrl.LoggerFrom(ctx).Info("Ignoring a failed call of a Runtime Extension handler (failurePolicy Ignore)", "handler", name, "error", err.Error())
			response.SetStatus(runtimehooksv1.ResponseStatusSuccess)
			response.SetMessage("")
			return nil
		}
		return fmt.Errorf("runtimesdk: calling handler %q: %w", name, err)
	}
	if err := statusError(response); err != nil {
		return fmt.Errorf("runtimesdk: calling handler %q: %w", name, err)
	}
	if options.WithCaching {
		options.Cache.Add(runtimeclient.CallExtensionCacheEntry{CacheKey: cacheKey, Response: response})
	}
	return nil
}

// validateCall returns the hook's GroupVersionHook once request and response are its types.
func (c *Client) validateCall(hook runtimecatalog.Hook, request runtimehooksv1.RequestObject, response runtimehooksv1.ResponseObject) (runtimecatalog.GroupVersionHook, error) {
	gvh, err := c.catalog.GroupVersionHook(hook)
	if err != nil {
		return gvh, fmt.Errorf("runtimesdk: hook %s: %w", runtimecatalog.HookName(hook), err)
	}
	if err := c.catalog.ValidateRequest(gvh, request); err != nil {
		return gvh, fmt.Errorf("runtimesdk: hook %s: request: %w", gvh.GroupHook(), err)
	}
	if err := c.catalog.ValidateResponse(gvh, response); err != nil {
		return gvh, fmt.Errorf("runtimesdk: hook %s: response: %w", gvh.GroupHook(), err)
	}
	return gvh, nil
}

// withSettings returns a copy of request whose settings are the ExtensionConfig's merged with
// the request's own, which win (as Cluster API merges them).
func withSettings(request runtimehooksv1.RequestObject, settings map[string]string) runtimehooksv1.RequestObject {
	out := request.DeepCopyObject().(runtimehooksv1.RequestObject)
	merged := copySettings(settings)
	for k, v := range request.GetSettings() {
		merged[k] = v
	}
	out.SetSettings(merged)
	return out
}

// statusError is the error a response's status makes: nil for Success.
func statusError(response runtimehooksv1.ResponseObject) error {
	switch response.GetStatus() {
	case runtimehooksv1.ResponseStatusSuccess:
		return nil
	case runtimehooksv1.ResponseStatusFailure:
		return fmt.Errorf("got failure response with message: %s", response.GetMessage())
	default:
		return fmt.Errorf("got response status %q with message: %s", response.GetStatus(), response.GetMessage())
	}
}
