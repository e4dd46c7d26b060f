package provider

import (
	"errors"
	"io"
	"net"
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
type LoadBalancer struct {
	listener net.Listener

	mu       sync.Mutex
	backends []string
	next     int
	conns    sync.WaitGroup
	closed   chan struct{}
}

// dialTimeout bounds a try of one backend: a powered-off node does not answer at all.
const dialTimeout = 2 * time.Second

// StartLoadBalancer listens on a free port of addr (the bridge's host address).
func StartLoadBalancer(addr netip.Addr) (*LoadBalancer, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(addr.String(), "0"))
	if err != nil {
		return nil, err
	}
	lb := &LoadBalancer{listener: l, closed: make(chan struct{})}
	// The accept loop counts as a connection of its own: a connection it adds is then added while
	// the count is above zero, which may happen at any time, even during Close's Wait (an Add
	// from zero must happen before the Wait: go test -race caught this one).
	lb.conns.Add(1)
	go func() {
		defer lb.conns.Done()
		lb.serve()
	}()
	return lb, nil
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

// order is the backends starting at the next one in turn.
func (lb *LoadBalancer) order() []string {
	lb.mu.Lock()
	defer lb.mu.Unlock()
	n := len(lb.backends)
	if n == 0 {
		return nil
	}
	start := lb.next % n
	lb.next++
	return append(slices.Clone(lb.backends[start:]), lb.backends[:start]...)
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
