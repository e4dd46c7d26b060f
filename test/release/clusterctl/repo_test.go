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
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// providerRepo is a clusterctl set-up in a temporary directory: a file:// repository with our
// release (built by `make release-manifests`) and minimal releases of the infrastructure
// providers (their CRDs and upstream metadata.yaml, no templates), our templates installed as
// clusterctl overrides of them by `make clusterctl-overrides`, and a clusterctl config file
// naming the providers.
type providerRepo struct {
	dir       string // repository root: <provider-label>/<version>/<files>
	release   string // our release directory (bootstrap-ignition/v0.1.0)
	config    string // clusterctl config file
	xdg, home string // XDG_CONFIG_HOME and HOME of clusterctl
}

func newProviderRepo(t *testing.T) *providerRepo {
	t.Helper()
	base := t.TempDir()
	r := &providerRepo{
		dir:  filepath.Join(base, "repository"),
		xdg:  filepath.Join(base, "xdg"),
		home: filepath.Join(base, "home"),
	}
	r.release = filepath.Join(r.dir, "bootstrap-ignition", providerVersion)
	r.config = filepath.Join(base, "clusterctl.yaml")
	for _, d := range []string{r.xdg, r.home} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}

	// Our release, by the real make target (kustomize build config/default + metadata + templates).
	runMake(t, nil, "release-manifests", "RELEASE_VERSION="+providerVersion, "RELEASE_DIR="+r.release, "KUSTOMIZE="+kustomizeBin)
	// Our templates as overrides, by the real make target and at its default place: clusterctl
	// below must find them under the same XDG_CONFIG_HOME.
	for _, infra := range append([]string{"docker"}, cloudProviders...) {
		runMake(t, []string{"XDG_CONFIG_HOME=" + r.xdg, "GOENV=" + goEnvFile}, "clusterctl-overrides", "INFRA="+infra)
	}
	overrides := filepath.Join(r.xdg, "cluster-api", "overrides")
	want := []string{
		"infrastructure-docker/" + capiVersion + "/cluster-template-ignition.yaml",
		"infrastructure-docker/" + capiVersion + "/cluster-template-ignition-clusterclass.yaml",
		"infrastructure-docker/" + capiVersion + "/clusterclass-ignition.yaml",
		"infrastructure-docker/" + capiVersion + "/cluster-template-ignition-kcp.yaml",
	}
	for _, f := range cloudFlavors {
		want = append(want, "infrastructure-"+f.infra+"/"+infra[f.infra].Version+"/cluster-template-"+f.flavor+".yaml")
	}
	for _, f := range want {
		require.FileExists(t, filepath.Join(overrides, f), "make clusterctl-overrides")
	}

	providers := []map[string]string{
		{"name": "ignition", "type": "BootstrapProvider", "url": "file://" + filepath.Join(r.release, "bootstrap-components.yaml")},
		{"name": "docker", "type": "InfrastructureProvider", "url": "file://" +
			r.writeInfraProvider(t, "docker", capiVersion, capdCRDDir(), filepath.Join(capiDir, "metadata.yaml"))},
	}
	for _, name := range cloudProviders {
		m := infra[name]
		providers = append(providers, map[string]string{"name": name, "type": "InfrastructureProvider", "url": "file://" +
			r.writeInfraProvider(t, name, m.Version, m.crdDir(), filepath.Join(m.dir, "metadata.yaml"))})
	}
	cfg := map[string]any{"providers": providers}
	data, err := yaml.Marshal(cfg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(r.config, data, 0o644))
	return r
}

// writeInfraProvider writes <label>/<version>/infrastructure-components.yaml (the provider's CRDs)
// and the provider's own metadata.yaml, and returns the components path. No templates: those
// come from the overrides.
func (r *providerRepo) writeInfraProvider(t *testing.T, name, version, crdDir, metadata string) string {
	t.Helper()
	dir := filepath.Join(r.dir, "infrastructure-"+name, version)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no CRDs in %s", crdDir)
	var components bytes.Buffer
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		components.WriteString("---\n")
		components.Write(data)
	}
	md, err := os.ReadFile(metadata)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "metadata.yaml"), md, 0o644))
	path := filepath.Join(dir, "infrastructure-components.yaml")
	require.NoError(t, os.WriteFile(path, components.Bytes(), 0o644))
	return path
}

func runMake(t *testing.T, extraEnv []string, target string, vars ...string) string {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-C", repoRoot, "--no-print-directory", target}, vars...)...)
	// Settings of the caller's environment that would move the outputs elsewhere.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "CLUSTERCTL_OVERRIDES_DIR=") || strings.HasPrefix(kv, "INFRA_VERSION=")
	})
	cmd.Env = append(cmd.Env, extraEnv...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "make %s %s:\n%s", target, strings.Join(vars, " "), out)
	return string(out)
}

// clusterctl runs the real clusterctl with the repository's config and a clean environment: no
// kubeconfig (no management cluster), XDG_CONFIG_HOME/HOME in the temporary directory, no version
// check and an unreachable proxy, so that any attempt to reach GitHub fails the test. vars are
// clusterctl variables passed as environment variables.
func (r *providerRepo) clusterctl(vars map[string]string, args ...string) (string, error) {
	cmd := exec.Command(clusterctlBin, append(args, "--config", r.config)...)
	cmd.Dir = r.home
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + r.home,
		"XDG_CONFIG_HOME=" + r.xdg,
		"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=",
	}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("clusterctl %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

func (r *providerRepo) mustClusterctl(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	out, err := r.clusterctl(vars, args...)
	require.NoError(t, err)
	return out
}

// clusterctlVariable is a clusterctl-style variable reference left in an output: ${NAME},
// ${NAME:=default}... Shell references in scripts ($${name} in a template) are lower case.
var clusterctlVariable = regexp.MustCompile(`\$\{\s*[A-Z][A-Z0-9_]*`)

// parseObjects checks that out has no unresolved clusterctl variable and no "$$" (an escape
// clusterctl did not process), and returns its objects.
func parseObjects(t *testing.T, out string) []unstructured.Unstructured {
	t.Helper()
	unresolved := slices.DeleteFunc(clusterctlVariable.FindAllString(out, -1), func(v string) bool {
		// The node's own metadata variables, escaped on purpose: CABPK's kubeadm configuration
		// gets them substituted on the node (envsubst), as in CAPA's Flatcar flavor.
		return strings.HasPrefix(v, "${COREOS_EC2_")
	})
	assert.Empty(t, unresolved, "unresolved variables in the output")
	assert.NotContains(t, out, "$$", "unprocessed $$ escape in the output")
	objs, err := toUnstructured([]byte(out))
	require.NoError(t, err)
	require.NotEmpty(t, objs)
	return objs
}

func kindCounts(objs []unstructured.Unstructured) map[string]int {
	m := map[string]int{}
	for _, o := range objs {
		m[o.GetKind()]++
	}
	return m
}

func byKind(objs []unstructured.Unstructured, kind string) []unstructured.Unstructured {
	var out []unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func find(t *testing.T, objs []unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for i := range objs {
		if objs[i].GetKind() == kind && objs[i].GetName() == name {
			return &objs[i]
		}
	}
	t.Fatalf("no %s %q in the output", kind, name)
	return nil
}

// dryRunApply server-side applies every object with dryRun=All and returns the errors by object.
// Objects whose group is in skipGroups are returned unapplied.
func dryRunApply(ctx context.Context, objs []unstructured.Unstructured, skipGroups ...string) (errs map[string]error, skipped []string) {
	errs = map[string]error{}
	for i := range objs {
		u := objs[i].DeepCopy()
		id := fmt.Sprintf("%s %s/%s", u.GroupVersionKind(), u.GetNamespace(), u.GetName())
		if slices.Contains(skipGroups, u.GroupVersionKind().Group) {
			skipped = append(skipped, id)
			continue
		}
		if err := env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u),
			client.FieldOwner("cabpi-clusterctl-test"), client.DryRunAll, client.ForceOwnership); err != nil {
			errs[id] = err
		}
	}
	return errs, skipped
}

func requireDryRunApplied(t *testing.T, objs []unstructured.Unstructured) {
	t.Helper()
	errs, _ := dryRunApply(t.Context(), objs)
	for id, err := range errs {
		t.Errorf("dry-run apply of %s: %v", id, err)
	}
}

// listVariables parses `clusterctl generate cluster --list-variables`.
func listVariables(t *testing.T, out string) (required, optional []string) {
	t.Helper()
	var section *[]string
	for _, line := range strings.Split(out, "\n") {
		switch strings.TrimSpace(line) {
		case "Required Variables:":
			section = &required
			continue
		case "Optional Variables:":
			section = &optional
			continue
		}
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "-" && section != nil {
			*section = append(*section, f[1])
		}
	}
	sort.Strings(required)
	sort.Strings(optional)
	require.NotEmpty(t, append(required, optional...), "no variables parsed from:\n%s", out)
	return required, optional
}

// toUnstructured splits a multi-document YAML stream into objects (empty documents skipped).
func toUnstructured(data []byte) ([]unstructured.Unstructured, error) {
	var objs []unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, fmt.Errorf("parsing %q: %w", doc, err)
		}
		if len(m) == 0 {
			continue
		}
		objs = append(objs, unstructured.Unstructured{Object: m})
	}
}
