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

package clusterctl_test

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/ociimage"
)

// TestRelease builds a release as a maintainer would (`make release`, a version other than the
// manifests' own) and checks that the components name the image it built, that the image is
// what the Dockerfile describes for both platforms, and that the same inputs give the same
// image, byte for byte, while another time gives another digest.
func TestRelease(t *testing.T) {
	const version = "v0.1.7"
	// A registry of the test's own, on loopback (go-containerregistry's): make publish pushes to it.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	repository := strings.TrimPrefix(reg.URL, "http://") + "/cabpi/manager"
	dir := t.TempDir()
	runMake(t, nil, "release", "RELEASE_VERSION="+version, "RELEASE_DIR="+dir, "KUSTOMIZE="+kustomizeBin,
		"IMAGE_REPOSITORY="+repository, "SOURCE_DATE_EPOCH=1700000000")

	objs, image := releasedComponents(t, dir)
	assert.Equal(t, repository+":"+version, image, "the components name the release's image")
	for _, f := range []string{"metadata.yaml", "cluster-template-ignition.yaml"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}
	assertUpdateExtensionNamesTheComponents(t, dir, objs)
	assertClientAuthAssets(t, dir, objs)

	archive := filepath.Join(dir, "cabpi-image-"+version+".oci.tar")
	idx, name := readOCIArchive(t, archive)
	assert.Equal(t, repository+":"+version, name, "the archive's image is the one the components name")
	manifest, err := idx.IndexManifest()
	require.NoError(t, err)
	var platforms []string
	for _, m := range manifest.Manifests {
		platforms = append(platforms, m.Platform.String())
		img, err := idx.Image(m.Digest)
		require.NoError(t, err)
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, []string{"/manager"}, cfg.Config.Entrypoint, m.Platform.String())
		assert.Equal(t, "65532:65532", cfg.Config.User, m.Platform.String())
		binary := layerFile(t, img, "manager")
		require.NotNil(t, binary, "%s: /manager in the layer", m.Platform)
		assert.Equal(t, int64(0o755), binary.mode, "%s: /manager's mode", m.Platform)
		f, err := elf.NewFile(bytes.NewReader(binary.data))
		require.NoError(t, err, "%s: /manager is an ELF binary", m.Platform)
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[m.Platform.Architecture]
		assert.Equal(t, want, f.Machine, "%s: the binary's machine", m.Platform)
		for _, p := range f.Progs {
			assert.NotEqual(t, elf.PT_INTERP, p.Type, "%s: the binary is static (no interpreter)", m.Platform)
		}
	}
	assert.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)

	// The same inputs give the same archive; another time gives another image.
	again := filepath.Join(t.TempDir(), "again.tar")
	runMake(t, nil, "image", "IMG="+repository+":"+version, "IMAGE_ARCHIVE="+again, "SOURCE_DATE_EPOCH=1700000000")
	first, err := os.ReadFile(archive)
	require.NoError(t, err)
	second, err := os.ReadFile(again)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(first, second), "the same source and SOURCE_DATE_EPOCH give the same archive")
	later := filepath.Join(t.TempDir(), "later.tar")
	runMake(t, nil, "image", "IMG="+repository+":"+version, "IMAGE_ARCHIVE="+later, "SOURCE_DATE_EPOCH=1700000001")
	laterIdx, _ := readOCIArchive(t, later)
	d1, err := idx.Digest()
	require.NoError(t, err)
	d2, err := laterIdx.Digest()
	require.NoError(t, err)
	assert.NotEqual(t, d1, d2, "another SOURCE_DATE_EPOCH gives another digest")

	assertPublished(t, dir, version, repository, idx)
}

// releasedComponents are the objects of the bootstrap-components.yaml in dir, and the image its
// one Deployment runs.
func releasedComponents(t *testing.T, dir string) ([]unstructured.Unstructured, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "bootstrap-components.yaml"))
	require.NoError(t, err)
	objs, err := toUnstructured(data)
	require.NoError(t, err)
	dep := byKind(objs, "Deployment")
	require.Len(t, dep, 1)
	return objs, containerImage(t, &dep[0])
}

// readOCIArchive is ociimage.ReadOCIArchive into a directory of the test.
func readOCIArchive(t *testing.T, archive string) (v1.ImageIndex, string) {
	t.Helper()
	idx, name, err := ociimage.ReadOCIArchive(archive, t.TempDir())
	require.NoError(t, err)
	return idx, name
}

type layerEntry struct {
	mode int64
	data []byte
}

// layerFile is the file at name in the image's layers (nil when there is none).
func layerFile(t *testing.T, img v1.Image, name string) *layerEntry {
	t.Helper()
	layers, err := img.Layers()
	require.NoError(t, err)
	for _, l := range layers {
		rc, err := l.Uncompressed()
		require.NoError(t, err)
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if h.Name == name {
				data, err := io.ReadAll(tr)
				require.NoError(t, err)
				_ = rc.Close()
				return &layerEntry{mode: h.Mode, data: data}
			}
		}
		_ = rc.Close()
	}
	return nil
}

// assertUpdateExtensionNamesTheComponents: the release's update-extension.yaml (an ExtensionConfig
// applied apart from the components, docs/adr/035) names the components' webhook Service, its
// update-extension port, which the manager's container serves with the flag it reads, and the
// serving certificate's Secret, in the components' namespace.
func assertUpdateExtensionNamesTheComponents(t *testing.T, dir string, components []unstructured.Unstructured) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "update-extension.yaml"))
	require.NoError(t, err)
	ecs, err := toUnstructured(data)
	require.NoError(t, err)
	ext := byKind(ecs, "ExtensionConfig")
	require.Len(t, ext, 1)
	ec := ext[0].Object
	svcName, _, _ := unstructured.NestedString(ec, "spec", "clientConfig", "service", "name")
	svcNamespace, _, _ := unstructured.NestedString(ec, "spec", "clientConfig", "service", "namespace")
	// Numbers decode as int64 or float64 depending on the decoder: compare them as text.
	port := fmt.Sprint(ec["spec"].(map[string]any)["clientConfig"].(map[string]any)["service"].(map[string]any)["port"])
	inject := ext[0].GetAnnotations()["runtime.cluster.x-k8s.io/inject-ca-from-secret"]

	var service *unstructured.Unstructured
	for _, s := range byKind(components, "Service") {
		if s.GetName() == svcName && s.GetNamespace() == svcNamespace {
			service = &s
		}
	}
	require.NotNil(t, service, "the components have the Service %s/%s", svcNamespace, svcName)
	ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
	var target any
	for _, p := range ports {
		if m := p.(map[string]any); fmt.Sprint(m["port"]) == port {
			target = m["targetPort"]
		}
	}
	require.NotNil(t, target, "the Service has port %s", port)
	dep := byKind(components, "Deployment")
	require.Len(t, dep, 1)
	containers, _, _ := unstructured.NestedSlice(dep[0].Object, "spec", "template", "spec", "containers")
	manager := containers[0].(map[string]any)
	served := false
	for _, p := range manager["ports"].([]any) {
		if m := p.(map[string]any); m["name"] == target {
			assert.Contains(t, manager["args"], fmt.Sprintf("--update-extension-port=%v", m["containerPort"]), "the manager serves the extension on its port")
			served = true
		}
	}
	assert.True(t, served, "the manager's container has the port %v", target)

	var secret string
	for _, c := range byKind(components, "Certificate") {
		secret, _, _ = unstructured.NestedString(c.Object, "spec", "secretName")
		assert.Equal(t, svcNamespace+"/"+secret, inject, "the CA is injected from the serving certificate's Secret")
	}
	assert.NotEmpty(t, secret)
	assertUpdateExtensionPolicy(t, ecs, dep[0], svcNamespace, manager)
}

// assertUpdateExtensionPolicy: the NetworkPolicy beside the ExtensionConfig selects the manager's
// Pods in the components' namespace, admits the extension's port from Cluster API's namespace
// alone, and leaves every other port of the manager open (the API server calls the webhooks;
// probes and metrics).
func assertUpdateExtensionPolicy(t *testing.T, objs []unstructured.Unstructured, deployment unstructured.Unstructured,
	namespace string, manager map[string]any) {
	t.Helper()
	policies := byKind(objs, "NetworkPolicy")
	require.Len(t, policies, 1, "update-extension.yaml has the NetworkPolicy of the extension's port")
	policy := &networkingv1.NetworkPolicy{}
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(policies[0].Object, policy))
	assert.Equal(t, namespace, policy.Namespace, "in the components' namespace")
	podLabels, _, _ := unstructured.NestedStringMap(deployment.Object, "spec", "template", "metadata", "labels")
	selector, err := metav1.LabelSelectorAsSelector(&policy.Spec.PodSelector)
	require.NoError(t, err)
	assert.True(t, selector.Matches(labels.Set(podLabels)), "it selects the manager's Pods (%v)", podLabels)
	assert.Equal(t, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}, policy.Spec.PolicyTypes)

	// Who may reach each of the manager's ports: "capi-system" (that namespace alone), "any", or
	// "" (nobody).
	reach := map[int32]string{}
	for _, rule := range policy.Spec.Ingress {
		from := "any"
		if len(rule.From) > 0 {
			require.Len(t, rule.From, 1)
			require.Nil(t, rule.From[0].PodSelector)
			require.NotNil(t, rule.From[0].NamespaceSelector)
			from = rule.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"]
		}
		for _, p := range rule.Ports {
			require.NotNil(t, p.Port)
			reach[p.Port.IntVal] = from
		}
	}
	for _, p := range manager["ports"].([]any) {
		port := p.(map[string]any)
		// Numbers decode as int64 or float64 depending on the decoder.
		var number int32
		_, err := fmt.Sscan(fmt.Sprint(port["containerPort"]), &number)
		require.NoError(t, err)
		if port["name"] == "update-ext" {
			assert.Equal(t, "capi-system", reach[number], "the extension's port %d: from Cluster API's namespace alone", number)
			continue
		}
		assert.Equal(t, "any", reach[number], "the manager's port %v (%d) stays open", port["name"], number)
	}
}
