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
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
)

const capiModule = "sigs.k8s.io/cluster-api"

// RepoRoot returns the root of the cabpi repository (the directory holding go.mod), found by
// walking up from this source file and, failing that, from the working directory.
func RepoRoot() (string, error) {
	var starts []string
	if _, file, _, ok := runtime.Caller(0); ok {
		starts = append(starts, filepath.Dir(file))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for d := dir; ; d = filepath.Dir(d) {
			if st, err := os.Stat(filepath.Join(d, "go.mod")); err == nil && !st.IsDir() {
				return d, nil
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", errors.New("testenv: cannot find the repository root (no go.mod above this package or the working directory)")
}

// CAPIModuleDir returns the directory of the sigs.k8s.io/cluster-api module this test binary is
// built with (its CRDs live in core/config/crd/bases). Order: $CABPI_CAPI_DIR; the module cache
// path computed from the binary's build info and GOMODCACHE (go test binaries carry no dependency
// build info, so this only helps other binaries); `go list -m -json` run in repoRoot (~10ms).
func CAPIModuleDir(repoRoot string) (string, error) {
	if d := os.Getenv("CABPI_CAPI_DIR"); d != "" {
		return d, nil
	}
	if d := capiDirFromBuildInfo(); d != "" {
		return d, nil
	}
	cmd := exec.Command("go", "list", "-m", "-json", capiModule)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("testenv: go list -m -json %s: %w: %s", capiModule, err, stderr.String())
	}
	var m struct{ Dir string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", fmt.Errorf("testenv: parsing go list output: %w", err)
	}
	if m.Dir == "" {
		return "", fmt.Errorf("testenv: go list reports no directory for %s (run go mod download)", capiModule)
	}
	return m.Dir, nil
}

// ModuleDir returns the module cache directory of mod@version, downloading it through the Go
// module proxy when needed: for modules the tests read files of (CRDs, kustomize bases) but the
// project does not import. It runs outside the repository's module so go.mod and go.sum stay
// untouched; the checksum database verifies the download.
func ModuleDir(mod, version string) (string, error) {
	tmp, err := os.MkdirTemp("", "cabpi-moddownload-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	return moduleDirFrom(tmp, mod, version)
}

// ModuleDirPinned is ModuleDir run inside the module in dir (a directory of the repository,
// e.g. test/providers/openstack), whose committed go.sum pins mod@version: the download is
// verified against that go.sum, for a module the checksum database does not know (it answers
// 404, so ModuleDir's download fails "verifying go.mod"). The hash is trusted on first use when
// the go.sum was written (docs/adr/028-delivery-by-infrastructure-machine.md); verification is
// never turned off. go mod download with an explicit version leaves go.mod and go.sum as they are.
func ModuleDirPinned(dir, mod, version string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return moduleDirFrom(filepath.Join(root, dir), mod, version)
}

// moduleDirFrom runs go mod download for mod@version in dir and returns the module's directory.
func moduleDirFrom(dir, mod, version string) (string, error) {
	cmd := exec.Command("go", "mod", "download", "-json", mod+"@"+version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	var info struct{ Dir, Error string }
	if err := json.Unmarshal(out, &info); err != nil || info.Error != "" || info.Dir == "" || runErr != nil {
		return "", fmt.Errorf("go mod download %s@%s in %s (the Go module proxy must be reachable): %v %s %s",
			mod, version, dir, runErr, info.Error, stderr.String())
	}
	return info.Dir, nil
}

// capiDirFromBuildInfo computes $GOMODCACHE/sigs.k8s.io/cluster-api@<version> from the build info
// of the running (test) binary, honouring a replace directive. Returns "" when it does not exist.
func capiDirFromBuildInfo() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, dep := range bi.Deps {
		if dep.Path != capiModule {
			continue
		}
		if dep.Replace != nil {
			if dep.Replace.Version == "" { // replaced by a local directory
				if st, err := os.Stat(dep.Replace.Path); err == nil && st.IsDir() {
					return dep.Replace.Path
				}
				return ""
			}
			dep = dep.Replace
		}
		modCache := goModCache()
		if modCache == "" || dep.Version == "" || dep.Version == "(devel)" {
			return ""
		}
		// Module cache paths escape upper-case letters; sigs.k8s.io/cluster-api has none.
		d := filepath.Join(modCache, filepath.FromSlash(dep.Path)+"@"+dep.Version)
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d
		}
		return ""
	}
	return ""
}

func goModCache() string {
	if d := os.Getenv("GOMODCACHE"); d != "" {
		return d
	}
	if gp := os.Getenv("GOPATH"); gp != "" {
		return filepath.Join(filepath.SplitList(gp)[0], "pkg", "mod")
	}
	if out, err := exec.Command("go", "env", "GOMODCACHE").Output(); err == nil {
		if d := strings.TrimSpace(string(out)); d != "" {
			return d
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, "go", "pkg", "mod")
	}
	return ""
}

// AssetsDir returns the directory with kube-apiserver and etcd: $KUBEBUILDER_ASSETS, else the
// output of `bash <repoRoot>/hack/envtest-assets.sh` (builds them once, then cached). A
// KUBEBUILDER_ASSETS without kube-apiserver is an error: `make test-unit` sets one, so that a
// unit test that starts an API server fails there.
func AssetsDir(repoRoot string) (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "kube-apiserver")); err != nil {
			return "", fmt.Errorf("testenv: KUBEBUILDER_ASSETS=%s has no kube-apiserver (%w): under `make test-unit` that means "+
				"a unit test started an API server; such a test belongs under test/integration (docs/adr/021-test-layers.md)", d, err)
		}
		return d, nil
	}
	script := filepath.Join(repoRoot, "hack", "envtest-assets.sh")
	cmd := exec.Command("bash", script)
	cmd.Dir = repoRoot
	cmd.Stderr = os.Stderr // build progress, only on a cold cache
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("testenv: KUBEBUILDER_ASSETS is unset and %s failed: %w", script, err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	d := strings.TrimSpace(lines[len(lines)-1])
	if d == "" {
		return "", fmt.Errorf("testenv: %s printed no directory", script)
	}
	return d, nil
}
