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

package main

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Requests are counted by the verb the API server sees and the resource they are about.
func TestRequestKey(t *testing.T) {
	for _, tc := range []struct{ method, url, want string }{
		{"POST", "/api/v1/namespaces/kube-system/secrets", "POST secrets"},
		{"GET", "/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef", "GET secrets"},
		{"GET", "/api/v1/namespaces/ns/secrets", "LIST secrets"},
		{"GET", "/api/v1/namespaces/ns/secrets?watch=true&resourceVersion=1", "WATCH secrets"},
		{"PATCH", "/apis/bootstrap.cluster.x-k8s.io/v1alpha1/namespaces/ns/ignitionconfigs/w-0/status", "PATCH ignitionconfigs/status"},
		{"GET", "/apis/cluster.x-k8s.io/v1beta2/machines?limit=500", "LIST machines"},
		{"GET", "/api/v1/nodes/n-1", "GET nodes"},
		{"GET", "/api/v1/namespaces/ns", "GET namespaces"},
		{"GET", "/apis", "GET discovery"},
		{"GET", "/api/v1", "GET discovery"},
		{"GET", "/", "GET /"},
	} {
		u, err := url.Parse(tc.url)
		assert.NoError(t, err)
		assert.Equal(t, tc.want, requestKey(&http.Request{Method: tc.method, URL: u}), tc.url)
	}
}
