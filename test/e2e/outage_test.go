package e2e_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/runtimesdk"
)

// outageNamespace holds the Machines of TestInPlaceUpdateWaitsForTheExtension, whose extension
// Cluster API reaches through a proxy the test can take down (outageLabel selects it).
const (
	outageNamespace = "e2e-inplace-outage"
	outageLabel     = "e2e.cabpi.dev/in-place-outage"
	// outageFor is how long the extension stays unreachable after the version changed: long
	// enough for Cluster API to call CanUpdateMachineSet several times (its requeues back off
	// from milliseconds to seconds).
	outageFor = 45 * time.Second
)

// extensionProxy forwards TCP connections from a loopback port to the suite's update extension,
// and can be taken down (the port refuses connections, as with cabpi's manager stopped) and up
// again on the same port.
type extensionProxy struct {
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]struct{}
}

func startExtensionProxy(t *testing.T, target string) *extensionProxy {
	t.Helper()
	port, err := runtimesdk.FreeLoopbackPort()
	require.NoError(t, err)
	p := &extensionProxy{addr: fmt.Sprintf("127.0.0.1:%d", port), target: target, conns: map[net.Conn]struct{}{}}
	require.NoError(t, p.up())
	t.Cleanup(p.down)
	return p
}

// up listens again and forwards every connection it accepts.
func (p *extensionProxy) up() error {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		return fmt.Errorf("the extension proxy on %s: %w", p.addr, err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return // closed by down
			}
			go p.forward(in)
		}
	}()
	return nil
}

func (p *extensionProxy) forward(in net.Conn) {
	out, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = in.Close()
		return
	}
	p.mu.Lock()
	p.conns[in], p.conns[out] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(out, in)
	go pipe(in, out)
	<-done
	p.mu.Lock()
	delete(p.conns, in)
	delete(p.conns, out)
	p.mu.Unlock()
	_ = in.Close()
	_ = out.Close()
}

// down stops listening and cuts every connection: the extension cannot be reached.
func (p *extensionProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// A MachineDeployment whose version changes while cabpi's extension cannot be reached (its
// manager stopped): Cluster API's CanUpdateMachineSet calls fail, and it neither replaces a
// Machine nor caches a "cannot" (docs/adr/038: the hooks' failure policy is Fail, and an error is
// asked again). Once the extension is back, the Machine is updated in place: the same Machine,
// node and Node object at the new version, and no Machine created or deleted at any time.
func TestInPlaceUpdateWaitsForTheExtension(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: outageNamespace, Labels: map[string]string{outageLabel: "true"}}}
	if err := mgmt.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err)
	}
	_, err := createExternalCluster(ctx, mgmt.Client, outageNamespace, clusterName, workloadCP)
	require.NoError(t, err)

	// The extension as Cluster API reaches it here: through the proxy, for this namespace alone.
	proxy := startExtensionProxy(t, fmt.Sprintf("127.0.0.1:%d", updateExtensionPort))
	ec := runtimesdk.ExtensionConfigFor("cabpi-update-extension-outage", "https://"+proxy.addr, mgmt.TestEnv.WebhookInstallOptions.LocalServingCAData)
	ec.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{outageLabel: "true"}}
	require.NoError(t, mgmt.Client.Create(ctx, ec))
	t.Cleanup(func() { _ = mgmt.Client.Delete(context.Background(), ec) })
	_, err = mgmt.WaitForExtension(ctx, ec.Name, time.Minute)
	require.NoError(t, err, "Cluster API discovers the extension through the proxy")

	f := stockFlatcar
	md := "outage-inplace"
	deployment, machines := inPlaceDeploymentIn(t, outageNamespace, f, md, 1, cabpiv1.KubernetesSpec{
		Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{BaseURL: releases.SysextURL()}})
	before := prepareNode(t, &machines[0])

	proxy.down()
	setDeploymentVersion(t, deployment, kubernetesVersion, "")
	deadline := time.Now().Add(outageFor)
	for time.Now().Before(deadline) {
		cur, err := deploymentMachinesIn(ctx, mgmt.Client, outageNamespace, md)
		require.NoError(t, err)
		require.Equal(t, names(machines), names(cur), "while the extension is down, no Machine is created or removed")
		require.Nil(t, cur[0].DeletionTimestamp, "while the extension is down, the Machine is not deleted")
		time.Sleep(2 * time.Second)
	}
	m := &clusterv1.Machine{}
	require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&machines[0]), m))
	node, err := workloadC.CoreV1().Nodes().Get(ctx, m.Status.NodeRef.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, previousKubernetesVersion, node.Status.NodeInfo.KubeletVersion, "nothing happened to the node")

	require.NoError(t, proxy.up(), "the extension is back")
	updated := waitUpdatedInPlace(t, deployment, kubernetesVersion, names(machines))
	assertKept(t, []nodeBefore{before}, updated)
	assertKubernetesOnNode(t, instanceOf(t, &updated[0]), kubernetesVersion)
}
