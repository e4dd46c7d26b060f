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
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
)

// maxResponseBytes bounds what is read of an extension's answer (Cluster API reads 20 MiB at most).
const maxResponseBytes = 20 << 20

// callError is a call that did not get a decodable answer: the request failed, the HTTP status
// was not 200, or the body was not the response type. A handler's failurePolicy Ignore applies
// to these alone.
type callError struct{ err error }

func (e *callError) Error() string { return e.err.Error() }
func (e *callError) Unwrap() error { return e.err }

// httpClients are the HTTP clients of the Client, one per CA bundle, so that connections to an
// extension are reused across calls.
type httpClients struct {
	mu   sync.Mutex
	byCA map[string]*http.Client
}

func newHTTPClients() *httpClients { return &httpClients{byCA: map[string]*http.Client{}} }

// forCA returns the client that trusts caBundle (PEM) alone; an empty bundle trusts the
// system's roots, as Cluster API's client does.
func (h *httpClients) forCA(caBundle []byte) (*http.Client, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.byCA[string(caBundle)]; ok {
		return c, nil
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if len(caBundle) > 0 {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caBundle) {
			return nil, errors.New("caBundle holds no PEM certificate")
		}
		tlsConfig.RootCAs = pool
	}
	c := &http.Client{
		Transport: &http.Transport{TLSClientConfig: tlsConfig, ForceAttemptHTTP2: true},
		// An extension is called at the URL its ExtensionConfig names, and nowhere else.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	h.byCA[string(caBundle)] = c
	return c, nil
}

// CloseIdleConnections closes the idle connections to every extension called so far.
func (h *httpClients) CloseIdleConnections() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range h.byCA {
		c.CloseIdleConnections()
	}
}

// CloseIdleConnections closes the Client's idle connections to extensions (e.g. before a test
// checks for leaked goroutines, or once the extension has stopped).
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// handlerURL is where the handler name (empty for discovery) of hook gvh of the extension of
// config listens: the config's URL with /<group>/<version>/<hook>[/<name>] appended.
func handlerURL(config runtimev1.ClientConfig, gvh runtimecatalog.GroupVersionHook, name string) (*url.URL, error) {
	if config.Service.IsDefined() {
		return nil, errors.New("clientConfig.service is not supported by the suites' Runtime SDK client: use clientConfig.url")
	}
	if config.URL == "" {
		return nil, errors.New("clientConfig has no url")
	}
	u, err := url.Parse(config.URL)
	if err != nil {
		return nil, fmt.Errorf("clientConfig.url: %w", err)
	}
	if u.Scheme != "https" {
		return nil, fmt.Errorf("clientConfig.url %q: the scheme must be https", config.URL)
	}
	u.Path = path.Join(u.Path, runtimecatalog.GVHToPath(gvh, name))
	return u, nil
}

// post sends request (with the apiVersion and kind of gvh's request type) to the handler name of
// the extension of config and decodes the answer into response, within timeout. Errors after
// the request was built are callErrors.
func (c *Client) post(ctx context.Context, config runtimev1.ClientConfig, gvh runtimecatalog.GroupVersionHook, name string, timeout time.Duration, request, response runtime.Object) error {
	u, err := handlerURL(config, gvh, name)
	if err != nil {
		return err
	}
	httpClient, err := c.http.forCA(config.CABundle)
	if err != nil {
		return fmt.Errorf("clientConfig.caBundle: %w", err)
	}
	gvk, err := c.catalog.Request(gvh)
	if err != nil {
		return err
	}
	request.GetObjectKind().SetGroupVersionKind(gvk)
	body, err := json.Marshal(request)
	if err != nil {
		return fmt.Errorf("encoding the %s: %w", gvk.Kind, err)
	}

	ctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no answer within the handler's timeout, %s", timeout))
	defer cancel()
	httpRequest, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building the request to %s: %w", u, err)
	}
	httpRequest.Header.Set("Content-Type", "application/json")
	httpResponse, err := httpClient.Do(httpRequest)
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, ctx.Err()) {
			err = fmt.Errorf("%w: %w", err, cause)
		}
		return &callError{fmt.Errorf("POST %s: %w", u, err)}
	}
	defer httpResponse.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(httpResponse.Body, maxResponseBytes))
	if err != nil {
		return &callError{fmt.Errorf("POST %s: reading the answer: %w", u, err)}
	}
	if httpResponse.StatusCode != http.StatusOK {
		const shown = 512
		if len(answer) > shown {
			answer = append(answer[:shown], "..."...)
		}
		return &callError{fmt.Errorf("POST %s: status %d, body %q", u, httpResponse.StatusCode, answer)}
	}
	if err := json.Unmarshal(answer, response); err != nil {
		return &callError{fmt.Errorf("POST %s: decoding the answer: %w", u, err)}
	}
	return nil
}
