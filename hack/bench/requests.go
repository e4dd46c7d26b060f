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
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// What a manager asks of the two clusters, by verb and resource. The management cluster's
// requests are counted on the manager's own rest.Config (wrap); the workload cluster's, which
// the manager's ClusterCache sends from a kubeconfig Secret the bench does not build the client
// of, are counted by workloadProxy, which that kubeconfig points at. Both count what leaves the
// client, after its rate limiter: what the API servers see.

// requestCounts is one manager's requests to one cluster, by "VERB resource".
type requestCounts struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounts) add(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.counts == nil {
		c.counts = map[string]int{}
	}
	c.counts[key]++
}

// snapshot is a copy of the counts so far.
func (c *requestCounts) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.counts))
	for k, v := range c.counts {
		out[k] = v
	}
	return out
}

func (c *requestCounts) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.counts = map[string]int{}
}

// managerRequests are one manager's requests to the management cluster and to the workload
// cluster.
type managerRequests struct {
	management, workload requestCounts
}

// requestsSnapshot is what managerRequests had counted at one moment.
type requestsSnapshot struct {
	management, workload map[string]int
}

func (m *managerRequests) snapshot() requestsSnapshot {
	return requestsSnapshot{management: m.management.snapshot(), workload: m.workload.snapshot()}
}

func (m *managerRequests) reset() {
	m.management.reset()
	m.workload.reset()
}

// total is the number of requests in counts.
func total(counts map[string]int) int {
	n := 0
	for _, v := range counts {
		n += v
	}
	return n
}

// requests holds each contender's counts of its latest run.
var requests = map[string]*managerRequests{"cabpi": {}, "CABPK": {}}

// wrap counts the requests sent with cfg, the manager's management-cluster config.
func (m *managerRequests) wrap(cfg *rest.Config) {
	m.reset()
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			m.management.add(requestKey(req))
			return rt.RoundTrip(req)
		})
	})
}

// workloadProxy stands between the workload clusters' clients and the API server (the
// workload cluster is the envtest API server itself): plain HTTP on loopback in front, the
// envtest administrator's TLS client certificate behind. It counts each request for the
// contender whose ClusterCache sent it (told apart by user agent: Cluster API's Machine
// controller and the harness use the same kubeconfig, and are not counted).
type workloadProxy struct {
	url string
	srv *http.Server
}

func startWorkloadProxy(upstream *rest.Config) (*workloadProxy, error) {
	target, err := url.Parse(upstream.Host)
	if err != nil {
		return nil, fmt.Errorf("workload proxy: API server address %q: %w", upstream.Host, err)
	}
	if target.Scheme == "" {
		target, _ = url.Parse("https://" + upstream.Host)
	}
	transport, err := rest.TransportFor(upstream)
	if err != nil {
		return nil, fmt.Errorf("workload proxy: transport: %w", err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("workload proxy: %w", err)
	}
	p := &workloadProxy{url: "http://" + l.Addr().String()}
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if c := contenderOfWorkloadAgent(req.UserAgent()); c != nil {
			c.workload.add(requestKey(req))
		}
		rp.ServeHTTP(w, req)
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *workloadProxy) stop() { _ = p.srv.Close() }

// kubeconfig is a workload kubeconfig for clusterName that reaches the API server through p.
func (p *workloadProxy) kubeconfig(clusterName string) ([]byte, error) {
	return clientcmd.Write(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{clusterName: {Server: p.url}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"bench": {}},
		Contexts:       map[string]*clientcmdapi.Context{"bench@" + clusterName: {Cluster: clusterName, AuthInfo: "bench"}},
		CurrentContext: "bench@" + clusterName,
	})
}

// contenderOfWorkloadAgent is the counts of the contender whose ClusterCache uses this user
// agent: cabpi's is "cabpi" (internal/setup); CABPK's is Cluster API's default for the
// controller name "kubeadmconfig" (remote.DefaultClusterAPIUserAgent). nil for anyone else.
func contenderOfWorkloadAgent(agent string) *managerRequests {
	switch {
	case agent == "cabpi":
		return requests["cabpi"]
	case strings.Contains(agent, " kubeadmconfig "):
		return requests["CABPK"]
	}
	return nil
}

// requestKey names a request by verb and resource: GET of a collection is LIST, GET with
// watch=true WATCH; the resource is its plural name, with "/subresource" if any.
func requestKey(req *http.Request) string {
	resource, named := resourceOf(req.URL.Path)
	verb := req.Method
	switch {
	case verb == http.MethodGet && req.URL.Query().Get("watch") == "true":
		verb = "WATCH"
	case verb == http.MethodGet && !named:
		verb = "LIST"
	}
	return verb + " " + resource
}

// resourceOf turns /api/v1/namespaces/ns/secrets/name into ("secrets", true),
// /apis/g/v/namespaces/ns/kind/name/status into ("kind/status", true),
// /apis/g/v/namespaces/ns/kind into ("kind", false); discovery paths are "discovery", other
// non-resource paths themselves.
func resourceOf(path string) (string, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	case len(parts) >= 1 && (parts[0] == "api" || parts[0] == "apis"):
		return "discovery", true
	default:
		return "/" + strings.Join(parts, "/"), true
	}
	if len(rest) == 0 {
		return "discovery", true
	}
	if rest[0] == "namespaces" && len(rest) >= 3 {
		rest = rest[2:]
	}
	switch len(rest) {
	case 1:
		return rest[0], false
	case 2:
		return rest[0], true
	}
	return rest[0] + "/" + rest[2], true
}

// perConfig lists counts divided by configs, most frequent first, one "VERB resource" a line.
func perConfig(counts map[string]int, configs int) string {
	keys := sortedKeys(counts)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-40s %6d (%.2f per config)\n", k, counts[k], float64(counts[k])/float64(configs))
	}
	return b.String()
}

// sortedKeys are the keys of counts, most frequent first, then by name.
func sortedKeys(counts map[string]int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
