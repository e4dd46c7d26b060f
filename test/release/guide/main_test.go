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

// Package guide_test keeps the user guide (docs/guide) true. It runs every command block of the
// guide marked runnable, in a temporary directory laid out like the repository (docs/examples,
// templates) with the cabpi binary built from this tree on PATH, and checks the exit status and
// the output the guide shows; it applies every example of docs/examples to an API server with
// cabpi's admission webhooks and checks it is admitted with the warnings the guide shows; it
// checks that the YAML the guide shows is in the examples, that every example is used by a
// command, that every condition reason has its troubleshooting entry and that relative links
// resolve. The markers are described in markdown_test.go and docs/guide/README.md.
package guide_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

var (
	env *testenv.Environment

	repoRoot string
	// binDir holds what the guide's commands call by name: cabpi (built from this tree),
	// clusterctl and ignition-apply (the ones make test builds).
	binDir string
	// demoBin is hack/demo, the program `make demo` runs after its set-up.
	demoBin string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if repoRoot, err = testenv.RepoRoot(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "cabpi-guide-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binDir = filepath.Join(tmp, "bin")
	demoBin = filepath.Join(tmp, "demo")
	if err := setUpBinaries(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			// Cluster API's kubeadm CRDs: the input examples of cabpi convert are KubeadmConfigTemplates.
			KubeadmCRDs: true,
			Webhooks:    true,
		},
		Keep:          []**testenv.Environment{&env},
		CabpiWebhooks: true,
	})
}

// setUpBinaries builds cabpi and the demo once and links the tools make test built.
func setUpBinaries() error {
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	for _, tool := range []struct{ env, name string }{
		{"CABPI_CLUSTERCTL", "clusterctl"},
		{"CABPI_IGNITION_APPLY", "ignition-apply"},
	} {
		path := os.Getenv(tool.env)
		if path == "" {
			return fmt.Errorf("%s is not set: run these tests with `make test`, which builds %s and exports it", tool.env, tool.name)
		}
		if st, err := os.Stat(path); err != nil || st.IsDir() {
			return fmt.Errorf("%s=%s is not a binary (%v): run these tests with `make test`", tool.env, path, err)
		}
		if err := os.Symlink(path, filepath.Join(binDir, tool.name)); err != nil {
			return err
		}
	}
	for _, b := range []struct{ out, pkg string }{
		{filepath.Join(binDir, "cabpi"), "."},
		{demoBin, "./hack/demo"},
	} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s: %w\n%s", b.pkg, err, out)
		}
	}
	return nil
}
