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

package crash_test

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// An API server that goes away while configs reconcile (a restart, etcd kept) and comes back:
// the manager, which reaches it through a loopback proxy that the test cuts, loses every
// connection and watch, cannot connect for a while, and then converges with nothing written
// twice.
func TestAPIServerOutage(t *testing.T) {
	ctx := t.Context()
	target, err := url.Parse(env.Config.Host)
	require.NoError(t, err)
	proxy := startProxy(t, target.Host)

	data, err := env.Kubeconfig("envtest")
	require.NoError(t, err)
	cfg, err := clientcmd.Load(data)
	require.NoError(t, err)
	for _, c := range cfg.Clusters {
		c.Server = "https://" + proxy.addr
	}
	data, err = clientcmd.Write(*cfg)
	require.NoError(t, err)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, data, 0o600))

	ns := env.CreateNamespace(t, "outage").Name
	f := fx.CreateCluster(t, ns, "c1", fixtures.ClusterSetup{})

	m := startManager(t, kubeconfig, filepath.Join(t.TempDir(), "manager.log"))
	defer m.kill(t)
	var names []string
	add := func(n int) {
		for range n {
			name := fmt.Sprintf("w-%d", len(names))
			names = append(names, name)
			f.AddMachine(t, name, false, cabpiv1.IgnitionConfigSpec{})
		}
	}
	add(10)
	// The cut is to hit a manager at work: it has connections through the proxy and has written
	// to some of the configs.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Positive(c, proxy.liveConnections(), "the manager has no connection through the proxy")
		written := 0
		for _, name := range names {
			cfg := &cabpiv1.IgnitionConfig{}
			if assert.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cfg)) && len(cfg.Status.Conditions) > 0 {
				written++
			}
		}
		assert.Positive(c, written, "the manager has written no condition yet (log in %s)", m.log)
	}, 2*time.Minute, 20*time.Millisecond)
	proxy.cut()
	add(10) // arrive while the API server is away from the manager
	time.Sleep(3 * time.Second)
	proxy.restore(t)
	add(5)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, name := range names {
			cfg := &cabpiv1.IgnitionConfig{}
			if assert.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cfg)) {
				assert.True(c, conditions.IsTrue(cfg, cabpiv1.ReadyCondition), "%s: %v", name, cfg.Status.Conditions)
			}
		}
	}, 2*time.Minute, 500*time.Millisecond)
	assert.Positive(t, proxy.cutConnections(), "the cut broke live connections of the manager")
	tokens, err := fixtures.JoinTokens(ctx, env.Client)
	require.NoError(t, err)
	for _, name := range names {
		assert.LessOrEqual(t, len(tokens[ns+"/"+name]), 1, "join tokens of %s", name)
	}
}

// tcpProxy forwards loopback connections to the API server until it is cut.
type tcpProxy struct {
	addr, target string
	mu           sync.Mutex
	listener     net.Listener
	conns        map[net.Conn]bool
	cutCount     int
	wg           sync.WaitGroup
}

func startProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{target: target, conns: map[net.Conn]bool{}}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p.addr = l.Addr().String()
	p.serve(l)
	t.Cleanup(func() { p.cut(); p.wg.Wait() })
	return p
}

func (p *tcpProxy) serve(l net.Listener) {
	p.mu.Lock()
	p.listener = l
	p.mu.Unlock()
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", p.target)
			if err != nil {
				in.Close()
				continue
			}
			p.mu.Lock()
			p.conns[in], p.conns[out] = true, true
			p.mu.Unlock()
			for _, pair := range [][2]net.Conn{{in, out}, {out, in}} {
				p.wg.Add(1)
				go func() {
					defer p.wg.Done()
					_, _ = io.Copy(pair[0], pair[1])
					pair[0].Close()
					pair[1].Close()
					// Closed: no longer live (nor counted when the proxy is cut).
					p.mu.Lock()
					delete(p.conns, pair[0])
					delete(p.conns, pair[1])
					p.mu.Unlock()
				}()
			}
		}
	}()
}

// cut closes the listener and every connection: new connections are refused until restore.
func (p *tcpProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.listener != nil {
		p.listener.Close()
		p.listener = nil
	}
	for c := range p.conns {
		c.Close()
		p.cutCount++
	}
	p.conns = map[net.Conn]bool{}
}

// restore listens again on the same address.
func (p *tcpProxy) restore(t *testing.T) {
	var l net.Listener
	require.Eventually(t, func() bool {
		var err error
		l, err = net.Listen("tcp", p.addr)
		return err == nil
	}, 10*time.Second, 100*time.Millisecond, "listening again on %s", p.addr)
	p.serve(l)
}

// liveConnections counts the manager's connections the proxy forwards now.
func (p *tcpProxy) liveConnections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns) / 2 // each is the manager's end and the API server's
}

// cutConnections counts the connections (each end) that cuts broke.
func (p *tcpProxy) cutConnections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cutCount
}
