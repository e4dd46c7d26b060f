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

// Package clusterctl_test runs the real clusterctl against a local provider repository built from
// this checkout (make release-manifests, make clusterctl-overrides) and server-side dry-run applies
// what it generates to an API server with the CRDs of Cluster API, CAPD, CAPA, CAPZ, CAPG, CAPV
// and cabpi, and cabpi's admission webhooks.
//
// Nothing is fetched from GitHub: providers are file:// repositories in a temporary directory,
// clusterctl runs with its version check off and with an unreachable HTTP(S) proxy. The
// infrastructure providers' CRDs and metadata come from their Go modules at the versions
// hack/versions.env pins (the Go module proxy serves them; they are not in go.mod).
package clusterctl_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	// providerVersion is the cabpi release the tests build (mk/release.mk RELEASE_VERSION).
	providerVersion = "v0.1.0"
	// capdModule holds CAPD; it is released with Cluster API, at Cluster API's version.
	capdModule = "sigs.k8s.io/cluster-api/test"
)

// cloudProviders are the infrastructure providers with cloud flavors, by clusterctl name.
var cloudProviders = []string{"aws", "azure", "gcp", "openstack", "vsphere"}

var (
	env *testenv.Environment

	clusterctlBin, kustomizeBin string

	repoRoot    string
	capiDir     string // sigs.k8s.io/cluster-api module
	capiVersion string // its version: CAPD's version too
	capdDir     string // sigs.k8s.io/cluster-api/test module
	goEnvFile   string // `go env GOENV`, kept for `make` run with a temporary XDG_CONFIG_HOME

	// infra are the cloud providers at their pinned versions, with their module directories.
	infra = map[string]infraModule{}
)

// infraModule is an infrastructure provider and where its module is.
type infraModule struct {
	testenv.InfrastructureProvider
	dir string
}

func (m infraModule) crdDir() string { return filepath.Join(m.dir, m.CRDPath) }

// ref is the provider as clusterctl's --infrastructure takes it: name:version.
func (m infraModule) ref() string { return m.Name + ":" + m.Version }

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	for _, v := range []struct {
		name string
		dst  *string
	}{{"CABPI_CLUSTERCTL", &clusterctlBin}, {"CABPI_KUSTOMIZE", &kustomizeBin}} {
		p := os.Getenv(v.name)
		if p == "" {
			fmt.Fprintf(os.Stderr, "%s is not set: run these tests with `make test`, which builds clusterctl "+
				"(hack/clusterctl.sh) and kustomize and exports CABPI_CLUSTERCTL and CABPI_KUSTOMIZE\n", v.name)
			return 1
		}
		if st, err := os.Stat(p); err != nil || st.IsDir() {
			fmt.Fprintf(os.Stderr, "%s=%s is not a binary (%v): run these tests with `make test`\n", v.name, p, err)
			return 1
		}
		*v.dst = p
	}

	var err error
	if repoRoot, err = testenv.RepoRoot(); err == nil {
		capiDir, err = testenv.CAPIModuleDir(repoRoot)
	}
	if err == nil {
		capiVersion, err = goOutput(repoRoot, "list", "-m", "-f", "{{.Version}}", "sigs.k8s.io/cluster-api")
	}
	if err == nil {
		goEnvFile, err = goOutput(repoRoot, "env", "GOENV")
	}
	if err == nil {
		capdDir, err = testenv.ModuleDir(capdModule, capiVersion)
	}
	for _, name := range cloudProviders {
		if err != nil {
			break
		}
		var p testenv.InfrastructureProvider
		if p, err = testenv.Infrastructure(name); err == nil {
			m := infraModule{InfrastructureProvider: p}
			m.dir, err = p.Dir()
			infra[name] = m
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	return testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			KubeadmCRDs:             true,
			KubeadmControlPlaneCRDs: true,
			AdditionalCRDPaths: append([]string{capdCRDDir()},
				infra["aws"].crdDir(), infra["azure"].crdDir(), infra["gcp"].crdDir(), infra["openstack"].crdDir(), infra["vsphere"].crdDir()),
			// Every generated object is admitted by cabpi's webhooks too.
			Webhooks: true,
		},
		Keep:          []**testenv.Environment{&env},
		CabpiWebhooks: true,
	})
}

func capdCRDDir() string {
	return filepath.Join(capdDir, "infrastructure", "docker", "config", "crd", "bases")
}

func goOutput(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}
