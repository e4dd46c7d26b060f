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

package e2e_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/test/builder"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/certmanager"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/provider"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nodeimage"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// Names of what cabpi's components make (config/default: namespace cabpi-system, prefix cabpi-).
const (
	cabpiNamespace      = "cabpi-system"
	cabpiServiceAccount = "cabpi-manager"
	cabpiLease          = "cabpi-controller-leader-election"
	cabpiDeployment     = "cabpi-controller-manager"
	cabpiMetricsReader  = "cabpi-metrics-reader"
	cabpiManagerRole    = "cabpi-manager-role"
	// pivotNamespace holds the workload Cluster the management cluster manages, then moves.
	pivotNamespace   = "pivot"
	pivotClusterName = "moved"
	// reconcilingConfigs is how many configs reconcile while cabpi's Pod is deleted.
	reconcilingConfigs = 20
)

// managementCluster is a real cluster made of one of the suite's nodes (cabpi's init output),
// with the providers installed in it by clusterctl.
type managementCluster struct {
	config     *rest.Config
	kubeconfig string // the file, for clusterctl
	client     client.Client
	kube       kubernetes.Interface
}

// managementScheme has what the suite reads and writes in a management cluster.
func managementScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		clusterv1.AddToScheme, runtimev1.AddToScheme, cabpiv1.AddToScheme, infrav1.AddToScheme, clusterctlv1.AddToScheme} {
		require.NoError(t, add(s))
	}
	return s
}

// TestManagementCluster installs cabpi as users install it and proves it there (issue 26): a
// real cluster made of one node (kubeadm init from cabpi's output, untainted, kube-proxy on the
// node), the images built here imported into its containerd, `clusterctl init` from a local
// repository with cabpi's release, cert-manager played by the suite (ADR 027), then:
//  1. a workload Cluster's MachineDeployment of two workers, rendered by cabpi's Pod, joins;
//  2. the Pod runs as non-root with the manifest's securityContext, holds the Lease, never
//     restarts;
//  3. the API server calls its webhooks through the Service: a bad config is refused with the
//     webhook's message, a server-side dry-run of a good template goes through;
//  4. its diagnostics endpoint refuses anonymous and unauthorized requests and answers a token
//     RBAC allows;
//  5. its ServiceAccount can do what config/rbac grants and nothing more; its update extension
//     refuses an UpdateMachine request Cluster API did not make, and nothing changes on the node;
//  6. Cluster API's own core manager (Runtime SDK and in-place updates on, from clusterctl's
//     variables) calls the update extension, registered and secured as the release says (client
//     certificates both ways): the workers' minor upgrade waits while cabpi's manager is stopped,
//     replaces nothing, and then drains and updates both nodes in place
//     (updateInPlaceByCoreManager);
//  7. the Pod deleted while 20 configs reconcile: one data Secret and one join token each,
//     nothing rendered twice;
//  8. clusterctl move of the workload Cluster to the suite's envtest management cluster: nothing
//     renders again, no token is replaced, the Machines stay; a scale-up there joins.
func TestManagementCluster(t *testing.T) {
	t.Parallel()
	f := flavors[0]
	mc := bootManagementCluster(t, f)
	repo := newLocalRepository(t)

	// cert-manager's CRDs (real) and its issuing and CA injection (played).
	cmDir, err := testenv.ModuleDir(certmanager.Module, certmanager.Version)
	require.NoError(t, err)
	require.NoError(t, certmanager.InstallCRDs(t.Context(), mc.client, cmDir))
	player := certmanager.Start(context.Background(), mc.client, time.Second)
	t.Cleanup(player.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			dumpPods(t, mc)
			t.Logf("cert-manager's part: last error %v", player.Err())
		}
	})

	repo.configure(t, inPlaceVariables)
	repo.clusterctl(t, "init", "--kubeconfig", mc.kubeconfig,
		"--core", coreProvider+":"+repo.capiVersion,
		"--bootstrap", bootstrapProvider+":"+cabpiVersion,
		"--control-plane", controlPlaneProvider+":"+suiteProvidersVersion,
		"--infrastructure", infraProvider+":"+suiteProvidersVersion,
		"--wait-providers", "--wait-provider-timeout", "600")

	// The test infrastructure provider's controllers, in this process, on the management cluster.
	startProvider(t, mc)
	waitWebhooksAnswer(t, mc)

	// 1. A workload Cluster (the suite's control plane) with two workers, rendered by cabpi's Pod:
	// at the previous minor, Kubernetes from the suite's system extension mirror, so that step 6
	// can update them in place (one Machine unavailable at a time, none added).
	_, err = createExternalCluster(t.Context(), mc.client, pivotNamespace, pivotClusterName, workloadCP)
	require.NoError(t, err)
	md := pivotClusterName + "-workers"
	tmpl := ignitionTemplate(stockFlatcar, md, "pivot")
	tmpl.Namespace = pivotNamespace
	tmpl.Spec.Template.Spec.Kubernetes = cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceSysext,
		Sysext: &cabpiv1.SysextSource{BaseURL: releases.SysextURL()}}
	infraTmpl := infraTemplate(stockFlatcar, md)
	infraTmpl.Namespace = pivotNamespace
	deployment := clusterMachineDeployment(pivotClusterName, md, 2, md, md)
	deployment.Namespace = pivotNamespace
	deployment.Spec.Template.Spec.Version = previousKubernetesVersion
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	deployment.Spec.Rollout.Strategy.RollingUpdate = clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{MaxSurge: &zero, MaxUnavailable: &one}
	createIn(t, mc.client, tmpl, infraTmpl, deployment)
	workers := waitDeploymentIn(t, mc.client, pivotNamespace, md, 2, nil, joinWithin)
	for i := range workers {
		assertWorkerJoinedIn(t, mc.client, &workers[i], "pivot")
	}
	pod := cabpiPod(t, mc)
	require.False(t, t.Failed())

	// 2. The Pod as the manifest says, holding the Lease.
	assertPodSecurity(t, mc, pod)
	assertLeaseHeldBy(t, mc, pod.Name)

	// 3. Admission through the Service.
	assertWebhooksServed(t, mc)

	// 4. The diagnostics endpoint: authentication and authorization by the API server.
	assertDiagnosticsGuarded(t, mc, pod)

	// 5. RBAC: what config/rbac grants, and nothing more.
	assertRBACExactly(t, mc)

	// 5b. The update extension of cabpi's Pod, asked by a Pod that is not Cluster API.
	assertForgedUpdateRefused(t, mc, &workers[0])

	// The Pod never restarted through all that.
	pod = cabpiPod(t, mc)
	for _, s := range pod.Status.ContainerStatuses {
		assert.Zero(t, s.RestartCount, "container %s of %s restarted", s.Name, pod.Name)
	}

	// 6. Cluster API's core manager updates the workers in place through cabpi's Pod.
	workers = updateInPlaceByCoreManager(t, mc, deployment, workers)
	require.False(t, t.Failed())

	// 7. The Pod deleted while configs reconcile.
	deletePodWhileReconciling(t, mc, cabpiPod(t, mc))

	// 8. The pivot.
	pivot(t, mc, repo, md, workers)
}

// bootManagementCluster makes the management cluster's node from cabpi's init output (rendered
// by the suite's own management cluster), untainted so that the providers' Pods run there, with
// kube-proxy from the node's Ignition, and imports the images the providers run into its
// containerd (nothing can be pulled here).
func bootManagementCluster(t *testing.T, f flavor) *managementCluster {
	t.Helper()
	lc := createLBCluster(t, "mgmt")
	node := lc.controlPlaneMachine(t, f, "mgmt-cp", func(s *cabpiv1.IgnitionConfigSpec) {
		s.InitConfiguration.SkipPhases = []string{"addon/kube-proxy", "addon/coredns"}
		s.InitConfiguration.NodeRegistration.Taints = &[]corev1.Taint{}
		s.Butane = cabpiv1.ButaneSpec{Inline: kubeProxySnippet(t, f)}
	})
	waitMachines(t, []*clusterv1.Machine{node}, joinWithin+2*time.Minute)
	inst := instanceOf(t, node)
	require.NotNil(t, inst)
	require.Eventually(t, func() bool {
		out, _ := onNode(t, inst, "systemctl", "is-active", "kube-proxy.service")
		return out == "active"
	}, 2*time.Minute, time.Second, "kube-proxy runs on the management cluster's node")

	for _, archive := range []string{
		filepath.Join(os.Getenv("CABPI_RELEASE_DIR"), "cabpi-image-"+cabpiVersion+".oci.tar"),
		os.Getenv("CABPI_CAPI_IMAGE"),
		forgerArchive(t),
	} {
		file, err := os.Open(archive)
		require.NoError(t, err)
		out, err := inst.ExecInput(t.Context(), file, "ctr", "--namespace", "k8s.io", "images", "import", "--all-platforms", "-")
		_ = file.Close()
		require.NoError(t, err, "importing %s into the node's containerd: %s", archive, out)
		t.Logf("imported %s: %s", filepath.Base(archive), strings.TrimSpace(string(out)))
	}

	var data []byte
	require.Eventually(t, func() bool {
		var err error
		data, err = kubeconfig.FromSecret(t.Context(), mgmt.Client, client.ObjectKeyFromObject(lc.cluster))
		return err == nil
	}, time.Minute, time.Second, "the management cluster's kubeconfig Secret")
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	require.NoError(t, err)
	cfg.Timeout = 30 * time.Second
	file := filepath.Join(t.TempDir(), "management.kubeconfig")
	require.NoError(t, os.WriteFile(file, data, 0o600))
	c, err := client.New(cfg, client.Options{Scheme: managementScheme(t)})
	require.NoError(t, err)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return &managementCluster{config: cfg, kubeconfig: file, client: c, kube: kube}
}

// kubeProxySnippet is the management node's Butane: kube-proxy fetched by Ignition from the
// suite's release server (checked against its SHA-512) and run as a service once kubeadm has
// made the node, so that Services route (the Pods' in-cluster API address, the webhooks' Service).
// kubeadm's kube-proxy DaemonSet needs an image with iptables, which cannot be pulled here
// (ADR 027); conntrack's limits are the host's (nspawn's /sys is read-only).
func kubeProxySnippet(t *testing.T, f flavor) string {
	t.Helper()
	binary := filepath.Join(os.Getenv("CABPI_KUBE_BIN"), "kube-proxy")
	data, err := os.ReadFile(binary)
	require.NoError(t, err, "make e2e builds kube-proxy")
	sum := sha512.Sum512(data)
	source := releases.BinariesURL() + "/" + kubernetesVersion + "/bin/linux/amd64/kube-proxy"
	return fmt.Sprintf(`variant: %s
version: %s
storage:
  files:
    - path: /opt/bin/kube-proxy
      mode: 0755
      contents:
        source: %s
        verification:
          hash: sha512-%s
systemd:
  units:
    - name: kube-proxy.service
      enabled: true
      contents: |
        [Unit]
        Description=kube-proxy: the management cluster's Services
        After=kubeadm.service
        Requires=kubeadm.service
        [Service]
        ExecStart=/opt/bin/kube-proxy --kubeconfig=/etc/kubernetes/admin.conf --hostname-override=%%H --cluster-cidr=%s --proxy-mode=iptables --conntrack-max-per-core=0
        Restart=always
        RestartSec=2
        [Install]
        WantedBy=multi-user.target
`, f.butaneVariant, f.butaneVersion, source, hex.EncodeToString(sum[:]), nodeimage.PodSubnet)
}

// waitWebhooksAnswer waits until the API server reaches both providers' webhooks through their
// Services: clusterctl's --wait-providers waits for the Deployments to be available, and the
// Services' endpoints and kube-proxy's rules follow a moment later (as on any cluster).
func waitWebhooksAnswer(t *testing.T, mc *managementCluster) {
	t.Helper()
	require.NoError(t, client.IgnoreAlreadyExists(mc.client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pivotNamespace}})))
	deadline := time.Now().Add(2 * time.Minute)
	for {
		cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: pivotNamespace, Name: "webhook-probe"},
			Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.GroupVersion.Group, Kind: "NspawnCluster", Name: "webhook-probe"}}}
		template := ignitionTemplate(flavors[0], "webhook-probe", "probe")
		template.Namespace = pivotNamespace
		err := mc.client.Create(t.Context(), cluster, client.DryRunAll)
		if err == nil {
			err = mc.client.Create(t.Context(), template, client.DryRunAll)
		}
		if err == nil {
			return
		}
		require.True(t, time.Now().Before(deadline), "the providers' webhooks do not answer through their Services: %v", err)
		time.Sleep(time.Second)
	}
}

// startProvider runs the test infrastructure provider's controllers against the management
// cluster, in this process, until the test ends.
func startProvider(t *testing.T, mc *managementCluster) {
	t.Helper()
	mgr, err := ctrl.NewManager(mc.config, ctrl.Options{
		Scheme:                 managementScheme(t),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The suite's envtest manager runs controllers of the same names.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	require.NoError(t, err)
	require.NoError(t, provider.Setup(mgr, instances))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
}

// cabpiPod is the one running Pod of cabpi's Deployment.
func cabpiPod(t *testing.T, mc *managementCluster) *corev1.Pod {
	t.Helper()
	return cabpiPodOtherThan(t, mc, "")
}

// cabpiPodOtherThan waits for the one running Pod of cabpi's Deployment, not named old.
func cabpiPodOtherThan(t *testing.T, mc *managementCluster, old string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	require.Eventually(t, func() bool {
		pods, err := mc.kube.CoreV1().Pods(cabpiNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		if err != nil {
			return false
		}
		var running []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Name != old {
				running = append(running, p)
			}
		}
		if len(running) != 1 {
			return false
		}
		pod = &running[0]
		return true
	}, 3*time.Minute, time.Second, "one running Pod of %s (other than %q)", cabpiDeployment, old)
	return pod
}

// assertPodSecurity checks that the Pod runs as the manifest says: as the non-root user 65532
// (runAsNonRoot enforced by the kubelet, the process's real UID on the node), no privilege
// escalation, no capabilities, the runtime's seccomp profile.
func assertPodSecurity(t *testing.T, mc *managementCluster, pod *corev1.Pod) {
	t.Helper()
	psc := pod.Spec.SecurityContext
	require.NotNil(t, psc, "the Pod's securityContext")
	assert.True(t, ptr.Deref(psc.RunAsNonRoot, false), "runAsNonRoot")
	require.NotNil(t, psc.SeccompProfile)
	assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type)
	require.Len(t, pod.Spec.Containers, 1)
	csc := pod.Spec.Containers[0].SecurityContext
	require.NotNil(t, csc, "the container's securityContext")
	assert.Equal(t, int64(65532), ptr.Deref(csc.RunAsUser, 0))
	assert.False(t, ptr.Deref(csc.AllowPrivilegeEscalation, true), "allowPrivilegeEscalation")
	assert.False(t, ptr.Deref(csc.Privileged, true), "privileged")
	require.NotNil(t, csc.Capabilities)
	assert.Equal(t, []corev1.Capability{"ALL"}, csc.Capabilities.Drop)

	// On the node: the manager's process (the one with cabpi's own flag) runs as 65532.
	inst := instances.Get(types.NamespacedName{Namespace: namespace, Name: pod.Spec.NodeName})
	require.NotNil(t, inst, "the node %s", pod.Spec.NodeName)
	out, err := onNode(t, inst, "pgrep", "-f", "--", "--bootstrap-token-ttl=")
	require.NoError(t, err, "cabpi's manager process on the node")
	pids := strings.Fields(out)
	require.Len(t, pids, 1)
	status, err := onNode(t, inst, "cat", "/proc/"+pids[0]+"/status")
	require.NoError(t, err)
	var uid, noNewPrivs string
	for _, line := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(line, "Uid:"); ok {
			uid = strings.Join(strings.Fields(v), " ")
		}
		if v, ok := strings.CutPrefix(line, "NoNewPrivs:"); ok {
			noNewPrivs = strings.TrimSpace(v)
		}
	}
	assert.Equal(t, "65532 65532 65532 65532", uid, "the manager's real, effective, saved and file-system UIDs")
	assert.Equal(t, "1", noNewPrivs, "no privilege escalation (no_new_privs)")
}

// assertLeaseHeldBy checks that cabpi's leader-election Lease names the Pod.
func assertLeaseHeldBy(t *testing.T, mc *managementCluster, podName string) {
	t.Helper()
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		lease := &coordinationv1.Lease{}
		if !assert.NoError(c, mc.client.Get(t.Context(), types.NamespacedName{Namespace: cabpiNamespace, Name: cabpiLease}, lease)) {
			return
		}
		assert.True(c, strings.HasPrefix(ptr.Deref(lease.Spec.HolderIdentity, ""), podName+"_"),
			"the Lease's holder %q is Pod %s", ptr.Deref(lease.Spec.HolderIdentity, ""), podName)
	}, 2*time.Minute, time.Second)
}

// assertWebhooksServed checks admission as the real API server does it, through the webhook
// Service and the certificate the components asked for.
func assertWebhooksServed(t *testing.T, mc *managementCluster) {
	t.Helper()
	bad := &cabpiv1.IgnitionConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: pivotNamespace, Name: "refused"},
		Spec: cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFlatcar, Butane: cabpiv1.ButaneSpec{
			Inline: "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/x\n      mode: abc\n"}},
	}
	err := mc.client.Create(t.Context(), bad)
	require.Error(t, err, "the webhook refuses a Butane snippet with a wrongly typed value")
	assert.True(t, apierrors.IsInvalid(err), "refused as invalid by cabpi's webhook, not failed: %v", err)
	assert.Contains(t, err.Error(), "spec.butane.inline", "the webhook's message names the field: %v", err)
	assert.Contains(t, err.Error(), "line 6", "the webhook's message names the line: %v", err)

	good := ignitionTemplate(flavors[0], "dry-run", "dry-run")
	good.Namespace = pivotNamespace
	good.SetGroupVersionKind(cabpiv1.GroupVersion.WithKind("IgnitionConfigTemplate"))
	require.NoError(t, mc.client.Patch(t.Context(), good, client.Apply, client.DryRunAll, client.FieldOwner("capi-topology"), client.ForceOwnership),
		"a server-side dry-run of a good template")
	err = mc.client.Get(t.Context(), client.ObjectKeyFromObject(good), &cabpiv1.IgnitionConfigTemplate{})
	assert.True(t, apierrors.IsNotFound(err), "a dry-run stores nothing: %v", err)
}

// assertDiagnosticsGuarded reaches the Pod's diagnostics port through the API server's
// port-forward and checks that the API server decides who reads the metrics.
func assertDiagnosticsGuarded(t *testing.T, mc *managementCluster, pod *corev1.Pod) {
	t.Helper()
	base := portForward(t, mc, pod, 8443)
	// get returns the status and body of GET /metrics with the token (none for ""); it may run in
	// an Eventually's goroutine, so it reports errors rather than failing the test.
	get := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, base+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		// The serving certificate is the manager's own, self-signed: what is checked here is who
		// may read, not who serves.
		c := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // see above
		}}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	code, _, err := get("")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, code, "an anonymous request")

	ns := "diagnostics"
	_, err = mc.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	for _, sa := range []string{"scraper", "stranger"} {
		_, err := mc.kube.CoreV1().ServiceAccounts(ns).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = mc.kube.RbacV1().ClusterRoleBindings().Create(t.Context(), &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "diagnostics-scraper"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: cabpiMetricsReader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "scraper"}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	code, _, err = get(serviceAccountToken(t, mc, ns, "stranger"))
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, code, "a ServiceAccount RBAC does not allow")
	scraper := serviceAccountToken(t, mc, ns, "scraper")
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		code, body, err := get(scraper)
		if !assert.NoError(c, err) {
			return
		}
		assert.Equal(c, http.StatusOK, code, "a ServiceAccount bound to %s", cabpiMetricsReader)
		assert.Contains(c, body, "cabpi_data_secrets_written_total", "cabpi's own metrics")
	}, time.Minute, 2*time.Second)
}

// assertForgedUpdateRefused sends cabpi's extension an UpdateMachine request Cluster API did not
// make, from a Pod of the management cluster through the Service, as anyone on the cluster
// network could: for a worker Cluster API is not updating, whose body asks for another version
// from the caller's mirror. The answer is Failure, and nothing changes on the node: no update
// Job, the Node schedulable and on its version (docs/adr/038).
func assertForgedUpdateRefused(t *testing.T, mc *managementCluster, worker *clusterv1.Machine) {
	t.Helper()
	result := runForger(t, mc, updateMachineURL(t, mc), forgedUpdateBody(t, worker))
	require.Equal(t, http.StatusOK, result.Status, "the extension answers: %+v", result)
	answer := &runtimehooksv1.UpdateMachineResponse{}
	require.NoError(t, json.Unmarshal([]byte(result.Body), answer))
	assert.Equal(t, runtimehooksv1.ResponseStatusFailure, answer.Status, answer.Message)
	assert.Contains(t, answer.Message, "Cluster API is not updating Machine")
	assertUntouchedByForgery(t, worker)
}

// forgedUpdateBody is an UpdateMachineRequest for the worker that Cluster API did not make: another
// version, from the caller's mirror.
func forgedUpdateBody(t *testing.T, worker *clusterv1.Machine) []byte {
	t.Helper()
	forged := worker.DeepCopy()
	forged.Spec.Version = "v1.99.0"
	config := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: worker.Namespace, Name: worker.Spec.Bootstrap.ConfigRef.Name}}
	config.SetGroupVersionKind(cabpiv1.GroupVersion.WithKind("IgnitionConfig"))
	config.Spec.Kubernetes = cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceBinaries,
		Binaries: &cabpiv1.BinariesSource{BaseURL: "https://attacker.invalid/k8s"}}
	req := &runtimehooksv1.UpdateMachineRequest{Desired: runtimehooksv1.UpdateMachineRequestObjects{
		Machine: *forged, BootstrapConfig: runtime.RawExtension{Object: config}}}
	req.SetGroupVersionKind(runtimehooksv1.GroupVersion.WithKind("UpdateMachineRequest"))
	body, err := json.Marshal(req)
	require.NoError(t, err)
	return body
}

// assertUntouchedByForgery: the worker's Node is schedulable at its version, with no update Job.
func assertUntouchedByForgery(t *testing.T, worker *clusterv1.Machine) {
	t.Helper()
	ctx := t.Context()

	node, err := workloadC.CoreV1().Nodes().Get(ctx, worker.Status.NodeRef.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.False(t, node.Spec.Unschedulable, "the Node is not cordoned")
	assert.Equal(t, worker.Spec.Version, node.Status.NodeInfo.KubeletVersion, "the Node keeps its version")
	jobs, err := workloadC.BatchV1().Jobs(inplace.UpdateNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=cabpi-update"})
	require.NoError(t, err)
	for _, j := range jobs.Items {
		assert.NotEqual(t, node.Name, j.Annotations[inplace.NodeAnnotation], "no update Job for the Node")
	}
}

// serviceAccountToken is a short-lived token of the ServiceAccount (TokenRequest).
func serviceAccountToken(t *testing.T, mc *managementCluster, ns, name string) string {
	t.Helper()
	tr, err := mc.kube.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(600))}}, metav1.CreateOptions{})
	require.NoError(t, err)
	return tr.Status.Token
}

// portForward forwards a local port to the Pod's port through the API server (as kubectl
// port-forward does) until the test ends, and returns https://127.0.0.1:<local port>.
func portForward(t *testing.T, mc *managementCluster, pod *corev1.Pod, port int) string {
	t.Helper()
	transport, upgrader, err := spdy.RoundTripperFor(mc.config)
	require.NoError(t, err)
	u, err := url.Parse(mc.config.Host)
	require.NoError(t, err)
	u.Path = fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/portforward", pod.Namespace, pod.Name)
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	var out, errOut bytes.Buffer
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, &out, &errOut)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(stop) }); <-done })
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port-forward to %s: %v %s", pod.Name, err, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("port-forward to %s not ready: %s", pod.Name, errOut.String())
	}
	ports, err := fw.GetPorts()
	require.NoError(t, err)
	require.Len(t, ports, 1)
	return fmt.Sprintf("https://127.0.0.1:%d", ports[0].Local)
}

// assertRBACExactly asks the API server, for cabpi's ServiceAccount, about every verb on every
// resource config/rbac names: what a rule grants is allowed, every other verb is not; and makes
// one real request outside the list with the ServiceAccount's token, which is forbidden.
func assertRBACExactly(t *testing.T, mc *managementCluster) {
	t.Helper()
	role := &rbacv1.ClusterRole{}
	require.NoError(t, mc.client.Get(t.Context(), types.NamespacedName{Name: cabpiManagerRole}, role))
	user := "system:serviceaccount:" + cabpiNamespace + ":" + cabpiServiceAccount
	groups := []string{"system:serviceaccounts", "system:serviceaccounts:" + cabpiNamespace, "system:authenticated"}
	allowed := func(group, resource, verb string) bool {
		resource, subresource, _ := strings.Cut(resource, "/") // ignitionconfigs/status
		sar, err := mc.kube.AuthorizationV1().SubjectAccessReviews().Create(t.Context(), &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, Groups: groups,
				ResourceAttributes: &authorizationv1.ResourceAttributes{Group: group, Resource: resource, Subresource: subresource,
					Verb: verb, Namespace: pivotNamespace}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		return sar.Status.Allowed
	}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	granted := map[string][]string{} // group/resource → verbs
	for _, rule := range role.Rules {
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				granted[g+"/"+r] = append(granted[g+"/"+r], rule.Verbs...)
			}
		}
	}
	require.NotEmpty(t, granted)
	for gr, verbs := range granted {
		group, resource, _ := strings.Cut(gr, "/") // the group has no "/"; the resource may
		for _, verb := range all {
			want := slices.Contains(verbs, verb) || slices.Contains(verbs, "*")
			assert.Equal(t, want, allowed(group, resource, verb), "%s %s/%s", verb, group, resource)
		}
	}
	for _, outside := range []struct{ group, resource, verb string }{
		{"", "pods", "create"}, {"apps", "deployments", "delete"}, {"", "nodes", "delete"},
		{"rbac.authorization.k8s.io", "clusterrolebindings", "create"},
	} {
		assert.False(t, allowed(outside.group, outside.resource, outside.verb), "%s %s/%s is outside config/rbac", outside.verb, outside.group, outside.resource)
	}

	cfg := rest.AnonymousClientConfig(mc.config)
	cfg.BearerToken = serviceAccountToken(t, mc, cabpiNamespace, cabpiServiceAccount)
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = kube.CoreV1().Pods(cabpiNamespace).Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "none"}}}}, metav1.CreateOptions{})
	assert.True(t, apierrors.IsForbidden(err), "cabpi's ServiceAccount creating a Pod: %v", err)
	_, err = kube.CoreV1().Secrets(pivotNamespace).List(t.Context(), metav1.ListOptions{})
	assert.NoError(t, err, "cabpi's ServiceAccount lists Secrets (its data Secrets)")
}

// deletePodWhileReconciling creates reconcilingConfigs configs (Machines with IgnitionConfigs,
// whose infrastructure is never made), deletes cabpi's Pod while they render, and checks, once
// the next Pod holds the Lease, that each has exactly one data Secret, written once, and one
// join token in the workload cluster.
func deletePodWhileReconciling(t *testing.T, mc *managementCluster, pod *corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	// Every event of the data Secrets from before the first config on, through a watcher that
	// resumes where it was when the API server (or the load balancer before it) ends a watch.
	selector := clusterv1.ClusterNameLabel + "=" + pivotClusterName
	existing, err := mc.kube.CoreV1().Secrets(pivotNamespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
	require.NoError(t, err)
	w, err := watchtools.NewRetryWatcherWithContext(ctx, existing.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.LabelSelector = selector
			return mc.kube.CoreV1().Secrets(pivotNamespace).Watch(ctx, options)
		},
	})
	require.NoError(t, err)
	defer w.Stop()
	type secretEvents struct {
		added, modified, deleted int
		uids                     map[types.UID]bool
	}
	var mu sync.Mutex
	events := map[string]*secretEvents{}
	go func() {
		for ev := range w.ResultChan() {
			s, ok := ev.Object.(*corev1.Secret)
			if !ok || s.Type != clusterv1.ClusterSecretType {
				continue
			}
			mu.Lock()
			e := events[s.Name]
			if e == nil {
				e = &secretEvents{uids: map[types.UID]bool{}}
				events[s.Name] = e
			}
			e.uids[s.UID] = true
			switch ev.Type {
			case watch.Added:
				e.added++
			case watch.Modified:
				e.modified++
			case watch.Deleted:
				e.deleted++
			}
			mu.Unlock()
		}
	}()

	var machines []*clusterv1.Machine
	var names []string
	for i := range reconcilingConfigs {
		name := fmt.Sprintf("reconciling-%02d", i)
		labels := map[string]string{clusterv1.ClusterNameLabel: pivotClusterName}
		config, _, machine := standaloneMachine(pivotClusterName, name, kubernetesVersion, labels, workerSpec(flavors[0], name), infrav1.NspawnMachineSpec{})
		config.Namespace, machine.Namespace = pivotNamespace, pivotNamespace
		createIn(t, mc.client, config, machine)
		machines = append(machines, machine)
		names = append(names, name)
	}
	t.Cleanup(func() {
		for _, m := range machines {
			_ = mc.client.Delete(context.Background(), m)
		}
	})
	// The Pod goes while the configs render: once the first of their data Secrets is there (the
	// watch began with the Secrets that were there before).
	rendered := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, name := range names {
			if events[name] != nil {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return rendered() > 0 }, 2*time.Minute, 100*time.Millisecond, "cabpi's Pod renders the configs")
	renderedBefore := rendered()
	require.NoError(t, mc.kube.CoreV1().Pods(cabpiNamespace).Delete(ctx, pod.Name, metav1.DeleteOptions{}))
	t.Logf("deleted Pod %s with %d of %d data Secrets written", pod.Name, renderedBefore, reconcilingConfigs)

	next := cabpiPodOtherThan(t, mc, pod.Name)
	assertLeaseHeldBy(t, mc, next.Name)
	assert.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, n := range names {
			cfg := &cabpiv1.IgnitionConfig{}
			if assert.NoError(c, mc.client.Get(ctx, types.NamespacedName{Namespace: pivotNamespace, Name: n}, cfg)) {
				assert.True(c, ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false), "config %s has its data", n)
			}
		}
	}, 3*time.Minute, time.Second)
	time.Sleep(5 * time.Second) // events still on their way arrive

	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		e := events[n]
		if !assert.NotNil(t, e, "data Secret %s seen", n) {
			continue
		}
		assert.Equal(t, 1, e.added, "data Secret %s created once", n)
		assert.Zero(t, e.modified, "data Secret %s never written again (rendered once)", n)
		assert.Zero(t, e.deleted, "data Secret %s never deleted", n)
		assert.Len(t, e.uids, 1, "data Secret %s is one object", n)
	}
	tokens := joinTokensByConfig(t)
	for _, n := range names {
		assert.Len(t, tokens[pivotNamespace+"/"+n], 1, "one join token for config %s", n)
	}
}

// joinTokensByConfig lists the workload cluster's bootstrap tokens cabpi made, by the config
// (namespace/name) their description names.
func joinTokensByConfig(t *testing.T) map[string][]string {
	t.Helper()
	secrets, err := workloadC.CoreV1().Secrets(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{
		FieldSelector: "type=" + string(corev1.SecretTypeBootstrapToken)})
	require.NoError(t, err)
	out := map[string][]string{}
	for _, s := range secrets.Items {
		if config, ok := strings.CutPrefix(string(s.Data["description"]), controllers.TokenDescriptionPrefix); ok {
			out[config] = append(out[config], s.Name)
		}
	}
	return out
}

// pivot moves the workload Cluster to the suite's envtest management cluster (Cluster API's
// controllers, cabpi and the provider in-process) with clusterctl move, and checks that nothing
// cabpi made is made again there, then that the moved Cluster scales up.
func pivot(t *testing.T, mc *managementCluster, repo *localRepository, md string, workers []clusterv1.Machine) {
	t.Helper()
	ctx := t.Context()

	// Delete the reconciling configs' Machines: a move wants every Machine provisioned.
	list := &clusterv1.MachineList{}
	require.NoError(t, mc.client.List(ctx, list, client.InNamespace(pivotNamespace)))
	for i := range list.Items {
		if list.Items[i].Labels[clusterv1.MachineDeploymentNameLabel] == "" {
			require.NoError(t, client.IgnoreNotFound(mc.client.Delete(ctx, &list.Items[i])))
		}
	}
	require.Eventually(t, func() bool {
		l := &clusterv1.MachineList{}
		return mc.client.List(ctx, l, client.InNamespace(pivotNamespace)) == nil && len(l.Items) == len(workers)
	}, 3*time.Minute, time.Second, "only the MachineDeployment's Machines are left")

	// What cabpi made for the workers, before.
	type made struct {
		providerID, nodeRef, dataHash string
		tokens                        []string
	}
	before := map[string]made{}
	tokens := joinTokensByConfig(t)
	for _, w := range workers {
		before[w.Name] = made{providerID: w.Spec.ProviderID, nodeRef: w.Status.NodeRef.Name,
			dataHash: dataSecretHash(t, mc.client, w), tokens: tokens[pivotNamespace+"/"+w.Spec.Bootstrap.ConfigRef.Name]}
	}

	// The target has what clusterctl init would have recorded there (the inventory: the same
	// providers at the same versions); the controllers are the suite's own, in-process.
	// A client of the target that knows clusterctl's inventory types (the suite's does not).
	target, err := client.New(mgmt.Config, client.Options{Scheme: managementScheme(t)})
	require.NoError(t, err)
	crd := clusterctlInventoryCRD(t)
	require.NoError(t, client.IgnoreAlreadyExists(target.Create(ctx, crd)))
	require.Eventually(t, func() bool {
		return target.List(ctx, &clusterctlv1.ProviderList{}) == nil
	}, time.Minute, time.Second, "the inventory CRD is served")
	sourceProviders := &clusterctlv1.ProviderList{}
	require.NoError(t, mc.client.List(ctx, sourceProviders))
	require.Len(t, sourceProviders.Items, 4, "clusterctl init recorded the four providers")
	for _, p := range sourceProviders.Items {
		require.NoError(t, client.IgnoreAlreadyExists(target.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: p.Namespace}})))
		moved := &clusterctlv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name, Labels: p.Labels},
			ProviderName: p.ProviderName, Type: p.Type, Version: p.Version}
		require.NoError(t, client.IgnoreAlreadyExists(target.Create(ctx, moved)))
	}
	targetKubeconfig := filepath.Join(t.TempDir(), "target.kubeconfig")
	data, err := mgmt.Kubeconfig("envtest")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(targetKubeconfig, data, 0o600))

	repo.clusterctl(t, "move", "--kubeconfig", mc.kubeconfig, "--to-kubeconfig", targetKubeconfig, "--namespace", pivotNamespace)
	moved := &clusterv1.Cluster{}
	require.NoError(t, target.Get(ctx, types.NamespacedName{Namespace: pivotNamespace, Name: pivotClusterName}, moved))
	t.Cleanup(func() { deleteAndWait(t, moved, 5*time.Minute) })
	assert.True(t, apierrors.IsNotFound(mc.client.Get(ctx, client.ObjectKeyFromObject(moved), &clusterv1.Cluster{})),
		"the Cluster is gone from the source")
	// A move keeps no status: the control plane's provider (the suite) reports it again there.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cp := builder.ControlPlane(pivotNamespace, pivotClusterName).Build()
		if assert.NoError(c, target.Get(ctx, client.ObjectKeyFromObject(cp), cp)) {
			assert.NoError(c, setExternalControlPlaneStatus(ctx, target, cp, kubernetesVersion))
		}
	}, time.Minute, time.Second, "the moved control plane reported initialized")

	// On the target: the same Machines, joined, with the same provider IDs and Nodes; each
	// config has its status back from its data Secret, whose data is the same; no new token.
	movedWorkers := waitDeploymentIn(t, target, pivotNamespace, md, 2, nil, 3*time.Minute)
	assert.Equal(t, names(workers), names(movedWorkers), "the same Machines")
	for _, w := range movedWorkers {
		b := before[w.Name]
		assert.Equal(t, b.providerID, w.Spec.ProviderID, "Machine %s keeps its provider ID", w.Name)
		assert.Equal(t, b.nodeRef, w.Status.NodeRef.Name, "Machine %s keeps its Node", w.Name)
		cfg := &cabpiv1.IgnitionConfig{}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			if assert.NoError(c, target.Get(ctx, types.NamespacedName{Namespace: pivotNamespace, Name: w.Spec.Bootstrap.ConfigRef.Name}, cfg)) {
				assert.True(c, ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false), "config %s: dataSecretCreated", cfg.Name)
				assert.Equal(c, cfg.Name, cfg.Status.DataSecretName, "config %s: dataSecretName", cfg.Name)
			}
		}, time.Minute, time.Second)
		assert.Equal(t, b.dataHash, dataSecretHash(t, target, w), "config %s is not rendered again", w.Spec.Bootstrap.ConfigRef.Name)
	}
	time.Sleep(5 * time.Second) // what the target's cabpi would do, it has done by now
	// No token made for them there: each token of theirs is one that was there before (one may
	// have expired since: a joined node's token is not refreshed).
	tokens = joinTokensByConfig(t)
	for _, w := range movedWorkers {
		for _, tok := range tokens[pivotNamespace+"/"+w.Spec.Bootstrap.ConfigRef.Name] {
			assert.Contains(t, before[w.Name].tokens, tok, "config %s: token %s was made after the move", w.Spec.Bootstrap.ConfigRef.Name, tok)
		}
	}
	if t.Failed() {
		return
	}

	// A scale-up on the target joins a new node to the moved Cluster.
	scaleIn(t, target, pivotNamespace, md, 3)
	all := waitDeploymentIn(t, target, pivotNamespace, md, 3, nil, joinWithin)
	for i := range all {
		if !slices.Contains(names(workers), all[i].Name) {
			assertWorkerJoinedIn(t, target, &all[i], "pivot")
		}
	}
}

// dataSecretHash is the SHA-256 of the data of the Machine's bootstrap data Secret.
func dataSecretHash(t *testing.T, c client.Client, m clusterv1.Machine) string {
	t.Helper()
	s := &corev1.Secret{}
	require.NoError(t, c.Get(t.Context(), types.NamespacedName{Namespace: m.Namespace, Name: ptr.Deref(m.Spec.Bootstrap.DataSecretName, "")}, s))
	sum := sha256.Sum256(s.Data["value"])
	return hex.EncodeToString(sum[:])
}

// dumpPods logs the management cluster's Pods and their containers' states, for a failure.
func dumpPods(t *testing.T, mc *managementCluster) {
	t.Helper()
	pods, err := mc.kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Logf("listing the management cluster's Pods: %v", err)
		return
	}
	for _, p := range pods.Items {
		t.Logf("Pod %s/%s on %q: %s", p.Namespace, p.Name, p.Spec.NodeName, p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				t.Logf("  %s: %s %s", c.Type, c.Reason, c.Message)
			}
		}
		for _, s := range p.Status.ContainerStatuses {
			t.Logf("  container %s: ready %v, restarts %d, waiting %+v, terminated %+v", s.Name, s.Ready, s.RestartCount, s.State.Waiting, s.LastTerminationState.Terminated)
		}
	}
}
