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
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoServer answers each connection with its name and closes it.
func echoServer(t *testing.T, name string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(name))
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}

func ask(t *testing.T, lb *LoadBalancer) string {
	t.Helper()
	host, port := lb.Endpoint()
	c, err := net.Dial("tcp", net.JoinHostPort(host, itoa(port)))
	require.NoError(t, err)
	defer c.Close()
	b, _ := io.ReadAll(c)
	return string(b)
}

func itoa(p int32) string { return strconv.Itoa(int(p)) }

// Connections go round robin over the backends, and a backend that refuses is skipped: the
// endpoint answers while any one of them is down.
func TestLoadBalancer(t *testing.T) {
	lb, err := StartLoadBalancer(netip.MustParseAddr("127.0.0.1"))
	require.NoError(t, err)
	defer lb.Close()
	assert.Equal(t, "", ask(t, lb), "no backend: the connection is closed")

	a, b := echoServer(t, "a"), echoServer(t, "b")
	lb.SetBackends([]string{a, b})
	seen := map[string]bool{ask(t, lb): true, ask(t, lb): true}
	assert.Equal(t, map[string]bool{"a": true, "b": true}, seen, "round robin")

	down, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	downAddr := down.Addr().String()
	require.NoError(t, down.Close())
	lb.SetBackends([]string{downAddr, a})
	for range 3 {
		assert.Equal(t, "a", ask(t, lb), "the refusing backend is skipped")
	}
}

// Close returns while a connection waits on a backend that never answers nor closes (a node
// removed under an open connection sends no reset): a client that has closed its side leaves the
// proxy waiting for the backend's, and the cluster's deletion waits on Close.
func TestLoadBalancerClosesWithASilentBackend(t *testing.T) {
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		if c, err := silent.Accept(); err == nil {
			accepted <- c // held open, never written to
		}
	}()
	lb, err := StartLoadBalancer(netip.MustParseAddr("127.0.0.1"))
	require.NoError(t, err)
	lb.SetBackends([]string{silent.Addr().String()})

	host, port := lb.Endpoint()
	c, err := net.Dial("tcp", net.JoinHostPort(host, itoa(port)))
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("GET"))
	require.NoError(t, err)
	require.NoError(t, c.(*net.TCPConn).CloseWrite(), "the client is done sending")
	backend := <-accepted
	defer backend.Close()
	b := make([]byte, 3)
	_, err = io.ReadFull(backend, b)
	require.NoError(t, err, "the request reached the backend")

	closed := make(chan error, 1)
	go func() { closed <- lb.Close() }()
	select {
	case err := <-closed:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Close waits for a backend that never answers")
	}
}

// apiServer is a TLS server like a kube-apiserver's: GET /readyz answers 200 while ready says
// so and 500 before; GET /name answers its name.
func apiServer(t *testing.T, name string, ready *atomic.Bool) string {
	t.Helper()
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/readyz":
			if !ready.Load() {
				http.Error(w, "[-]informer-sync failed", http.StatusInternalServerError)
				return
			}
			_, _ = io.WriteString(w, "ok")
		default:
			_, _ = io.WriteString(w, name)
		}
	}))
	t.Cleanup(s.Close)
	return s.Listener.Addr().String()
}

// askTLS asks the load balancer's endpoint for the answering backend's name, on a new connection.
func askTLS(t *testing.T, lb *LoadBalancer) string {
	t.Helper()
	host, port := lb.Endpoint()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		DisableKeepAlives: true, TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own server
	resp, err := client.Get("https://" + net.JoinHostPort(host, itoa(port)) + "/name")
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// With the API servers' health checked, connections go to the ready ones while there are any: an
// API server that accepts connections before its informers have synced answers a bootstrap
// token's join with Unauthorized. Before any is ready, and once all are again, every backend
// takes its turn.
func TestLoadBalancerPrefersReadyAPIServers(t *testing.T) {
	var aReady, bReady atomic.Bool
	a, b := apiServer(t, "a", &aReady), apiServer(t, "b", &bReady)
	lb, err := StartLoadBalancer(netip.MustParseAddr("127.0.0.1"), WithReadyz())
	require.NoError(t, err)
	defer lb.Close()
	lb.SetBackends([]string{a, b})

	seen := map[string]bool{}
	for range 4 {
		seen[askTLS(t, lb)] = true
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true}, seen, "none ready: round robin over all")

	aReady.Store(true)
	require.Eventually(t, func() bool { return slices.Equal(lb.Ready(), []string{a}) }, 10*time.Second, 50*time.Millisecond,
		"a's /readyz passes the check")
	for range 6 {
		assert.Equal(t, "a", askTLS(t, lb), "b is not ready: only a answers")
	}

	bReady.Store(true)
	require.Eventually(t, func() bool { return len(lb.Ready()) == 2 }, 10*time.Second, 50*time.Millisecond)
	seen = map[string]bool{}
	for range 4 {
		seen[askTLS(t, lb)] = true
	}
	assert.Equal(t, map[string]bool{"a": true, "b": true}, seen, "both ready: round robin")
}
