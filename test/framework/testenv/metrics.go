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

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv/freeport"
)

// FreeLocalAddress returns 127.0.0.1:<port> with a port nobody listens on, for a server (the
// manager's metrics endpoint) that takes an address rather than a listener: a port of package
// freeport, which nothing else takes before the server listens on it.
func FreeLocalAddress() (string, error) {
	port, err := freeport.Loopback()
	if err != nil {
		return "", fmt.Errorf("testenv: a free local address: %w", err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), nil
}

// ServiceAccountToken creates the ServiceAccount namespace/name (unless it exists) and returns
// a token for it from the TokenRequest API, valid for an hour: what a Prometheus running as that
// ServiceAccount sends.
func (e *Environment) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := e.Client.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("creating ServiceAccount %s/%s: %w", namespace, name, err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := e.Client.SubResource("token").Create(ctx, sa, req); err != nil {
		return "", fmt.Errorf("requesting a token for ServiceAccount %s/%s: %w", namespace, name, err)
	}
	return req.Status.Token, nil
}

// BindClusterRole binds the ClusterRole role to the ServiceAccount namespace/name and waits until
// the API server authorizes it to get path (a non-resource URL such as /metrics): a server that
// asks the API server before the binding is in effect caches the refusal.
func (e *Environment) BindClusterRole(ctx context.Context, role, namespace, name, path string) error {
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + namespace + "-" + name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}},
	}
	if err := e.Client.Create(ctx, binding); err != nil {
		return fmt.Errorf("binding ClusterRole %s to %s/%s: %w", role, namespace, name, err)
	}
	user := "system:serviceaccount:" + namespace + ":" + name
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  user,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: "get"},
		}}
		if err := e.Client.Create(ctx, sar); err != nil {
			return false, err
		}
		return sar.Status.Allowed, nil
	})
	if err != nil {
		return fmt.Errorf("%s may still not get %s: %w", user, path, err)
	}
	return nil
}

// ScrapeMetrics gets https://<address>/metrics with token as bearer token ("" sends none) and
// returns the status code and body. The manager's certificate is self-signed: not verified.
func ScrapeMetrics(ctx context.Context, address, token string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+address+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}} //nolint:gosec // self-signed test endpoint
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Timeout: 30 * time.Second, Transport: transport}).Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", fmt.Errorf("reading the metrics: %w", err)
	}
	return resp.StatusCode, string(body), nil
}
