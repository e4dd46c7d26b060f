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

package ignition

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// fakeBinary is a stand-in for kubeadm or the kubelet: it answers the version question the
// bootstrap asks (kubeadm version -o short; kubelet --version) with version.
func fakeBinary(name, version string) []byte {
	answer := version
	if name == "kubelet" {
		answer = "Kubernetes " + version
	}
	return []byte("#!/bin/sh\n# fake " + name + "\necho '" + answer + "'\n")
}

// binariesStep is the bootstrap's binaries step as the renderer composes it (the header, the
// embedded functions, the call binariesInstall builds), then a marker line that only runs when
// the step succeeded. The functions install into the literal /opt/bin, and the call names the
// literal staging directory: a test cannot write there (nor should it), so both are replaced by
// directories under root. That is the only change to the text; an unshare'd mount namespace
// would keep the literal paths but needs user namespaces, which containers running the tests
// often do not allow.
func binariesStep(t *testing.T, root string, kubectl bool) string {
	t.Helper()
	inst, err := binariesInstall(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
		Binaries: &cabpiv1.BinariesSource{Kubectl: kubectl}}, "v1.34.4", nil)
	require.NoError(t, err)
	var b strings.Builder
	for _, name := range append([]string{"header.sh"}, inst.stepFiles...) {
		data, err := scripts.ReadFile("scripts/" + name)
		require.NoError(t, err)
		b.Write(data)
	}
	b.WriteString(inst.stepCall)
	b.WriteString("echo cabpi-step-done\n")
	text := b.String()
	binaries, err := scripts.ReadFile("scripts/kubernetes-binaries.sh")
	require.NoError(t, err)
	require.Contains(t, string(binaries), `"`+binDir+`/$name"`, "the functions install into /opt/bin")
	require.Contains(t, inst.stepCall, binariesStage+"/v1.34.4")
	return strings.NewReplacer(binDir, filepath.Join(root, "opt/bin"), binariesStage, filepath.Join(root, "opt/cabpi/kubernetes")).Replace(text)
}

// The binaries step on a real bash: kubeadm and the kubelet (and kubectl), which Ignition
// downloaded and checked against their pins (verification.hash: TestPinnedDownloadsApply), are
// installed 0755 and the kubelet enabled only when kubeadm and the kubelet say they are the
// Machine's version; otherwise the step fails (stopping the bootstrap before kubeadm), names
// what is wrong, and enables nothing.
func TestBinariesStepOnBash(t *testing.T) {
	// bash is the bootstrap's shell, on every node and every machine the project builds on.
	_, err := exec.LookPath("bash")
	require.NoError(t, err, "bash")
	// stage edits the staged files after they were written right.
	type stage func(t *testing.T, dir string)
	// versioned stages name reporting another version.
	versioned := func(name, version string) stage {
		return func(t *testing.T, dir string) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), fakeBinary(name, version), 0o644))
		}
	}
	cases := []struct {
		name    string
		kubectl bool
		edit    stage
		// wantErr are what the failure message says (user-facing); nil: the step succeeds.
		wantErr []string
		// installedOnFail: the binaries were installed before the step failed (the version check
		// runs the installed ones).
		installedOnFail bool
	}{
		{name: "kubeadm and the kubelet"},
		{name: "with kubectl", kubectl: true},
		{name: "kubeadm of another version", edit: versioned("kubeadm", "v1.34.3"),
			wantErr: []string{"found kubeadm v1.34.3 and kubelet v1.34.4, the Machine has v1.34.4"}, installedOnFail: true},
		{name: "kubelet of another version", edit: versioned("kubelet", "v1.35.0"),
			wantErr: []string{"the Machine has v1.34.4"}, installedOnFail: true},
		{name: "kubelet missing", edit: func(t *testing.T, dir string) { require.NoError(t, os.Remove(filepath.Join(dir, "kubelet"))) },
			wantErr: []string{"kubelet"}, installedOnFail: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			stageDir := filepath.Join(root, "opt/cabpi/kubernetes/v1.34.4")
			require.NoError(t, os.MkdirAll(stageDir, 0o755))
			names := []string{"kubeadm", "kubelet"}
			if tc.kubectl {
				names = append(names, "kubectl")
			}
			for _, n := range names {
				// As Ignition writes them: mode 0644, not executable.
				require.NoError(t, os.WriteFile(filepath.Join(stageDir, n), fakeBinary(n, "v1.34.4"), 0o644))
			}
			if tc.edit != nil {
				tc.edit(t, stageDir)
			}

			// systemctl records its arguments; nothing else on PATH is faked.
			fakeBin := filepath.Join(root, "fakebin")
			require.NoError(t, os.MkdirAll(fakeBin, 0o755))
			calls := filepath.Join(root, "systemctl.calls")
			require.NoError(t, os.WriteFile(filepath.Join(fakeBin, "systemctl"),
				[]byte("#!/bin/sh\necho \"$*\" >> '"+calls+"'\n"), 0o755))
			script := filepath.Join(root, "step.sh")
			require.NoError(t, os.WriteFile(script, []byte(binariesStep(t, root, tc.kubectl)), 0o700))

			cmd := exec.Command("bash", script)
			cmd.Env = []string{"PATH=" + fakeBin + ":/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()

			systemctl, readErr := os.ReadFile(calls)
			if readErr != nil {
				require.ErrorIs(t, readErr, os.ErrNotExist)
			}
			optBin := filepath.Join(root, "opt/bin")
			if tc.wantErr == nil {
				require.NoError(t, err, "stderr: %s", stderr.String())
				assert.Contains(t, stdout.String(), "cabpi-step-done")
				for _, n := range names {
					info, err := os.Stat(filepath.Join(optBin, n))
					require.NoError(t, err, n)
					assert.Equal(t, os.FileMode(0o755), info.Mode().Perm(), "mode of %s", n)
					staged, err := os.ReadFile(filepath.Join(stageDir, n))
					require.NoError(t, err)
					installed, err := os.ReadFile(filepath.Join(optBin, n))
					require.NoError(t, err)
					assert.Equal(t, staged, installed, n)
				}
				assert.Equal(t, "enable kubelet.service\n", string(systemctl))
				return
			}
			var exit *exec.ExitError
			require.ErrorAs(t, err, &exit, "the step fails: stdout %s", stdout.String())
			assert.NotContains(t, stdout.String(), "cabpi-step-done", "the bootstrap stops at the step")
			for _, want := range tc.wantErr {
				assert.Contains(t, stderr.String(), want)
			}
			assert.Empty(t, string(systemctl), "the kubelet is not enabled")
			if !tc.installedOnFail {
				entries, err := os.ReadDir(optBin)
				if err == nil {
					assert.Empty(t, entries, "nothing is installed when a binary is missing")
				} else {
					require.ErrorIs(t, err, os.ErrNotExist)
				}
			}
		})
	}
}
