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

// Package e2e_test is the real-node suite (`make e2e`): Cluster API's own controllers and cabpi
// run against a real management API server (envtest), the test infrastructure provider
// (test/framework/infrastructure) boots a systemd-nspawn machine per Machine from its bootstrap
// data Secret, and the real kubeadm and kubelet on it join a real workload control plane
// (test/framework/workload) on the suite's bridge. Nothing between the data Secret and the Node
// object is stubbed. docs/nodes-in-tests.md says what a node is made of here and how it differs
// from real Flatcar and Fedora CoreOS; docs/adr/022-real-nodes.md why.
//
// It needs root, systemd-nspawn and debootstrap, and what `make e2e` builds and passes in
// the environment (CABPI_KUBE_BIN, CABPI_ETCD_BIN, CABPI_PAUSE_BIN, KUBEBUILDER_ASSETS,
// CABPI_IGNITION_APPLY, CABPI_CACHE).
package e2e_test

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/test/builder"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/provider"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nodeimage"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nspawn"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/releaseserver"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/runtimesdk"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/workload"
)

// kubernetesVersion is the nodes' and the Machines' version: the last minor whose kubelet runs
// on cgroup v1 by default with Debian 12's containerd 1.6.
const kubernetesVersion = "v1.34.4"

// previousKubernetesVersion is the minor before: workers that start there are upgraded to
// kubernetesVersion by a change of their version alone (kubeadm and kubelet only; the Makefile's
// E2E_KUBERNETES_PREVIOUS, passed as CABPI_KUBE_BIN_PREVIOUS).
const previousKubernetesVersion = "v1.33.13"

// laterPreviousPatch is a later patch release of previousKubernetesVersion's minor, which the
// release server's sysext layout lists (with previousKubernetesVersion's image under its name)
// and nothing builds: what systemd-sysupdate, following that minor's transfer file, would take
// a node back to.
const laterPreviousPatch = "v1.33.14"

// runWrites is about what a run writes to the host's disk once the images are there: the
// machines' upper layers and containerd copies on their disks (up to some 5 GiB at once), with
// room to spare.
const runWrites = 8 << 30

// nodeDiskSize is each node's disk, a sparse file of the host's (nspawn.Spec.DiskSize): what its
// kubelet sees as its file system. A node writes 1 to 2 GiB (containerd's copy of the images
// among it), far from the kubelet's eviction thresholds (10% and 15% free) and image garbage
// collection (85% used).
const nodeDiskSize = 16 << 30

// suitePrefix is the /24 the suite owns: the bridge holds its first address, the nodes the next.
var suitePrefix = netip.MustParsePrefix("10.213.87.0/24")

// workPrefix begins the name of each run's work directory in the host's temporary directory.
const workPrefix = "cabpi-e2e-"

const (
	namespace   = "e2e"
	clusterName = "e2e"
	// tokenTTL is cabpi's join token lifetime here: short, so that a token deleted under a
	// provisioned Machine is noticed within a minute (cabpi looks every TTL/3).
	tokenTTL = 2 * time.Minute
)

// The suite: what every test reaches.
var (
	mgmt      *testenv.Environment
	cluster   *clusterv1.Cluster
	workloadC kubernetes.Interface
	instances *provider.Instances
	nodes     *nodeWatch
	timings   = &timingTable{}
	// workloadCP is the workload control plane the suite runs on the host.
	workloadCP *workload.ControlPlane
	// releases serves both versions' release binaries and system extensions on the bridge.
	releases *releaseserver.Server
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	var missing []string
	for _, v := range []string{"CABPI_KUBE_BIN", "CABPI_KUBE_BIN_PREVIOUS", "CABPI_ETCD_BIN", "CABPI_PAUSE_BIN", "KUBEBUILDER_ASSETS", "CABPI_IGNITION_APPLY", "CABPI_CACHE",
		"CABPI_RELEASE_DIR", "CABPI_CAPI_IMAGE", "CABPI_CLUSTERCTL", "CABPI_KUSTOMIZE"} {
		if os.Getenv(v) == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(os.Stderr, "e2e: %v not set: run the suite with make e2e\n", missing)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// What the suite starts on the host is undone in reverse order, once: at the end, on
	// SIGINT or SIGTERM, and a minute before go test's -timeout would kill the process without
	// running a deferred function.
	var undo []func() error
	var once sync.Once
	cleanup := func() {
		once.Do(func() {
			if mgmt != nil { // testenv.Run stops it when the tests end, not when they are cut short
				undo = append(undo, mgmt.Stop)
			}
			for i := len(undo) - 1; i >= 0; i-- {
				if err := undo[i](); err != nil {
					fmt.Fprintln(os.Stderr, "e2e: cleaning up:", err)
				}
			}
		})
	}
	defer cleanup()
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-signals
		fmt.Fprintf(os.Stderr, "e2e: %s: removing the nodes, the control plane and the bridge\n", s)
		cleanup()
		os.Exit(1)
	}()
	if f := flag.Lookup("test.timeout"); f != nil {
		if timeout, err := time.ParseDuration(f.Value.String()); err == nil && timeout > 2*time.Minute {
			watchdog := time.AfterFunc(timeout-time.Minute, func() {
				fmt.Fprintln(os.Stderr, "e2e: the test timeout is near: removing the nodes, the control plane and the bridge")
				cleanup()
				os.Exit(1)
			})
			defer watchdog.Stop()
		}
	}

	restoreLimits, err := nspawn.RaiseHostLimits()
	undo = append(undo, restoreLimits)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// The host's loop devices as they are now, given back after the machines (undo runs in
	// reverse): stock machines are given loop devices, and their systemd removes those it used.
	restoreLoops, err := nspawn.KeepHostLoopDevices()
	undo = append(undo, restoreLoops)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}

	// What machines of an earlier run left in the host's cgroups goes (nothing runs in it), and
	// the disks of a run killed before its clean-up.
	if err := nspawn.RemoveStaleCgroups(""); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	if err := nspawn.RemoveStaleDisks(filepath.Join(os.TempDir(), workPrefix)); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	work, err := os.MkdirTemp("", workPrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	undo = append(undo, func() error { return os.RemoveAll(work) })

	network, err := nspawn.CreateNetwork(ctx, "cabpie2e0", suitePrefix)
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	undo = append(undo, func() error { return network.Delete(context.Background()) })
	kubeBin := os.Getenv("CABPI_KUBE_BIN")
	cp, err := workload.Start(ctx, workload.Options{Dir: filepath.Join(work, "workload"), Address: network.HostAddr(),
		KubernetesVersion: kubernetesVersion, KubeBinDir: kubeBin, EnvtestBinDir: os.Getenv("KUBEBUILDER_ASSETS")})
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: starting the workload control plane:", err)
		return 1
	}
	undo = append(undo, cp.Stop)
	workloadCP = cp
	cfg, err := clientcmd.BuildConfigFromFlags("", cp.AdminKubeconfig)
	if err == nil {
		workloadC, err = kubernetes.NewForConfig(cfg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	nodes = watchNodes(ctx, workloadC)
	// The Node watch ends before the API server stops (it would wait for the watch to drain).
	undo = append(undo, func() error { cancel(); return nil })

	instances = &provider.Instances{
		Images: nodeimage.NewBuilder(filepath.Join(os.Getenv("CABPI_CACHE"), "nodeimage")),
		Kubernetes: nodeimage.Kubernetes{Version: kubernetesVersion, BinDir: kubeBin, ControlPlane: &nodeimage.ControlPlane{
			KubeBinDir: kubeBin, EtcdBin: os.Getenv("CABPI_ETCD_BIN"), PauseBin: os.Getenv("CABPI_PAUSE_BIN")}},
		Network:   network,
		Dir:       filepath.Join(work, "nodes"),
		DiskSize:  nodeDiskSize,
		Artifacts: artifactsDir(),
	}
	// Every node is removed whatever happened (its journal kept in the artifacts), then what is
	// left of the machines' cgroups (undo runs in reverse).
	undo = append(undo, func() error { return nspawn.RemoveStaleCgroups("") })
	undo = append(undo, func() error { return instances.Close(context.Background()) })
	// The images are built (or found in the cache) before any Machine asks.
	for _, f := range []infrav1.Flavor{infrav1.FlavorFlatcar, infrav1.FlavorFCOS, infrav1.FlavorFlatcarStock, infrav1.FlavorFCOSStock} {
		if _, err := instances.Image(ctx, f); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: building the node image:", err)
			return 1
		}
	}
	// The nodes' disks are sparse files: a host without room for what the run writes onto them
	// fails here, saying so, rather than failing the nodes' writes. The images are built (and
	// stale ones pruned) by now; the machines' layers and containerd copies are what the run
	// still writes.
	if err := nspawn.CheckHostDisk(work, runWrites); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	// Kubernetes for the stock images, as the Internet would serve it, from the bridge.
	var served []releaseserver.Release
	for _, r := range []releaseserver.Release{
		{Version: previousKubernetesVersion, BinDir: os.Getenv("CABPI_KUBE_BIN_PREVIOUS"), LaterPatches: []string{laterPreviousPatch}},
		{Version: kubernetesVersion, BinDir: kubeBin},
	} {
		if r.Sysext, err = instances.Images.Sysext(ctx, r.Version, r.BinDir); err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		served = append(served, r)
	}
	if releases, err = releaseserver.Start(network.HostAddr(), served); err != nil {
		fmt.Fprintln(os.Stderr, "e2e:", err)
		return 1
	}
	undo = append(undo, releases.Close)

	code := testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			ClusterController: true, MachineController: true, MachineSetController: true,
			MachineDeploymentController: true, MachineHealthCheckController: true, MachinePoolController: true,
			TopologyControllers: true,
			// Cluster API's Runtime SDK and in-place updates, for cabpi's update extension
			// (inplace_test.go; its ExtensionConfig selects one namespace).
			InPlaceUpdates:     true,
			Webhooks:           true,
			AdditionalCRDPaths: []string{filepath.Join("..", "framework", "infrastructure", "config", "crd")},
			AddToScheme:        []func(*runtime.Scheme) error{infrav1.AddToScheme},
		},
		Setup: func(e *testenv.Environment) error {
			mgmt = e
			opts := testenv.CabpiOptions()
			opts.BootstrapTokenTTL = tokenTTL
			// The update extension, with envtest's webhook serving certificate (for 127.0.0.1);
			// its Jobs run cabpi's released image, which the in-place tests import into the nodes.
			port, err := runtimesdk.FreeLoopbackPort()
			if err != nil {
				return err
			}
			opts.UpdateExtensionPort, opts.UpdateExtensionHost = port, "127.0.0.1"
			opts.WebhookCertDir = e.TestEnv.WebhookInstallOptions.LocalServingCertDir
			opts.UpdateImage = cabpiImage
			if err := e.SetupCabpi(opts); err != nil {
				return err
			}
			if err := createUpdateExtensionConfig(ctx, e, port); err != nil {
				return err
			}
			if err := provider.Setup(e.Manager, instances); err != nil {
				return err
			}
			return createCluster(ctx, e, cp)
		},
		LeakCheck: true,
	})
	if err := timings.write(artifactsDir()); err != nil {
		fmt.Fprintln(os.Stderr, "e2e: writing the timings:", err)
		code = 1
	}
	return code
}

// artifactsDir is where nodes' consoles and journals and the timings go: $ARTIFACTS (as in
// Cluster API's e2e), else _artifacts/e2e in the repository.
func artifactsDir() string {
	if d := os.Getenv("ARTIFACTS"); d != "" {
		return d
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		return filepath.Join(os.TempDir(), "cabpi-e2e-artifacts")
	}
	return filepath.Join(root, "_artifacts", "e2e")
}

// createCluster makes the management side of the workload cluster, as a user and a
// control-plane provider would: the Cluster, its NspawnCluster (whose endpoint is the workload
// API server on the bridge) and its control plane. The control plane runs outside any Machine
// (the suite runs it on the host), which Cluster API models as an externally managed control
// plane (as for EKS or AKS): a control-plane object whose status says
// externalManagedControlPlane, initialized, at the cluster's version. The suite, standing in
// for its provider, stores the cluster's certificates as the <cluster>-ca, -etcd, -proxy and
// -sa Secrets and writes the <cluster>-kubeconfig Secret from the CA, as a control-plane
// provider does. Without a control plane Cluster API knows of, it would never delete the Node
// of a deleted worker Machine.
func createCluster(ctx context.Context, e *testenv.Environment, cp *workload.ControlPlane) error {
	c, err := createExternalCluster(ctx, e.Client, namespace, clusterName, cp)
	if err != nil {
		return err
	}
	cluster = c
	return nil
}

// createExternalCluster is createCluster for any management cluster (c) and namespace: the
// Cluster named name, whose control plane is cp, the suite's.
func createExternalCluster(ctx context.Context, c client.Client, ns, name string, cp *workload.ControlPlane) (*clusterv1.Cluster, error) {
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if err := c.Create(ctx, digestsConfigMap(ns, name)); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	host, portText, err := net.SplitHostPort(cp.Endpoint)
	if err != nil {
		return nil, err
	}
	port, err := strconv.ParseInt(portText, 10, 32)
	if err != nil {
		return nil, err
	}
	endpoint := clusterv1.APIEndpoint{Host: host, Port: int32(port)}

	controlPlane := builder.ControlPlane(ns, name).Build()
	for path, value := range map[string]any{"version": kubernetesVersion, "controlPlaneEndpoint": map[string]any{"host": host, "port": port}} {
		if err := unstructured.SetNestedField(controlPlane.Object, value, "spec", path); err != nil {
			return nil, err
		}
	}
	cl := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: clusterv1.ClusterSpec{
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "NspawnCluster", Name: name},
			ControlPlaneRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: builder.ControlPlaneGroupVersion.Group, Kind: builder.GenericControlPlaneKind, Name: name},
		},
	}
	if err := c.Create(ctx, cl); err != nil {
		return nil, fmt.Errorf("creating the Cluster: %w", err)
	}
	owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: cl.Name, UID: cl.UID}
	controlPlane.SetOwnerReferences([]metav1.OwnerReference{owner})
	if err := c.Create(ctx, controlPlane); err != nil {
		return nil, fmt.Errorf("creating the control plane: %w", err)
	}
	if err := setExternalControlPlaneStatus(ctx, c, controlPlane, kubernetesVersion); err != nil {
		return nil, fmt.Errorf("marking the control plane initialized: %w", err)
	}
	if err := cp.Certificates.SaveGenerated(ctx, c, client.ObjectKeyFromObject(cl), owner); err != nil {
		return nil, fmt.Errorf("storing the cluster's certificates: %w", err)
	}
	if err := kubeconfig.CreateSecretWithOwner(ctx, c, client.ObjectKeyFromObject(cl), cp.Endpoint, owner); err != nil {
		return nil, fmt.Errorf("writing the cluster's kubeconfig Secret: %w", err)
	}
	nc := &infrav1.NspawnCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			OwnerReferences: []metav1.OwnerReference{owner}},
		Spec: infrav1.NspawnClusterSpec{ControlPlaneEndpoint: endpoint},
	}
	if err := c.Create(ctx, nc); err != nil {
		return nil, fmt.Errorf("creating the NspawnCluster: %w", err)
	}
	return cl, nil
}

// setExternalControlPlaneStatus reports a control-plane object as its provider would for the
// suite's own control plane: externally managed, initialized, at version.
//
// Cluster API's controllers write the object too once it exists (its owner's labels, their
// own status): a conflict reads it again and tries again, as a provider's controller would.
func setExternalControlPlaneStatus(ctx context.Context, c client.Client, cp *unstructured.Unstructured, version string) error {
	status := map[string]any{
		"externalManagedControlPlane": true,
		"version":                     version,
		"initialization":              map[string]any{"controlPlaneInitialized": true},
	}
	first := true
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			if err := c.Get(ctx, client.ObjectKeyFromObject(cp), cp); err != nil {
				return err
			}
		}
		first = false
		if err := unstructured.SetNestedField(cp.Object, status, "status"); err != nil {
			return err
		}
		return c.Status().Update(ctx, cp)
	})
}

// cabpiImage is the image of the release make e2e builds (CABPI_RELEASE_DIR).
const cabpiImage = "ghcr.io/cabpi/cluster-api-bootstrap-provider-ignition:" + cabpiVersion

// createUpdateExtensionConfig registers cabpi's update extension, served by the suite's cabpi
// manager on port, as a user's ExtensionConfig does (config/extension), with the URL of the
// in-process server and envtest's CA instead of a Service and an injected CA. Its namespace
// selector picks the in-place namespace alone.
func createUpdateExtensionConfig(ctx context.Context, e *testenv.Environment, port int) error {
	ec := runtimesdk.ExtensionConfigFor("cabpi-update-extension", fmt.Sprintf("https://127.0.0.1:%d", port),
		e.TestEnv.WebhookInstallOptions.LocalServingCAData)
	ec.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{inPlaceLabel: "true"}}
	if err := e.Client.Create(ctx, ec); err != nil {
		return fmt.Errorf("creating the update extension's ExtensionConfig: %w", err)
	}
	return nil
}

// suiteDigests is where the suite's configs read the digests of what the release server serves
// (spec.kubernetes.digestsFrom): its builds are not official releases, so cabpi's catalogue has
// none of them, as for a user's private builds (docs/guide/air-gapped.md).
var suiteDigests = &cabpiv1.DigestsSource{ConfigMap: &cabpiv1.KeyReference{Name: "e2e-kubernetes-digests", Key: "SHA256SUMS"}}

// digestsConfigMap is suiteDigests' ConfigMap in ns, for the Cluster cluster: the release
// server's genuine digests, labelled as the guide says (the cluster's name, so that a change
// renders its configs again; clusterctl move's, so that it moves with the cluster).
func digestsConfigMap(ns, cluster string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: suiteDigests.ConfigMap.Name,
			Labels: map[string]string{clusterv1.ClusterNameLabel: cluster, clusterctlv1.ClusterctlMoveLabel: ""}},
		Data: map[string]string{suiteDigests.ConfigMap.Key: releases.Digests()},
	}
}
