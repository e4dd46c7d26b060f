package provider

import (
	"io"
	"net"
	"net/netip"
	"strconv"
	"testing"

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
