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

package bootcheck

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nodeRoot writes files (node path → content) into a new root, as ignition-apply would.
func nodeRoot(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		mode := os.FileMode(0o644)
		if filepath.Ext(name) == ".sh" {
			mode = 0o755
		}
		require.NoError(t, writeFile(filepath.Join(root, name), content, mode))
	}
	return root
}

const goodUnit = "[Unit]\nRequires=coreos-metadata.service\nAfter=coreos-metadata.service\n" +
	"[Service]\nType=oneshot\nExecStart=/bin/bash /etc/kubeadm.sh\n[Install]\nWantedBy=multi-user.target\n"

// The unit file comes first, then its drop-ins in the order systemd applies them (by file name),
// each read by the parser; values add up in that order.
func TestReadUnit(t *testing.T) {
	root := nodeRoot(t, map[string]string{
		"/etc/systemd/system/kubeadm.service":             goodUnit,
		"/etc/systemd/system/kubeadm.service.d/20-b.conf": "[Service]\nEnvironment=B=2\n",
		"/etc/systemd/system/kubeadm.service.d/10-a.conf": "[Unit]\nAfter=a.service b.service\n[Service]\nEnvironment=A=1\n",
		"/etc/systemd/system/other.service":               "[Service]\nExecStart=/bin/true\n",
	})
	u := ReadUnit(t, root, "kubeadm.service")
	var paths []string
	for _, f := range u.Files {
		paths = append(paths, f.Path)
	}
	assert.Equal(t, []string{"/etc/systemd/system/kubeadm.service",
		"/etc/systemd/system/kubeadm.service.d/10-a.conf", "/etc/systemd/system/kubeadm.service.d/20-b.conf"}, paths)
	assert.Equal(t, []string{"/bin/bash /etc/kubeadm.sh"}, u.Values("Service", "ExecStart"))
	assert.Equal(t, []string{"A=1", "B=2"}, u.Values("Service", "Environment"))
	assert.Equal(t, []string{"coreos-metadata.service", "a.service", "b.service"}, u.Words("Unit", "After"))

	_, err := readUnit(root, "missing.service")
	assert.Error(t, err, "a unit the config did not write")
}

// The real systemd-analyze verify accepts a unit whose dependencies the image has, and refuses a
// setting it does not know, a command that is not a path, and a dependency nothing provides.
func TestVerify(t *testing.T) {
	unitPath := "/etc/systemd/system/kubeadm.service"
	require.NoError(t, verify(t.TempDir(), nodeRoot(t, map[string]string{unitPath: goodUnit}), "kubeadm.service"))

	for name, files := range map[string]map[string]string{
		"unknown setting in a drop-in": {unitPath: goodUnit, unitPath + ".d/10-x.conf": "[Service]\nExecStartt=/bin/true\n"},
		"relative command":             {unitPath: "[Service]\nType=oneshot\nExecStart=bin/bash /etc/kubeadm.sh\n"},
		"missing dependency":           {unitPath: "[Unit]\nRequires=nothing-provides-this.service\n[Service]\nExecStart=/bin/true\n"},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Error(t, verify(t.TempDir(), nodeRoot(t, files), "kubeadm.service"))
		})
	}
}

// The first boot enables what a preset line names, and nothing else (the images end their
// presets with "disable *").
func TestEnabled(t *testing.T) {
	root := nodeRoot(t, map[string]string{
		"/etc/systemd/system/kubeadm.service":           goodUnit,
		"/etc/systemd/system/other.service":             "[Service]\nExecStart=/bin/true\n[Install]\nWantedBy=multi-user.target\n",
		"/etc/systemd/system-preset/20-ignition.preset": "enable kubeadm.service\n",
	})
	assert.True(t, Enabled(t, root, "kubeadm.service"))
	assert.False(t, Enabled(t, root, "other.service"))
}

// The script runs on bash with its node paths moved below the root; the stub records its calls
// with the node's paths, and the sentinel and the exit status are the script's.
func TestRunScript(t *testing.T) {
	const script = "#!/bin/bash\nset -euo pipefail\nexport PATH=\"${PATH:+${PATH}:}/opt/bin\"\n" +
		"test -e /run/metadata/flatcar\nprintf '%s' \"$(</proc/sys/kernel/hostname)\" > /run/seen-hostname\n" +
		"rm -rf /run/cluster-api/bootstrap-success.complete\nkubeadm join --config /etc/kubeadm.yml\n" +
		"mkdir -p /run/cluster-api\ntouch /run/cluster-api/bootstrap-success.complete\nrm -f /etc/kubeadm.yml\n"
	files := map[string]string{ScriptPath: script, ConfigPath: "kind: JoinConfiguration\n"}
	opts := func(dir string, exit int) ScriptOptions {
		return ScriptOptions{KubeadmDir: dir, KubeadmExit: exit, Hostname: "node-1",
			RunFiles: map[string]string{"/run/metadata/flatcar": "X=1\n", SentinelPath: "left by another unit"}}
	}
	for _, dir := range []string{"/opt/bin", "/usr/bin"} {
		t.Run(dir, func(t *testing.T) {
			root := nodeRoot(t, files)
			s := RunScript(t, root, opts(dir, 0))
			require.Equal(t, 0, s.ExitCode, s.Output)
			require.Len(t, s.KubeadmCalls, 1)
			assert.Equal(t, dir+"/kubeadm", s.KubeadmCalls[0].Path)
			assert.Equal(t, []string{"join", "--config", ConfigPath}, s.KubeadmCalls[0].Args)
			assert.Equal(t, "kind: JoinConfiguration\n", s.KubeadmCalls[0].Config)
			assert.False(t, s.KubeadmCalls[0].SentinelExisted)
			assert.True(t, s.SentinelExists)
			assert.NoFileExists(t, filepath.Join(root, ConfigPath))
			hostname, err := os.ReadFile(filepath.Join(root, "run/seen-hostname"))
			require.NoError(t, err)
			assert.Equal(t, "node-1", string(hostname))

			root = nodeRoot(t, files)
			s = RunScript(t, root, opts(dir, 1))
			assert.Equal(t, 1, s.ExitCode)
			assert.Len(t, s.KubeadmCalls, 1)
			assert.False(t, s.SentinelExists)
			assert.FileExists(t, filepath.Join(root, ConfigPath))
		})
	}

	t.Run("refused", func(t *testing.T) {
		root := nodeRoot(t, files)
		RunScript(t, root, opts("/opt/bin", 0))
		_, err := runScript(t.TempDir(), root, opts("/opt/bin", 0))
		assert.ErrorContains(t, err, "exists before the boot", "a root booted once")

		_, err = runScript(t.TempDir(), nodeRoot(t, map[string]string{ScriptPath: script, "/usr/bin/kubeadm": "x"}), opts("/opt/bin", 0))
		assert.ErrorContains(t, err, "the stub must be the only one")

		_, err = runScript(t.TempDir(), nodeRoot(t, map[string]string{ScriptPath: script + "cabpi_check_kubernetes v1\n"}), opts("/opt/bin", 0))
		assert.ErrorContains(t, err, "Kubernetes source step")
	})
}
