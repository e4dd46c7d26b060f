// Package e2e_test boots real nodes (systemd-nspawn machines, systemd as PID 1) from cabpi's
// rendered Ignition and lets the real kubeadm and kubelet join them to a real control plane
// (docs/nodes-in-tests.md, docs/adr/022-real-nodes.md). `make e2e` runs it; it needs root,
// systemd-nspawn and debootstrap, and the Kubernetes binaries `make e2e` builds.
//
// This first suite joins a worker of each flavor from cabpi's default worker output and proves
// that a join that cannot succeed leaves no sentinel; the Cluster API-driven cases (a test
// infrastructure provider, MachineDeployments, scaling, rollout, reboot) come next (issue 19).
package e2e_test

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nodeimage"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nspawn"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/workload"
)

// kubernetesVersion is the nodes' version: the last minor whose kubelet runs on cgroup v1 by
// default with Debian 12's containerd 1.6.
const kubernetesVersion = "v1.34.4"

// suitePrefix is the /24 the suite owns: the bridge holds its first address, the nodes the next.
var suitePrefix = netip.MustParsePrefix("10.213.87.0/24")

// env reads a variable `make e2e` sets; without it the suite cannot run, and says so.
func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	require.NotEmpty(t, v, "%s is not set: run the suite with make e2e", name)
	return v
}

// cluster is the workload control plane and what a node needs to join it.
type cluster struct {
	cp       *workload.ControlPlane
	network  nspawn.Network
	client   kubernetes.Interface
	caHashes []string
	kubeBin  string
	images   nodeimage.Builder
	next     int // the next machine address
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	ctx := t.Context()
	kubeBin := env(t, "CABPI_KUBE_BIN")
	network, err := nspawn.CreateNetwork(ctx, "cabpie2e0", suitePrefix)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, network.Delete(context.Background())) })
	cp, err := workload.Start(ctx, workload.Options{Dir: t.TempDir(), Address: network.HostAddr(),
		KubernetesVersion: kubernetesVersion, KubeBinDir: kubeBin, EnvtestBinDir: env(t, "KUBEBUILDER_ASSETS")})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, cp.Stop()) })
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	require.NoError(t, err)
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	hashes, err := cp.Certificates.GetByPurpose(secret.ClusterCA).Hashes()
	require.NoError(t, err)
	images := nodeimage.NewBuilder(filepath.Join(env(t, "CABPI_CACHE"), "nodeimage"))
	return &cluster{cp: cp, network: network, client: client, caHashes: hashes, kubeBin: kubeBin, images: images}
}

// token creates a join token in the workload cluster with kubeadm, as a bootstrap provider does.
func (c *cluster) token(t *testing.T) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), filepath.Join(c.kubeBin, "kubeadm"), "token", "create", "--ttl", "15m", "--kubeconfig", c.cp.AdminKubeconfig).Output()
	require.NoError(t, err)
	return strings.TrimSpace(string(out))
}

// workerIgnition is cabpi's worker output for the variant: kubeadm join with token, the node
// named from the OpenStack metadata with its provider ID.
func (c *cluster) workerIgnition(t *testing.T, variant cabpiv1.Variant, token string, discoverySeconds *int32) []byte {
	t.Helper()
	out, err := ignition.Render(ignition.Input{
		Variant: variant, Role: ignition.RoleWorkerJoin, KubernetesVersion: kubernetesVersion,
		JoinConfiguration: &kubeadmv1.JoinConfiguration{
			Discovery: kubeadmv1.Discovery{BootstrapToken: kubeadmv1.BootstrapTokenDiscovery{
				Token: token, APIServerEndpoint: c.cp.Endpoint, CACertHashes: c.caHashes}},
			Timeouts: kubeadmv1.Timeouts{DiscoverySeconds: discoverySeconds},
		},
		NodeName: &ignition.NodeNameFromMetadata{Platform: cabpiv1.MetadataPlatformOpenStack, ProviderID: true},
	})
	require.NoError(t, err)
	return out.Data
}

// boot boots a machine of flavor with the Ignition; it is removed when the test ends, with its
// kubeadm and kubelet journal in the test's log when the test failed.
func (c *cluster) boot(t *testing.T, flavor nodeimage.Flavor, name, uuid string, ign []byte) *nspawn.Machine {
	t.Helper()
	ctx := t.Context()
	root, err := c.images.Build(ctx, flavor, nodeimage.Kubernetes{Version: kubernetesVersion, BinDir: c.kubeBin})
	require.NoError(t, err)
	addr, err := c.network.MachineAddr(c.next)
	require.NoError(t, err)
	c.next++
	m, err := nspawn.Prepare(ctx, nspawn.Spec{Name: name, Image: root, Dir: t.TempDir(), Network: c.network, Address: addr,
		Instance: nspawn.Instance{Hostname: name + ".example", UUID: uuid}, Ignition: ign})
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			j, _ := m.Journal(context.Background(), "kubeadm", "kubelet")
			t.Logf("journal of %s (kubeadm, kubelet):\n%s", name, j)
		}
		assert.NoError(t, m.Remove(context.Background()))
	})
	require.NoError(t, m.Boot(ctx))
	return m
}

// unitState waits until the unit is no longer starting and returns its state.
func unitState(t *testing.T, m *nspawn.Machine, unit string, within time.Duration) string {
	t.Helper()
	var state string
	require.Eventually(t, func() bool {
		out, _ := m.Exec(t.Context(), "systemctl", "is-active", unit)
		state = strings.TrimSpace(string(out))
		return state == "active" || state == "failed"
	}, within, 500*time.Millisecond, "%s on %s is %q", unit, m.Name, state)
	return state
}

// exists says whether p is on the node, as the node sees it (/run is the node's own tmpfs).
func exists(t *testing.T, m *nspawn.Machine, p string) bool {
	_, err := m.Exec(t.Context(), "test", "-e", p)
	return err == nil
}

// A worker of each flavor boots from cabpi's worker output and joins: kubeadm.service ran once
// and is active, the sentinel is there and the token-bearing kubeadm config is gone, and the
// kubelet registered a Ready Node with the metadata hostname, the provider ID from the metadata
// and Cluster API's uninitialized taint.
func TestWorkerJoins(t *testing.T) {
	c := startCluster(t)
	for _, tc := range []struct {
		flavor  nodeimage.Flavor
		variant cabpiv1.Variant
	}{
		{nodeimage.FlavorFlatcar, cabpiv1.VariantFlatcar},
		{nodeimage.FlavorFCOS, cabpiv1.VariantFCOS},
	} {
		t.Run(string(tc.flavor), func(t *testing.T) {
			name, uuid := string(tc.flavor)+"-worker", fmt.Sprintf("e2e-%s-0000-0000-0001", tc.flavor)
			m := c.boot(t, tc.flavor, name, uuid, c.workerIgnition(t, tc.variant, c.token(t), nil))
			require.Equal(t, "active", unitState(t, m, "kubeadm.service", 3*time.Minute))
			assert.True(t, exists(t, m, ignition.SentinelPath), "the sentinel")
			assert.False(t, exists(t, m, ignition.KubeadmConfigPath), "the token-bearing kubeadm config is removed")
			runs, err := m.Exec(t.Context(), "journalctl", "--no-pager", "-u", "kubeadm", "--grep", "Starting kubeadm.service", "-o", "cat")
			require.NoError(t, err)
			assert.Equal(t, 1, strings.Count(string(runs), "Starting kubeadm.service"), "kubeadm ran once")

			var node *corev1.Node
			require.Eventually(t, func() bool {
				n, err := c.client.CoreV1().Nodes().Get(t.Context(), name+".example", metav1.GetOptions{})
				if err != nil {
					return false
				}
				node = n
				return slices.ContainsFunc(n.Status.Conditions, func(c corev1.NodeCondition) bool {
					return c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
				})
			}, 2*time.Minute, time.Second, "Node %s.example Ready", name)
			assert.Equal(t, "openstack:///"+uuid, node.Spec.ProviderID)
			assert.Contains(t, node.Spec.Taints, corev1.Taint{Key: ignition.UninitializedTaintKey, Effect: corev1.TaintEffect(ignition.UninitializedTaintEffect)})
			assert.Equal(t, kubernetesVersion, node.Status.NodeInfo.KubeletVersion)
			assert.Contains(t, node.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: m.Address.String()})
		})
	}
}

// A join that cannot succeed (its token is not in the workload cluster, as when it was deleted
// after the data was delivered): kubeadm join fails within the discovery timeout the user set,
// kubeadm.service is failed, no sentinel was ever written, the kubeadm config stays for a
// retry, and no Node registers.
func TestFailedJoinLeavesNoSentinel(t *testing.T) {
	c := startCluster(t)
	const name = "flatcar-nojoin"
	ign := c.workerIgnition(t, cabpiv1.VariantFlatcar, "abcdef.0123456789abcdef", ptr.To[int32](15))
	m := c.boot(t, nodeimage.FlavorFlatcar, name, "e2e-nojoin-0000-0000-0001", ign)
	// The sentinel must not appear while kubeadm runs either.
	deadline := time.Now().Add(3 * time.Minute)
	var state string
	for time.Now().Before(deadline) {
		require.False(t, exists(t, m, ignition.SentinelPath), "a sentinel while kubeadm join cannot succeed")
		out, _ := m.Exec(t.Context(), "systemctl", "is-active", "kubeadm.service")
		if state = strings.TrimSpace(string(out)); state == "failed" || state == "active" {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, "failed", state)
	assert.False(t, exists(t, m, ignition.SentinelPath))
	assert.True(t, exists(t, m, ignition.KubeadmConfigPath), "the kubeadm config stays")
	_, err := c.client.CoreV1().Nodes().Get(t.Context(), name+".example", metav1.GetOptions{})
	assert.Error(t, err, "no Node")
}
