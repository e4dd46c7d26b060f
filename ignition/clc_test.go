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

package ignition_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootcheck"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// clcWorker is a flatcar worker with the Container Linux Config doc.
func clcWorker(doc string) ignition.Input {
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.ContainerLinuxConfig = doc
	return in
}

// A Container Linux Config is refused where a Butane snippet would be, and where Ignition 3
// cannot say what it said, with the field containerLinuxConfig and, where the mistake is in the
// document, its line and column.
func TestRenderRejectsBadContainerLinuxConfig(t *testing.T) {
	cases := []struct {
		name         string
		in           ignition.Input
		kind         ignition.ErrorKind
		line, column int
		contains     string
	}{
		{"on Fedora CoreOS", func() ignition.Input {
			in := joinInput(cabpiv1.VariantFCOS, "v1.34.0")
			in.ContainerLinuxConfig = flatcarCLC
			return in
		}(), ignition.ErrVariantMismatch, 0, 0, "fcos nodes never read it: write the snippet in Butane"},
		{"with a Butane snippet too", func() ignition.Input {
			in := clcWorker(flatcarCLC)
			in.Butane = flatcarSnippet
			return in
		}(), ignition.ErrInvalidInput, 0, 0, "set butane or containerLinuxConfig, not both"},
		{"not YAML", clcWorker("storage:\n  files: [\n"), ignition.ErrInvalidContainerLinuxConfig, 2, 0, "does not transpile"},
		{"a mode that is not a number", clcWorker("storage:\n  files:\n    - path: /etc/x\n      mode: rw\n"),
			ignition.ErrInvalidContainerLinuxConfig, 4, 0, "cannot unmarshal"},
		{"a relative path", clcWorker("storage:\n  files:\n    - path: etc/x\n      mode: 0644\n"),
			ignition.ErrInvalidContainerLinuxConfig, 3, 13, "path not absolute"},
		{"a local file", clcWorker("storage:\n  files:\n    - path: /etc/x\n      mode: 0644\n      contents:\n        local: x.conf\n"),
			ignition.ErrInvalidContainerLinuxConfig, 6, 9, "reads its contents from a local file"},
		{"an alias the transpiler cannot walk", clcWorker("x: &r\n  remote:\n    url: https://example.com/x\nstorage:\n  files:\n" +
			"    - path: /etc/x\n      mode: 0644\n      contents: *r\n"),
			ignition.ErrInvalidContainerLinuxConfig, 8, 17, "it does not follow YAML aliases"},
		{"dynamic data without a platform", clcWorker("etcd:\n  advertise_client_urls: http://{PRIVATE_IPV4}:2379\n"),
			ignition.ErrInvalidContainerLinuxConfig, 0, 0, "platform must be specified"},
		{"an unknown key under strict", func() ignition.Input {
			in := clcWorker("storage:\n  filez: []\n")
			in.ContainerLinuxConfigStrict = true
			return in
		}(), ignition.ErrInvalidContainerLinuxConfig, 2, 3, "strict"},
		{"a file without mode under strict", func() ignition.Input {
			in := clcWorker("storage:\n  files:\n    - path: /etc/x\n      contents:\n        inline: x\n")
			in.ContainerLinuxConfigStrict = true
			return in
		}(), ignition.ErrInvalidContainerLinuxConfig, 3, 7, "mode unspecified"},
		{"a file from the OEM partition", clcWorker("storage:\n  files:\n    - path: /etc/x\n      mode: 0644\n      contents:\n        remote:\n          url: oem:///x\n"),
			ignition.ErrInvalidContainerLinuxConfig, 7, 11, "no oem:// scheme"},
		{"a file on a filesystem Ignition 2 mounted to write it", clcWorker(`storage:
  filesystems:
    - name: oem
      mount:
        device: /dev/disk/by-label/OEM
        format: btrfs
  files:
    - filesystem: oem
      path: /grub.cfg
      mode: 0644
      contents:
        inline: set linux_append="console=ttyS0"
`), ignition.ErrInvalidContainerLinuxConfig, 8, 7, `filesystem "oem", which Ignition 2 mounted only to write it`},
		{"a file written twice", clcWorker("storage:\n  files:\n    - path: /etc/x\n      mode: 0644\n" +
			"    - path: /etc/x\n      mode: 0600\n"),
			ignition.ErrInvalidContainerLinuxConfig, 5, 7, "file /etc/x is written again"},
		{"the docker section and a docker.service disabled", clcWorker("docker:\n  flags: [--debug]\nsystemd:\n  units:\n    - name: docker.service\n      enabled: false\n"),
			ignition.ErrInvalidContainerLinuxConfig, 5, 7, "one entry enables it, the other disables it"},
		{"a unit whose contents do not parse", clcWorker("systemd:\n  units:\n    - name: x.service\n      contents: \"[Service\\n\"\n"),
			ignition.ErrInvalidContainerLinuxConfig, 4, 17, "invalid unit content"},
		{"the kubeadm configuration", clcWorker("storage:\n  files:\n    - path: /etc/kubeadm.yml\n      mode: 0600\n      contents:\n        inline: x\n"),
			ignition.ErrOwnedPathConflict, 0, 0, "the Container Linux Config writes a file at /etc/kubeadm.yml"},
		{"kubeadm.service disabled", clcWorker("systemd:\n  units:\n    - name: kubeadm.service\n      enabled: false\n"),
			ignition.ErrOwnedPathConflict, 0, 0, "the Container Linux Config disables unit kubeadm.service"},
		{"a drop-in running kubeadm as another user", clcWorker("systemd:\n  units:\n    - name: kubeadm.service\n      dropins:\n" +
			"        - name: 10-user.conf\n          contents: \"[Service]\\nUser=core\\n\"\n"),
			ignition.ErrOwnedPathConflict, 0, 0, "sets User=core in [Service]"},
		{"a networkd drop-in reaching a drop-in of kubeadm.service", clcWorker("networkd:\n  units:\n    - name: x.network\n      dropins:\n" +
			"        - name: ../../system/kubeadm.service.d/10-x.conf\n          contents: \"[Service]\\nUser=core\\n\"\n"),
			ignition.ErrOwnedPathConflict, 0, 0, "/etc/systemd/system/kubeadm.service.d/10-x.conf for kubeadm.service sets User=core"},
		{"a preset disabling kubeadm.service", clcWorker("storage:\n  files:\n    - path: /etc/systemd/system-preset/10-x.preset\n      mode: 0644\n" +
			"      contents:\n        inline: \"disable kubeadm.service\\n\"\n"),
			ignition.ErrOwnedPathConflict, 0, 0, "disables kubeadm.service"},
		{"a remote config replacing the whole", clcWorker("ignition:\n  config:\n    replace:\n      source: https://example.com/x.ign\n"),
			ignition.ErrInvalidContainerLinuxConfig, 0, 0, "ignition.config.replace"},
		{"a remote config appended", clcWorker("ignition:\n  config:\n    append:\n      - source: https://example.com/x.ign\n"),
			ignition.ErrInvalidContainerLinuxConfig, 0, 0, "ignition.config.merge"},
		{"a file of spec.files", func() ignition.Input {
			in := clcWorker("storage:\n  files:\n    - path: /etc/cabpi/user.conf\n      mode: 0644\n")
			in.Files = []ignition.File{{Path: "/etc/cabpi/user.conf", Content: []byte("x")}}
			return in
		}(), ignition.ErrInvalidInput, 0, 0, "the Container Linux Config writes /etc/cabpi/user.conf, which files[0] writes too"},
		{"a file inside a file of spec.files", func() ignition.Input {
			in := clcWorker("storage:\n  files:\n    - path: /etc/cabpi/user.conf/x\n      mode: 0644\n")
			in.Files = []ignition.File{{Path: "/etc/cabpi/user.conf", Content: []byte("x")}}
			return in
		}(), ignition.ErrInvalidInput, 0, 0, "written by the Container Linux Config"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ignition.Render(tc.in)
			var ierr *ignition.Error
			require.ErrorAs(t, err, &ierr)
			assert.Nil(t, out.Data)
			assert.Equal(t, tc.kind, ierr.Kind, ierr.Error())
			assert.Equal(t, ignition.At(ignition.PartContainerLinuxConfig), ierr.Place)
			assert.Equal(t, tc.line, ierr.Line, ierr.Error())
			assert.Equal(t, tc.column, ierr.Column, ierr.Error())
			assert.Contains(t, ierr.Message, tc.contains)
		})
	}
}

// The transpiler's warnings and the translation's notes reach the output, located in the
// document, from every render (Render and the join's Prepare/WithJoinToken alike); under strict
// they are errors.
func TestContainerLinuxConfigWarnings(t *testing.T) {
	const doc = `storage:
  filez: []
  filesystems:
    - name: data
      mount:
        device: /dev/sdb1
        format: ext4
        create:
          options: [-m, "0"]
`
	in := clcWorker(doc)
	out, err := ignition.Render(in)
	require.NoError(t, err)
	want := []ignition.Warning{
		{Place: ignition.At(ignition.PartContainerLinuxConfig), Line: 2, Column: 3, Message: "Config has unrecognized key: filez"},
		{Place: ignition.At(ignition.PartContainerLinuxConfig), Line: 4, Column: 7, Message: "the create object has been deprecated in favor of mount-level options"},
	}
	require.Len(t, out.Warnings, 3, "%v", out.Warnings)
	assert.Equal(t, want, out.Warnings[:2], "the transpiler's warnings, each once")
	note := out.Warnings[2]
	assert.Equal(t, []any{ignition.At(ignition.PartContainerLinuxConfig), 8, 9}, []any{note.Place, note.Line, note.Column})
	assert.Contains(t, note.Message, "Ignition 3 reuses a filesystem of the same format")
	assert.True(t, strings.HasPrefix(note.String(), "containerLinuxConfig: line 8, column 9: filesystem data: "), note.String())

	prepared, err := ignition.Prepare(in)
	require.NoError(t, err)
	assert.Equal(t, out.Warnings, prepared.Output().Warnings)
	withToken, err := prepared.WithJoinToken("abcdef.0123456789abcdef")
	require.NoError(t, err)
	assert.Equal(t, out.Warnings, withToken.Warnings)

	in.ContainerLinuxConfigStrict = true
	_, err = ignition.Render(in)
	var ierr *ignition.Error
	require.ErrorAs(t, err, &ierr)
	assert.Equal(t, ignition.ErrInvalidContainerLinuxConfig, ierr.Kind)
	assert.Equal(t, []int{2, 3}, []int{ierr.Line, ierr.Column})
	assert.Contains(t, ierr.Message, "warnings are errors in strict mode: line 2, column 3: Config has unrecognized key: filez")

	clean, err := ignition.Render(clcWorker(flatcarCLC))
	require.NoError(t, err)
	assert.Empty(t, clean.Warnings)
}

// The real Ignition engine writes what a Container Linux Config said, as Ignition 2 wrote it:
// defaults made explicit, a file written and appended to, networkd units as files, files on a
// filesystem mounted under /sysroot in their place, links, units enabled or masked, and the
// transpiler's docker section merged with the user's docker.service.
func TestApplyContainerLinuxConfig(t *testing.T) {
	const doc = `storage:
  filesystems:
    - name: sysroot-var
      path: /sysroot/var
  files:
    - path: /etc/cabpi/owned
      mode: 0640
      user: {id: 500}
      group: {id: 500}
      contents:
        inline: owned
    - path: /etc/cabpi/log.conf
      mode: 0600
      contents:
        inline: "a\n"
    - path: /etc/cabpi/log.conf
      append: true
      mode: 0640
      contents:
        inline: "b\n"
    - path: /lib/cabpi/data
      filesystem: sysroot-var
      mode: 0644
      contents:
        inline: on var
  directories:
    - path: /opt/cabpi
      mode: 0750
  links:
    - path: /etc/cabpi/soft
      target: /etc/cabpi/owned
    - path: /lib/cabpi/hard
      filesystem: sysroot-var
      target: /lib/cabpi/data
      hard: true
systemd:
  units:
    - name: cabpi-clc.service
      enable: true
      contents: |
        [Service]
        ExecStart=/bin/true
        [Install]
        WantedBy=multi-user.target
    - name: update-engine.service
      mask: true
    - name: docker.service
      dropins:
        - name: 10-proxy.conf
          contents: |
            [Service]
            Environment=HTTPS_PROXY=http://proxy.example:3128
networkd:
  units:
    - name: 00-eth0.network
      contents: |
        [Match]
        Name=eth0
      dropins:
        - name: 10-dns.conf
          contents: |
            [Network]
            DNS=10.0.0.53
docker:
  flags: [--log-level=warn]
`
	out, err := ignition.Render(clcWorker(doc))
	require.NoError(t, err)
	_, rpt, err := ignconfig.Parse(out.Data)
	require.NoError(t, err, rpt.String())
	root := ignitionapply.Apply(t, out.Data)

	assert.Equal(t, "owned", readFile(t, root, "/etc/cabpi/owned", 0o640))
	assert.Equal(t, "a\nb\n", readFile(t, root, "/etc/cabpi/log.conf", 0o640), "written, then appended to with the later mode")
	assert.Equal(t, "on var", readFile(t, root, "/var/lib/cabpi/data", 0o644))
	info, err := os.Stat(filepath.Join(root, "opt/cabpi"))
	require.NoError(t, err)
	assert.True(t, info.IsDir())
	assert.Equal(t, os.FileMode(0o750), info.Mode().Perm())
	target, err := os.Readlink(filepath.Join(root, "etc/cabpi/soft"))
	require.NoError(t, err)
	assert.Equal(t, "/etc/cabpi/owned", target)
	hard, err := os.Stat(filepath.Join(root, "var/lib/cabpi/hard"))
	require.NoError(t, err)
	data, err := os.Stat(filepath.Join(root, "var/lib/cabpi/data"))
	require.NoError(t, err)
	assert.True(t, os.SameFile(hard, data), "the hard link's target moved with its filesystem")

	assert.Equal(t, "[Match]\nName=eth0\n", readFile(t, root, "/etc/systemd/network/00-eth0.network", 0o644))
	assert.Equal(t, "[Network]\nDNS=10.0.0.53\n", readFile(t, root, "/etc/systemd/network/00-eth0.network.d/10-dns.conf", 0o644))
	assert.Contains(t, readFile(t, root, "/etc/systemd/system/cabpi-clc.service", 0o644), "ExecStart=/bin/true")
	assert.True(t, ignitionapply.UnitEnabled(t, root, "cabpi-clc.service"))
	masked, err := os.Readlink(filepath.Join(root, "etc/systemd/system/update-engine.service"))
	require.NoError(t, err)
	assert.Equal(t, "/dev/null", masked)
	assert.True(t, ignitionapply.UnitEnabled(t, root, "docker.service"), "the docker section enables docker.service")
	assert.Contains(t, readFile(t, root, "/etc/systemd/system/docker.service.d/20-clct-docker.conf", 0o644), "DOCKER_OPTS=--log-level=warn")
	assert.Contains(t, readFile(t, root, "/etc/systemd/system/docker.service.d/10-proxy.conf", 0o644), "HTTPS_PROXY=")
	assert.True(t, ignitionapply.UnitEnabled(t, root, ignition.KubeadmUnitName))
}

// A Container Linux Config works as a Butane snippet does: its unit and its drop-in for
// kubeadm.service are valid and read by systemd, kubeadm runs once, and the sentinel means it
// succeeded.
func TestBootWithContainerLinuxConfig(t *testing.T) {
	const doc = `systemd:
  units:
    - name: cabpi-clc.service
      enabled: true
      contents: |
        [Service]
        ExecStart=/bin/true
        [Install]
        WantedBy=multi-user.target
    - name: kubeadm.service
      dropins:
        - name: 10-env.conf
          contents: |
            [Unit]
            After=cabpi-clc.service
            [Service]
            Environment="CABPI_CLC_DROPIN=from the Container Linux Config"
`
	out, err := ignition.Render(clcWorker(doc))
	require.NoError(t, err)
	root, u := appliedNode(t, out.Data, "cabpi-clc.service")
	assert.Contains(t, u.Values("Service", "Environment"), `"CABPI_CLC_DROPIN=from the Container Linux Config"`)
	assert.Contains(t, u.Words("Unit", "After"), "cabpi-clc.service")
	ok := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/opt/bin"})
	require.Equal(t, 0, ok.ExitCode, ok.Output)
	require.Len(t, ok.KubeadmCalls, 1)
	assertKubeadmCall(t, "worker", ok.KubeadmCalls[0])
	assert.True(t, ok.SentinelExists)

	failed := bootcheck.RunScript(t, ignitionapply.Apply(t, out.Data), bootcheck.ScriptOptions{KubeadmDir: "/opt/bin", KubeadmExit: 1})
	assert.NotEqual(t, 0, failed.ExitCode)
	assert.False(t, failed.SentinelExists)
}
