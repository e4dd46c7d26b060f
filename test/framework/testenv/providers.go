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
	"path/filepath"
	"strings"
)

// InfrastructureProvider is a Cluster API infrastructure provider the cloud flavors are written
// for, at the version hack/versions.env pins: the tests take its CRDs (and metadata.yaml) from
// its Go module, which the project does not import.
type InfrastructureProvider struct {
	// Name is clusterctl's name of the provider (infrastructure-<Name>).
	Name string
	// Module and Version are its Go module and the pinned version.
	Module, Version string
	// CRDPath is where the module keeps its CRDs, relative to the module's directory.
	CRDPath string
	// PinnedIn, when set, is the module of the repository (a directory relative to its root)
	// whose go.sum pins the provider's module, which the checksum database does not know: the
	// download is verified against that go.sum (ModuleDirPinned).
	PinnedIn string
}

// infrastructureProviders are the providers of hack/versions.env, by clusterctl name: the
// variable holding the version, the module, its CRD directory, and the repository's module
// whose go.sum pins it where the checksum database does not know it.
var infrastructureProviders = map[string]struct{ variable, module, crds, pinnedIn string }{
	"aws":   {"CAPA_VERSION", "sigs.k8s.io/cluster-api-provider-aws/v2", "config/crd/bases", ""},
	"azure": {"CAPZ_VERSION", "sigs.k8s.io/cluster-api-provider-azure", "config/crd/bases", ""},
	"gcp":   {"CAPG_VERSION", "sigs.k8s.io/cluster-api-provider-gcp", "config/crd/bases", ""},
	// CAPO v0.13.0 is served by the module proxy, but the checksum database answers 404 for it:
	// test/providers/openstack's go.sum pins it.
	"openstack": {"CAPO_VERSION", "sigs.k8s.io/cluster-api-provider-openstack", "config/crd/bases", "test/providers/openstack"},
	"vsphere":   {"CAPV_VERSION", "sigs.k8s.io/cluster-api-provider-vsphere", "config/default/crd/bases", ""},
}

// Infrastructure returns the provider called name (aws, azure, gcp, openstack, vsphere) at its
// pinned version.
func Infrastructure(name string) (InfrastructureProvider, error) {
	p, ok := infrastructureProviders[name]
	if !ok {
		return InfrastructureProvider{}, fmt.Errorf("testenv: no infrastructure provider %q in hack/versions.env", name)
	}
	versions, err := VersionsEnv()
	if err != nil {
		return InfrastructureProvider{}, err
	}
	v := versions[p.variable]
	if v == "" {
		return InfrastructureProvider{}, fmt.Errorf("testenv: hack/versions.env does not set %s", p.variable)
	}
	return InfrastructureProvider{Name: name, Module: p.module, Version: v, CRDPath: p.crds, PinnedIn: p.pinnedIn}, nil
}

// Dir downloads the provider's module (if needed), verified by the checksum database or by the
// go.sum of PinnedIn, and returns its directory.
func (p InfrastructureProvider) Dir() (string, error) {
	if p.PinnedIn != "" {
		return ModuleDirPinned(p.PinnedIn, p.Module, p.Version)
	}
	return ModuleDir(p.Module, p.Version)
}

// CRDFiles returns the files of the provider's CRDs named (e.g. "awsmachines"), whole paths in the
// module's directory: a suite installs only the kinds it uses.
func (p InfrastructureProvider) CRDFiles(resources ...string) ([]string, error) {
	dir, err := p.Dir()
	if err != nil {
		return nil, err
	}
	var files []string
	for _, r := range resources {
		f := filepath.Join(dir, p.CRDPath, "infrastructure.cluster.x-k8s.io_"+r+".yaml")
		if _, err := os.Stat(f); err != nil {
			return nil, fmt.Errorf("testenv: %s %s has no CRD for %s: %w", p.Module, p.Version, r, err)
		}
		files = append(files, f)
	}
	return files, nil
}

// VersionsEnv reads hack/versions.env, the one home of the versions the Makefile builds and the
// tests pin (KEY=VALUE lines; # comments).
func VersionsEnv() (map[string]string, error) {
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, "hack", "versions.env"))
	if err != nil {
		return nil, fmt.Errorf("testenv: %w", err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("testenv: hack/versions.env: %q is not KEY=VALUE", line)
		}
		vars[k] = v
	}
	return vars, sc.Err()
}
