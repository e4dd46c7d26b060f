package main

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// requestCounter counts a manager's requests to the management cluster by verb and resource:
// with -v the bench prints them per run, to see what a config costs besides its token.
// requests holds each contender's counter of its latest run.
var requests = map[string]*requestCounter{"cabpi": {}, "CABPK": {}}

type requestCounter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (c *requestCounter) wrap(cfg *rest.Config) {
	c.counts = map[string]int{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			key := req.Method + " " + resourceOf(req.URL.Path)
			if req.URL.Query().Get("watch") == "true" {
				key = "WATCH " + resourceOf(req.URL.Path)
			}
			c.mu.Lock()
			c.counts[key]++
			c.mu.Unlock()
			return rt.RoundTrip(req)
		})
	})
}

// summary lists the counts per config, most frequent first.
func (c *requestCounter) summary(configs int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.counts))
	for k := range c.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return c.counts[keys[i]] > c.counts[keys[j]] })
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %-40s %6d (%.2f per config)\n", k, c.counts[k], float64(c.counts[k])/float64(configs))
	}
	return b.String()
}

// resourceOf turns /api/v1/namespaces/ns/secrets/name into "secrets" and
// /apis/g/v/namespaces/ns/kind/name/status into "kind/status".
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		if p == "namespaces" && i+2 < len(parts) {
			rest := parts[i+2:]
			if len(rest) >= 3 {
				return rest[0] + "/" + rest[2]
			}
			return rest[0]
		}
	}
	if len(parts) > 0 {
		return parts[len(parts)-1]
	}
	return path
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
