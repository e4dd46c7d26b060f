package provider

import (
	"io"
	"net"
	"net/netip"
	"strconv"
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
