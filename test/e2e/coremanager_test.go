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
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/ociimage"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/certmanager"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/forger"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// Cluster API's core manager as clusterctl init installs it (core/config/default).
const (
	capiNamespace  = "capi-system"
	capiDeployment = "capi-controller-manager"
	// cabpiWebhookService serves the update extension on updateExtensionPort (config/webhook).
	cabpiWebhookService = "cabpi-webhook-service"
	updateExtensionPort = 9444
	// extensionOutageFor is how long cabpi's manager stays stopped after the version changed:
	// long enough for Cluster API to ask CanUpdateMachineSet several times (its requeues back off
	// from milliseconds to seconds).
	extensionOutageFor = 45 * time.Second
)

// inPlaceVariables turn on Cluster API's Runtime SDK and in-place updates in its core
// components, as a user does before applying update-extension.yaml
// (docs/guide/upgrading-in-place.md).
var inPlaceVariables = map[string]string{"EXP_RUNTIME_SDK": "true", "EXP_IN_PLACE_UPDATES": "true"}

// updateInPlaceByCoreManager is TestManagementCluster's in-place step: Cluster API's own core
// manager (its released image, feature gates from clusterctl's variables) calls cabpi's Pod
// through the Service, as a user sets it up from the release (docs/guide/upgrading-in-place.md):
// client certificates on both sides (update-extension-client-auth.yaml and the two patches),
// then update-extension.yaml. The workers' MachineDeployment changes minor version while cabpi's
// manager is stopped: nothing is replaced while the extension cannot answer, and once it is
// back both nodes are drained one at a time (a Deployment under a PodDisruptionBudget of
// minAvailable 1 keeps a Pod Ready throughout) and updated in place. It returns the updated
// Machines.
func updateInPlaceByCoreManager(t *testing.T, mc *managementCluster, deployment *clusterv1.MachineDeployment, workers []clusterv1.Machine) []clusterv1.Machine {
	t.Helper()
	ctx := t.Context()
	release := os.Getenv("CABPI_RELEASE_DIR")

	// Client certificates: the CA and both ends from cert-manager (whose namespace holds a
	// ClusterIssuer's CA), then each manager told to use them.
	require.NoError(t, client.IgnoreAlreadyExists(mc.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: certmanager.ClusterResourceNamespace}})))
	applyManifest(t, mc, filepath.Join(release, "update-extension-client-auth.yaml"))
	var ca []byte
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		caSecret, serving, clientSecret := &corev1.Secret{}, &corev1.Secret{}, &corev1.Secret{}
		if !assert.NoError(c, mc.client.Get(ctx, types.NamespacedName{Namespace: certmanager.ClusterResourceNamespace, Name: "cabpi-update-extension-ca"}, caSecret)) ||
			!assert.NoError(c, mc.client.Get(ctx, types.NamespacedName{Namespace: cabpiNamespace, Name: "cabpi-webhook-service-cert"}, serving)) ||
			!assert.NoError(c, mc.client.Get(ctx, types.NamespacedName{Namespace: capiNamespace, Name: "cabpi-update-extension-client"}, clientSecret)) {
			return
		}
		ca = caSecret.Data[corev1.TLSCertKey]
		assert.Equal(c, ca, serving.Data["ca.crt"], "cabpi's serving certificate is issued by the CA")
		assert.Equal(c, ca, clientSecret.Data["ca.crt"], "Cluster API's client certificate is issued by the CA")
	}, time.Minute, time.Second, "the client-auth certificates are issued")
	patchDeploymentWithFile(t, mc, cabpiNamespace, cabpiDeployment, filepath.Join(release, "client-auth-cabpi-manager-patch.yaml"))
	patchDeploymentWithFile(t, mc, capiNamespace, capiDeployment, filepath.Join(release, "client-auth-capi-manager-patch.yaml"))
	resolveServiceInCoreManager(t, mc)
	waitRolledOut(t, mc, cabpiNamespace, cabpiDeployment)
	waitRolledOut(t, mc, capiNamespace, capiDeployment)

	// The extension registered as released; Cluster API's discovery is its first call, with
	// its client certificate (cabpi answers nothing else now).
	applyManifest(t, mc, filepath.Join(release, "update-extension.yaml"))
	ec := &runtimev1.ExtensionConfig{}
	// Discovered, with the handlers registered (Cluster API may report the condition before a
	// read shows the handlers).
	ok := assert.Eventually(t, func() bool {
		return mc.client.Get(ctx, types.NamespacedName{Name: "cabpi-update-extension"}, ec) == nil &&
			conditions.IsTrue(ec, runtimev1.ExtensionConfigDiscoveredCondition) && len(ec.Status.Handlers) > 0
	}, 3*time.Minute, 2*time.Second, "Cluster API's core manager discovers cabpi's update extension")
	if !ok {
		dumpPods(t, mc)
		t.Fatalf("ExtensionConfig: %+v", ec.Status)
	}
	var handlers []string
	for _, h := range ec.Status.Handlers {
		handlers = append(handlers, h.Name)
	}
	slices.Sort(handlers)
	assert.Equal(t, []string{"can-update-machineset.cabpi-update-extension", "update-machine.cabpi-update-extension"}, handlers,
		"the hooks cabpi registers, as docs/guide/upgrading-in-place.md lists them")
	assertClientCertificateRequired(t, mc, cabpiPod(t, mc))
	// The forged request of step 5b, from a Pod again: no client certificate, no answer.
	forged := runForger(t, mc, updateMachineURL(t, mc), forgedUpdateBody(t, &workers[0]))
	// (The error is the server's alert, "certificate required", or, when the client's first write
	// races it, the connection the server closed.)
	assert.Zero(t, forged.Status, "a Pod without Cluster API's client certificate gets no answer: %+v", forged)
	assert.NotEmpty(t, forged.Error, "the TLS handshake refuses it")
	assertUntouchedByForgery(t, &workers[0])

	// The workload: a Pod pinned to each node and a Deployment spread over both under a budget.
	var before []nodeBefore
	var nodeNames []string
	for i := range workers {
		before = append(before, prepareNode(t, &workers[i]))
		nodeNames = append(nodeNames, workers[i].Status.NodeRef.Name)
	}
	web := startSpreadWorkload(t, "pivot-web", nodeNames)

	// cabpi's manager stopped while the version changes: Cluster API's CanUpdateMachineSet calls
	// fail, and it neither replaces a Machine nor caches a "cannot" (docs/adr/038).
	scaleDeployment(t, mc, cabpiNamespace, cabpiDeployment, 0)
	require.Eventually(t, func() bool {
		pods, err := mc.kube.CoreV1().Pods(cabpiNamespace).List(ctx, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
		return err == nil && len(pods.Items) == 0
	}, 2*time.Minute, time.Second, "cabpi's manager is stopped")
	setDeploymentVersionIn(t, mc.client, deployment, kubernetesVersion, "")
	deadline := time.Now().Add(extensionOutageFor)
	for time.Now().Before(deadline) {
		cur, err := deploymentMachinesIn(ctx, mc.client, deployment.Namespace, deployment.Name)
		require.NoError(t, err)
		require.Equal(t, names(workers), names(cur), "while the extension is down, no Machine is created or removed")
		for i := range cur {
			require.Nil(t, cur[i].DeletionTimestamp, "while the extension is down, Machine %s is not deleted", cur[i].Name)
		}
		time.Sleep(2 * time.Second)
	}
	for _, name := range nodeNames {
		node, err := workloadC.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, previousKubernetesVersion, node.Status.NodeInfo.KubeletVersion, "nothing happened to %s", name)
		assert.False(t, node.Spec.Unschedulable, "%s is not cordoned", name)
	}

	scaleDeployment(t, mc, cabpiNamespace, cabpiDeployment, 1)
	updated := waitUpdatedInPlaceIn(t, mc.client, deployment, kubernetesVersion, names(workers))
	assertKeptIn(t, mc.client, before, updated)
	assertDrained(t, before)
	web.assertBudgetKept(t, nodeNames)
	web.remove()
	for i := range updated {
		assertKubernetesOnNode(t, instanceOf(t, &updated[i]), kubernetesVersion)
	}
	assertUpdateEvents(t, mc, updated)
	return updated
}

// applyManifest applies every object of a multi-document YAML file, as `kubectl apply
// --server-side` does: new objects are created, the fields the file sets on existing ones
// (cabpi's serving Certificate's issuer) are changed.
func applyManifest(t *testing.T, mc *managementCluster, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return
		}
		require.NoError(t, err, "decoding %s", path)
		if len(obj.Object) == 0 {
			continue
		}
		// A webhook of a Deployment just rolled out may not be reachable through its Service yet
		// (the new Pod is Ready before every node's Service rules point at it: "connection
		// refused"): the API server reports that as an internal error, which is tried again, as
		// a user's `kubectl apply` would be.
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(2 * time.Second) {
			err = mc.client.Patch(t.Context(), obj.DeepCopy(), client.Apply, client.FieldOwner("e2e"), client.ForceOwnership) //nolint:staticcheck // unstructured objects from a file: no apply configurations
			if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed calling webhook") || time.Now().After(deadline) {
				break
			}
			t.Logf("applying %s %s: %v; trying again", obj.GetKind(), obj.GetName(), err)
		}
		require.NoError(t, err, "applying %s %s from %s", obj.GetKind(), obj.GetName(), filepath.Base(path))
	}
}

// patchDeploymentWithFile applies a released JSON patch (YAML) to a Deployment, as
// `kubectl patch --type json --patch-file` does.
func patchDeploymentWithFile(t *testing.T, mc *managementCluster, ns, name, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	patch, err := yaml.YAMLToJSON(data)
	require.NoError(t, err)
	_, err = mc.kube.AppsV1().Deployments(ns).Patch(t.Context(), name, types.JSONPatchType, patch, metav1.PatchOptions{})
	require.NoError(t, err, "patching Deployment %s/%s with %s", ns, name, filepath.Base(path))
}

// resolveServiceInCoreManager makes the webhook Service's DNS name resolve in Cluster API's Pod:
// the released ExtensionConfig names the Service, which Cluster API calls by
// <name>.<namespace>.svc, and this cluster runs no cluster DNS (its image cannot be pulled
// here, ADR 027). A host alias to the Service's cluster IP is what that DNS record would say;
// the call still goes through the Service and verifies the serving certificate for that name.
func resolveServiceInCoreManager(t *testing.T, mc *managementCluster) {
	t.Helper()
	ctx := t.Context()
	svc, err := mc.kube.CoreV1().Services(cabpiNamespace).Get(ctx, cabpiWebhookService, metav1.GetOptions{})
	require.NoError(t, err)
	d := &appsv1.Deployment{}
	require.NoError(t, mc.client.Get(ctx, types.NamespacedName{Namespace: capiNamespace, Name: capiDeployment}, d))
	before := d.DeepCopy()
	d.Spec.Template.Spec.HostAliases = append(d.Spec.Template.Spec.HostAliases, corev1.HostAlias{
		IP: svc.Spec.ClusterIP, Hostnames: []string{cabpiWebhookService + "." + cabpiNamespace + ".svc"}})
	// A patch, not an update: the Deployment controller writes the object's status meanwhile.
	require.NoError(t, mc.client.Patch(ctx, d, client.StrategicMergeFrom(before)))
}

// waitRolledOut waits until the Deployment runs its current template alone, Ready.
func waitRolledOut(t *testing.T, mc *managementCluster, ns, name string) {
	t.Helper()
	ok := assert.Eventually(t, func() bool {
		d, err := mc.kube.AppsV1().Deployments(ns).Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || d.Status.ObservedGeneration < d.Generation {
			return false
		}
		want := *d.Spec.Replicas
		return d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want && d.Status.Replicas == want
	}, 4*time.Minute, 2*time.Second, "Deployment %s/%s rolled out", ns, name)
	if !ok {
		dumpPods(t, mc)
		t.FailNow()
	}
}

func scaleDeployment(t *testing.T, mc *managementCluster, ns, name string, replicas int32) {
	t.Helper()
	scale, err := mc.kube.AppsV1().Deployments(ns).GetScale(t.Context(), name, metav1.GetOptions{})
	require.NoError(t, err)
	scale.Spec.Replicas = replicas
	_, err = mc.kube.AppsV1().Deployments(ns).UpdateScale(t.Context(), name, scale, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// assertClientCertificateRequired: with the client-auth patch, cabpi's Pod answers a caller
// with Cluster API's client certificate and no other (docs/adr/040).
func assertClientCertificateRequired(t *testing.T, mc *managementCluster, pod *corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	base := portForward(t, mc, pod, updateExtensionPort)
	clientSecret := &corev1.Secret{}
	require.NoError(t, mc.client.Get(ctx, types.NamespacedName{Namespace: capiNamespace, Name: "cabpi-update-extension-client"}, clientSecret))
	capiCert, err := tls.X509KeyPair(clientSecret.Data[corev1.TLSCertKey], clientSecret.Data[corev1.TLSPrivateKeyKey])
	require.NoError(t, err)
	discover := func(certs []tls.Certificate) error {
		// The serving certificate is the Service's name, reached here through a port-forward:
		// what is checked is whom the server answers.
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: certs}, //nolint:gosec // see above
		}}
		req := &runtimehooksv1.DiscoveryRequest{}
		req.SetGroupVersionKind(runtimehooksv1.GroupVersion.WithKind("DiscoveryRequest"))
		body, err := json.Marshal(req)
		if err != nil {
			return err
		}
		post, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/hooks.runtime.cluster.x-k8s.io/v1alpha1/discovery", bytes.NewReader(body))
		if err != nil {
			return err
		}
		post.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(post)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		answer := &runtimehooksv1.DiscoveryResponse{}
		if err := json.NewDecoder(resp.Body).Decode(answer); err != nil {
			return err
		}
		if answer.Status != runtimehooksv1.ResponseStatusSuccess {
			return fmt.Errorf("discovery answered %s: %s", answer.Status, answer.Message)
		}
		return nil
	}
	assert.NoError(t, discover([]tls.Certificate{capiCert}), "with Cluster API's client certificate")
	assert.Error(t, discover(nil), "without a client certificate the extension answers nothing")
}

// assertUpdateEvents: cabpi's Pod said on each Machine that it drained, started and finished
// its update (what an operator watches, docs/guide/upgrading-in-place.md).
func assertUpdateEvents(t *testing.T, mc *managementCluster, machines []clusterv1.Machine) {
	t.Helper()
	events, err := mc.kube.EventsV1().Events(machines[0].Namespace).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	for _, m := range machines {
		var reasons []string
		for _, e := range events.Items {
			if e.Regarding.Kind == "Machine" && e.Regarding.Name == m.Name && e.Type == corev1.EventTypeNormal {
				reasons = append(reasons, e.Reason)
			}
		}
		for _, want := range []string{"InPlaceUpdateDraining", "InPlaceUpdateStarted", "InPlaceUpdateSucceeded"} {
			assert.Contains(t, reasons, want, "Machine %s's events", m.Name)
		}
	}
}

// setDeploymentVersionIn changes the MachineDeployment's version (and bootstrap template, when
// given) alone, through c.
func setDeploymentVersionIn(t *testing.T, c client.Client, d *clusterv1.MachineDeployment, version string, bootstrap string) {
	t.Helper()
	cur := &clusterv1.MachineDeployment{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKeyFromObject(d), cur))
	before := cur.DeepCopy()
	cur.Spec.Template.Spec.Version = version
	if bootstrap != "" {
		cur.Spec.Template.Spec.Bootstrap.ConfigRef.Name = bootstrap
	}
	require.NoError(t, c.Patch(t.Context(), cur, client.MergeFrom(before)))
}

// forgerImage is the image of test/framework/forger's command, which the suite builds and
// imports into the management cluster's node: a Pod of that cluster that is not Cluster API.
const forgerImage = "e2e.cabpi.dev/forger:v0"

// forgerArchive builds the forger's image as an OCI archive and returns its path.
func forgerArchive(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	dir := t.TempDir()
	binary := filepath.Join(dir, "forger")
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-o", binary, "./test/framework/forger/cmd")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the forger: %s", out)
	img, err := ociimage.Image([]ociimage.File{{Path: "/forger", Mode: 0o755, Source: binary}},
		ociimage.Config{Platform: v1.Platform{OS: "linux", Architecture: "amd64"}, Entrypoint: []string{"/forger"}, User: "65532:65532"})
	require.NoError(t, err)
	idx, err := ociimage.Index(img)
	require.NoError(t, err)
	tag, err := name.NewTag(forgerImage, name.StrictValidation)
	require.NoError(t, err)
	archive := filepath.Join(dir, "forger.oci.tar")
	require.NoError(t, ociimage.WriteOCIArchive(archive, tag, idx))
	return archive
}

// updateMachineURL is the UpdateMachine hook of cabpi's extension at its Service's cluster IP
// (no cluster DNS here).
func updateMachineURL(t *testing.T, mc *managementCluster) string {
	t.Helper()
	svc, err := mc.kube.CoreV1().Services(cabpiNamespace).Get(t.Context(), cabpiWebhookService, metav1.GetOptions{})
	require.NoError(t, err)
	return fmt.Sprintf("https://%s/hooks.runtime.cluster.x-k8s.io/v1alpha1/updatemachine/%s",
		net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(updateExtensionPort)), inplace.UpdateMachineHandler)
}

// runForger runs the forger in a Pod of the management cluster's default namespace, POSTing body
// to url, and returns what it got.
func runForger(t *testing.T, mc *managementCluster, url string, body []byte) forger.Result {
	t.Helper()
	ctx := t.Context()
	pods := mc.kube.CoreV1().Pods(metav1.NamespaceDefault)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "forger-"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "forger", Image: forgerImage, ImagePullPolicy: corev1.PullNever,
				Env: []corev1.EnvVar{{Name: forger.URLEnv, Value: url}, {Name: forger.BodyEnv, Value: string(body)}}}},
		},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{}) })
	ok := assert.Eventually(t, func() bool {
		p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	}, 2*time.Minute, time.Second, "the forger's Pod %s ends", pod.Name)
	if !ok {
		dumpPods(t, mc)
		t.FailNow()
	}
	log, err := pods.GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	require.NoError(t, err)
	var result forger.Result
	require.NoError(t, json.Unmarshal(log, &result), "the forger's log: %s", log)
	return result
}
