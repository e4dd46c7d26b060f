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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	clusterctlv1 "sigs.k8s.io/cluster-api/cmd/clusterctl/api/v1alpha3"
	"sigs.k8s.io/cluster-api/util/test/builder"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/ociimage"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// The providers the suite installs with clusterctl, as a user names them in clusterctl's
// configuration: Cluster API's core, cabpi (its release, built by make release), and the two
// parts the suite plays itself, whose components are their CRDs only (their controllers run in
// the test process): the externally managed control plane and the test infrastructure provider.
const (
	coreProvider         = "cluster-api"
	bootstrapProvider    = "ignition"
	controlPlaneProvider = "generic"
	infraProvider        = "nspawn"
	// suiteProvidersVersion is the version of the two the suite plays.
	suiteProvidersVersion = "v0.0.1"
	// cabpiVersion is the release make e2e builds (mk/release.mk RELEASE_VERSION).
	cabpiVersion = "v0.1.0"
)

// localRepository is a clusterctl provider repository on disk ({provider label}/{version}/...)
// with a clusterctl configuration naming its providers, as a user keeps one for providers that
// are not in clusterctl's built-in list.
type localRepository struct {
	dir, config, home string
	capiVersion       string
	providers         []clusterctlProvider
}

// clusterctlProvider is a provider entry of clusterctl's configuration.
type clusterctlProvider struct {
	Name string `json:"name"`
	URL  string `json:"url"`
	Type string `json:"type"`
}

// kustomization is the part of kustomize's Kustomization the core components' overlay uses.
type kustomization struct {
	APIVersion string           `json:"apiVersion"`
	Kind       string           `json:"kind"`
	Resources  []string         `json:"resources"`
	Images     []kustomizeImage `json:"images,omitempty"`
	Patches    []kustomizePatch `json:"patches,omitempty"`
}

type kustomizeImage struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
}

type kustomizePatch struct {
	Patch  string          `json:"patch"`
	Target kustomizeTarget `json:"target"`
}

type kustomizeTarget struct {
	Kind string `json:"kind"`
}

type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value string `json:"value"`
}

// newLocalRepository writes the repository: Cluster API's core components built the way its
// release builds them (kustomize build core/config/default, the release image, pull policy
// IfNotPresent), cabpi's release directory as make release wrote it, and the suite's two.
func newLocalRepository(t *testing.T) *localRepository {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	capiDir, err := testenv.CAPIModuleDir(root)
	require.NoError(t, err)
	base := t.TempDir()
	r := &localRepository{dir: filepath.Join(base, "repository"), config: filepath.Join(base, "clusterctl.yaml"),
		home: filepath.Join(base, "home"), capiVersion: filepath.Base(capiDir)[strings.LastIndex(filepath.Base(capiDir), "@")+1:]}
	require.NoError(t, os.MkdirAll(r.home, 0o755))

	// Cluster API's core, from its module.
	overlay := filepath.Join(base, "core-overlay")
	require.NoError(t, os.MkdirAll(overlay, 0o755))
	coreBase, err := filepath.Rel(overlay, filepath.Join(capiDir, "core", "config", "default"))
	require.NoError(t, err)
	pullPolicy, err := json.Marshal([]jsonPatchOp{{Op: "replace", Path: "/spec/template/spec/containers/0/imagePullPolicy", Value: "IfNotPresent"}})
	require.NoError(t, err)
	// The image make capi-image built, by the name its archive gives it (the release's name).
	_, imageName, err := ociimage.ReadOCIArchive(os.Getenv("CABPI_CAPI_IMAGE"), t.TempDir())
	require.NoError(t, err)
	image, err := name.NewTag(imageName, name.StrictValidation)
	require.NoError(t, err)
	require.Equal(t, r.capiVersion, image.TagStr(), "the Cluster API image is of go.mod's version")
	writeYAML(t, filepath.Join(overlay, "kustomization.yaml"), kustomization{
		APIVersion: "kustomize.config.k8s.io/v1beta1", Kind: "Kustomization",
		Resources: []string{coreBase},
		Images: []kustomizeImage{{Name: "gcr.io/k8s-staging-cluster-api/cluster-api-controller",
			NewName: image.Context().Name(), NewTag: image.TagStr()}},
		Patches: []kustomizePatch{{Patch: string(pullPolicy), Target: kustomizeTarget{Kind: "Deployment"}}},
	})
	core := r.providerDir(t, coreProvider, clusterctlv1.CoreProviderType, r.capiVersion)
	out, err := exec.Command(os.Getenv("CABPI_KUSTOMIZE"), "build", overlay).Output()
	require.NoError(t, err, "kustomize build of Cluster API's core/config/default")
	require.NoError(t, os.WriteFile(filepath.Join(core, "core-components.yaml"), out, 0o644))
	copyFile(t, filepath.Join(capiDir, "metadata.yaml"), filepath.Join(core, "metadata.yaml"))

	// cabpi, as released.
	release := os.Getenv("CABPI_RELEASE_DIR")
	cabpi := r.providerDir(t, bootstrapProvider, clusterctlv1.BootstrapProviderType, cabpiVersion)
	for _, f := range []string{"bootstrap-components.yaml", "metadata.yaml"} {
		copyFile(t, filepath.Join(release, f), filepath.Join(cabpi, f))
	}

	// The suite's two: their CRDs, and metadata saying they implement the v1beta2 contract.
	metadata := clusterctlv1.Metadata{
		TypeMeta:      metav1.TypeMeta{APIVersion: clusterctlv1.GroupVersion.String(), Kind: "Metadata"},
		ReleaseSeries: []clusterctlv1.ReleaseSeries{{Major: 0, Minor: 0, Contract: "v1beta2"}},
	}
	// clusterctl installs a provider's objects in its namespace (the components' Namespace):
	// theirs hold nothing, their controllers run in the test process.
	namespaceDoc := func(name string) []byte {
		data, err := yaml.Marshal(&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: name}})
		require.NoError(t, err)
		return data
	}
	generic := r.providerDir(t, controlPlaneProvider, clusterctlv1.ControlPlaneProviderType, suiteProvidersVersion)
	writeYAML(t, filepath.Join(generic, "metadata.yaml"), metadata)
	controlPlaneCRD := builder.GenericControlPlaneCRD.DeepCopy()
	controlPlaneCRD.TypeMeta = metav1.TypeMeta{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition"}
	crd, err := yaml.Marshal(controlPlaneCRD)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(generic, "control-plane-components.yaml"),
		slices.Concat(namespaceDoc("generic-control-plane-system"), []byte("---\n"), crd), 0o644))
	nspawn := r.providerDir(t, infraProvider, clusterctlv1.InfrastructureProviderType, suiteProvidersVersion)
	writeYAML(t, filepath.Join(nspawn, "metadata.yaml"), metadata)
	crds, err := filepath.Glob(filepath.Join(root, "test", "framework", "infrastructure", "config", "crd", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, crds)
	var components bytes.Buffer
	components.Write(namespaceDoc("nspawn-infrastructure-system"))
	for _, f := range crds {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		components.WriteString("---\n")
		components.Write(data)
	}
	require.NoError(t, os.WriteFile(filepath.Join(nspawn, "infrastructure-components.yaml"), components.Bytes(), 0o644))

	// clusterctl's configuration: the four providers by their components' URLs.
	for _, p := range []struct {
		name    string
		typ     clusterctlv1.ProviderType
		version string
		file    string
	}{
		{coreProvider, clusterctlv1.CoreProviderType, r.capiVersion, "core-components.yaml"},
		{bootstrapProvider, clusterctlv1.BootstrapProviderType, cabpiVersion, "bootstrap-components.yaml"},
		{controlPlaneProvider, clusterctlv1.ControlPlaneProviderType, suiteProvidersVersion, "control-plane-components.yaml"},
		{infraProvider, clusterctlv1.InfrastructureProviderType, suiteProvidersVersion, "infrastructure-components.yaml"},
	} {
		r.providers = append(r.providers, clusterctlProvider{Name: p.name, Type: string(p.typ),
			URL: "file://" + filepath.Join(r.providerDirPath(p.name, p.typ, p.version), p.file)})
	}
	r.configure(t, nil)
	return r
}

// configure writes clusterctl's configuration: the providers, and variables as a user sets
// them in clusterctl.yaml (EXP_RUNTIME_SDK, ...), which the components' ${VAR:=default} take.
func (r *localRepository) configure(t *testing.T, variables map[string]string) {
	t.Helper()
	config := map[string]any{"providers": r.providers}
	for k, v := range variables {
		config[k] = v
	}
	writeYAML(t, r.config, config)
}

// providerDirPath is {repository}/{provider label}/{version}: clusterctl's layout for a local
// repository (the label as clusterctl names a provider: cluster-api, bootstrap-ignition, ...).
func (r *localRepository) providerDirPath(name string, typ clusterctlv1.ProviderType, version string) string {
	return filepath.Join(r.dir, clusterctlv1.ManifestLabel(name, typ), version)
}

func (r *localRepository) providerDir(t *testing.T, name string, typ clusterctlv1.ProviderType, version string) string {
	t.Helper()
	d := r.providerDirPath(name, typ, version)
	require.NoError(t, os.MkdirAll(d, 0o755))
	return d
}

// clusterctl runs the real clusterctl with the repository's configuration and a clean
// environment: HOME in the test's directory, no version check, and an unreachable proxy for
// everything but the suite's own network (the management clusters), so that any attempt to
// reach the Internet fails the step.
func (r *localRepository) clusterctl(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Getenv("CABPI_CLUSTERCTL"), append(args, "--config", r.config)...)
	cmd.Dir = r.home
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + r.home,
		"XDG_CONFIG_HOME=" + filepath.Join(r.home, ".config"),
		"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=" + suitePrefix.String() + ",127.0.0.1",
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("clusterctl %s:\n%s", strings.Join(args, " "), out.String())
	require.NoError(t, err, "clusterctl %s", strings.Join(args, " "))
	return out.String()
}

func writeYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := yaml.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(to, data, 0o644))
}

// clusterctlInventoryCRD is clusterctl's Provider CRD, from the Cluster API module: what a
// management cluster has once clusterctl init ran there.
func clusterctlInventoryCRD(t *testing.T) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	capiDir, err := testenv.CAPIModuleDir(root)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(capiDir, "cmd", "clusterctl", "config", "manifest", "clusterctl-api.yaml"))
	require.NoError(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	require.NoError(t, yaml.Unmarshal(data, crd))
	require.Equal(t, "providers.clusterctl.cluster.x-k8s.io", crd.Name, fmt.Sprintf("the CRD in %s", capiDir))
	return crd
}
