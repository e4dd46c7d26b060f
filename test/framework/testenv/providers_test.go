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

package testenv

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestProviderModulesPinVersionsEnv: hack/versions.env is the one home of the infrastructure
// providers' versions, but each module under test/providers must also require its provider in
// its own go.mod (Go needs it there). This keeps the two from parting: every provider module
// requires its provider at the version versions.env pins, and the shared providertest module
// requires none of them (each provider module's own pin must win).
func TestProviderModulesPinVersionsEnv(t *testing.T) {
	root, err := RepoRoot()
	require.NoError(t, err)
	mods, err := filepath.Glob(filepath.Join(root, "test", "providers", "*", "go.mod"))
	require.NoError(t, err)

	var checked []string
	for _, file := range mods {
		dir := filepath.Base(filepath.Dir(file))
		requires, err := goModRequires(file)
		require.NoError(t, err)
		p, err := Infrastructure(dir)
		if err != nil { // not a provider's module (providertest)
			for _, other := range infrastructureProviders {
				require.NotContains(t, requires, other.module, "test/providers/%s/go.mod pins a provider module", dir)
			}
			continue
		}
		require.Contains(t, requires, p.Module, "test/providers/%s/go.mod does not require %s", dir, p.Module)
		require.Equal(t, p.Version, requires[p.Module],
			"test/providers/%s/go.mod requires %s at another version than hack/versions.env's %s",
			dir, p.Module, infrastructureProviders[dir].variable)
		if p.PinnedIn != "" {
			requirePinned(t, root, p)
		}
		checked = append(checked, dir)
	}
	sort.Strings(checked)
	require.Equal(t, []string{"aws", "azure", "gcp", "openstack"}, checked, "the provider modules checked under test/providers")
}

// sharedBuildModules are the provider modules that build their packages from the same module
// versions, so that a cold build compiles Kubernetes' libraries, controller-runtime and Cluster
// API once for all of them instead of once each (a different klog alone recompiles every
// Kubernetes package): CAPA's, CAPG's and CAPO's code compiles against the Cluster API v1.13 line
// (CAPO v0.13.0 asks for v1.11.1 at least; the check calls its controllers, whose handling of the
// data Secret does not depend on the line). CAPZ v1.21.0 is left out: it imports Cluster API
// v1.10's API packages, which later lines moved.
var sharedBuildModules = []string{"aws", "gcp", "openstack"}

// TestProviderModulesShareBuilds: every module that a package of two of sharedBuildModules
// comes from is at one version in both, so the cold CI's build of them stays one build (README).
func TestProviderModulesShareBuilds(t *testing.T) {
	root, err := RepoRoot()
	require.NoError(t, err)
	versions := map[string]map[string]string{} // module path -> provider module -> version
	for _, dir := range sharedBuildModules {
		cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}} {{.Version}}{{end}}", "./...")
		cmd.Dir = filepath.Join(root, "test", "providers", dir)
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, "go list in test/providers/%s: %s", dir, stderr.String())
		for _, line := range strings.Split(string(out), "\n") {
			path, version, ok := strings.Cut(line, " ")
			if !ok || version == "" { // a module of this repository (replaced in)
				continue
			}
			if versions[path] == nil {
				versions[path] = map[string]string{}
			}
			versions[path][dir] = version
		}
	}
	var differ []string
	for path, byDir := range versions {
		seen := map[string]bool{}
		for _, v := range byDir {
			seen[v] = true
		}
		if len(seen) > 1 {
			differ = append(differ, fmt.Sprintf("%s %v", path, byDir))
		}
	}
	sort.Strings(differ)
	require.Empty(t, differ, "modules built at different versions in test/providers/{%s}: require the highest in each go.mod",
		strings.Join(sharedBuildModules, ","))
}

// requirePinned: a provider the checksum database does not know is downloaded in PinnedIn, whose
// go.sum must hold the hashes of its module and go.mod at the pinned version, or go mod download
// would ask the checksum database (and fail) instead of verifying against them.
func requirePinned(t *testing.T, root string, p InfrastructureProvider) {
	t.Helper()
	sums, err := os.ReadFile(filepath.Join(root, p.PinnedIn, "go.sum"))
	require.NoError(t, err, "the go.sum that pins %s", p.Module)
	lines := strings.Split(string(sums), "\n")
	for _, entry := range []string{p.Module + " " + p.Version + " h1:", p.Module + " " + p.Version + "/go.mod h1:"} {
		require.True(t, slices.ContainsFunc(lines, func(l string) bool { return strings.HasPrefix(l, entry) }),
			"%s/go.sum has no %q", p.PinnedIn, entry)
	}
}

// goModRequires reads the require directives of a go.mod (single-line and block form) and
// refuses a replace directive, which would put another version in their place.
func goModRequires(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	requires := map[string]string{}
	inRequire := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "//")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case inRequire && fields[0] == ")":
			inRequire = false
			continue
		case fields[0] == "require" && len(fields) == 2 && fields[1] == "(":
			inRequire = true
			continue
		case fields[0] == "require":
			fields = fields[1:]
		case fields[0] == "replace":
			// A replace of the shared providertest module is how the modules find it.
			if !strings.HasPrefix(fields[1], "github.com/cabpi/") {
				return nil, fmt.Errorf("%s: replace %s: the version would not be the required one", file, fields[1])
			}
			continue
		case !inRequire:
			continue
		}
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s: %q is not a module and a version", file, strings.TrimSpace(line))
		}
		requires[fields[0]] = fields[1]
	}
	return requires, sc.Err()
}
