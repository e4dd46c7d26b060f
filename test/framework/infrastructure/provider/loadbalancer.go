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

package provider

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"
)

// LoadBalancer is a TCP load balancer on the suite's bridge in front of a cluster's control-plane
// nodes, as CAPD runs haproxy: the cluster's control-plane endpoint survives any one node. Each
// connection goes to the next backend that accepts it (round robin, a refused or silent backend
// skipped), so the endpoint answers while one node is down or not up yet.
//
// With a health check (WithReadyz) the backends that passed their last check come first, as
// haproxy's httpchk and the clouds' load balancers route: an API server that has just started
// accepts connections before it can authenticate a bootstrap token (its informers have not
// synced), and a join sent there fails with Unauthorized. The others still follow, so the
// endpoint answers while no backend is ready (the first control-plane node's own kubeadm init).
type LoadBalancer struct {
	listener net.Listener
	check    func(ctx context.Context, backend string) bool

	mu       sync.Mutex
	backends []string
	ready    map[string]bool
	next     int
	conns    sync.WaitGroup
	closed   chan struct{}
	// stopChecks ends a health check under way when the load balancer closes.
	stopChecks context.CancelFunc
}

// dialTimeout bounds a try of one backend: a powered-off node does not answer at all.
const dialTimeout = 2 * time.Second

// checkInterval is how often each backend's health is checked; checkTimeout bounds one check
// (a loaded API server answers /readyz in well under it).
const (
	checkInterval = time.Second
	checkTimeout  = 2 * time.Second
)

// LoadBalancerOption configures a LoadBalancer.
type LoadBalancerOption func(*LoadBalancer)

// WithReadyz checks each backend as a Kubernetes API server: ready while GET /readyz over TLS
// answers 200. The certificate is not verified (the load balancer passes TCP through and holds
// no CA, as haproxy's "check-ssl verify none"); /readyz is readable anonymously, and its
// informer-sync check is what a bootstrap-token join needs.
func WithReadyz() LoadBalancerOption {
	client := &http.Client{
		Timeout: checkTimeout,
		Transport: &http.Transport{
			TLSClientConfig:     &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a health check of a TCP pass-through, as haproxy's
			MaxIdleConnsPerHost: 1,
		},
	}
	return func(lb *LoadBalancer) {
		lb.check = func(ctx context.Context, backend string) bool {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+backend+"/readyz", nil)
			if err != nil {
				return false
			}
			resp, err := client.Do(req)
			if err != nil {
				return false
			}
			defer resp.Body.Close()
			_, _ = io.Copy(io.Discard, resp.Body)
			return resp.StatusCode == http.StatusOK
		}
	}
}

// StartLoadBalancer listens on a free port of addr (the bridge's host address).
func StartLoadBalancer(addr netip.Addr, opts ...LoadBalancerOption) (*LoadBalancer, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		return nil, err
	}
	lb := &LoadBalancer{listener: l, closed: make(chan struct{}), ready: map[string]bool{}}
	for _, o := range opts {
		o(lb)
	}
	// The accept loop counts as a connection of its own: a connection it adds is then added while
	// the count is above zero, which may happen at any time, even during Close's Wait (an Add
	// from zero must happen before the Wait: go test -race caught this one).
	lb.conns.Add(1)
	go func() {
		defer lb.conns.Done()
		lb.serve()
	}()
	if lb.check != nil {
		var ctx context.Context
		ctx, lb.stopChecks = context.WithCancel(context.Background())
		lb.conns.Add(1)
		go func() {
			defer lb.conns.Done()
			lb.checkHealth(ctx)
		}()
	}
	return lb, nil
}

// checkHealth checks every backend each checkInterval until the load balancer closes.
func (lb *LoadBalancer) checkHealth(ctx context.Context) {
	tick := time.NewTicker(checkInterval)
	defer tick.Stop()
	for {
		backends := lb.Backends()
		ready := make(map[string]bool, len(backends))
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, b := range backends {
			wg.Go(func() {
				ok := lb.check(ctx, b)
				mu.Lock()
				ready[b] = ok
				mu.Unlock()
			})
		}
		wg.Wait()
		lb.mu.Lock()
		lb.ready = ready
		lb.mu.Unlock()
		select {
		case <-lb.closed:
			return
		case <-tick.C:
		}
	}
}

// Ready are the backends that passed their last health check.
func (lb *LoadBalancer) Ready() []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	var out []string
	for _, b := range lb.backends {
		if lb.ready[b] {
			out = append(out, b)
		}
	}
	return out
}

// Endpoint is the address and port clients use.
func (lb *LoadBalancer) Endpoint() (string, int32) {
	a := lb.listener.Addr().(*net.TCPAddr)
	return a.IP.String(), int32(a.Port)
}

// SetBackends replaces the backends ("host:port").
func (lb *LoadBalancer) SetBackends(backends []string) {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	lb.backends = slices.Clone(backends)
}

// Backends are the current backends.
func (lb *LoadBalancer) Backends() []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	return slices.Clone(lb.backends)
}

// Close stops listening and waits for the open connections to end.
func (lb *LoadBalancer) Close() error {
	close(lb.closed)
	if lb.stopChecks != nil {
		lb.stopChecks()
	}
	err := lb.listener.Close()
	lb.conns.Wait()
	return err
}

func (lb *LoadBalancer) serve() {
	for {
		c, err := lb.listener.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		lb.conns.Add(1)
		go func() {
			defer lb.conns.Done()
			lb.proxy(c)
		}()
	}
}

// order is the backends starting at the next one in turn, those that passed their last health
// check first.
func (lb *LoadBalancer) order() []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	n := len(lb.backends)
	if n == 0 {
		return nil
	}
	start := lb.next % n
	lb.next++
	turn := append(slices.Clone(lb.backends[start:]), lb.backends[:start]...)
	var ready, rest []string
	for _, b := range turn {
		if lb.ready[b] {
			ready = append(ready, b)
		} else {
			rest = append(rest, b)
		}
	}
	return append(ready, rest...)
}

func (lb *LoadBalancer) proxy(client net.Conn) {
	defer client.Close()
	var backend net.Conn
	for _, b := range lb.order() {
		c, err := net.DialTimeout("tcp", b, dialTimeout)
		if err == nil {
			backend = c
			break
		}
	}
	if backend == nil {
		return
	}
	defer backend.Close()
	done := make(chan struct{}, 2)
	pipe := func(to, from net.Conn) {
		_, _ = io.Copy(to, from)
		if tc, ok := to.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(backend, client)
	go pipe(client, backend)
	// Once one side is done the other may never be: a backend removed under the connection sends
	// no reset. Close ends the wait either way (the deferred closes end both copies).
	for range 2 {
		select {
		case <-done:
		case <-lb.closed:
			return
		}
	}
}

// apiServerBackend is a control-plane node's API server.
func apiServerBackend(addr string) string { return net.JoinHostPort(addr, strconv.Itoa(6443)) }
