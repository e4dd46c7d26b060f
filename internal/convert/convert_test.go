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

package convert

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// config wraps a KubeadmConfigSpec (YAML, indented by two) into a v1beta2 KubeadmConfig.
func config(spec string) string {
	return "apiVersion: bootstrap.cluster.x-k8s.io/v1beta2\nkind: KubeadmConfig\nmetadata:\n  name: c\n  namespace: ns\nspec:\n" + spec
}

func convertOne(t *testing.T, input string) (*cabpiv1.IgnitionConfigSpec, []string) {
	t.Helper()
	res, err := Convert([]byte(input))
	require.NoError(t, err)
	require.Len(t, res.Converted, 1)
	var lines []string
	for _, f := range res.Findings {
		lines = append(lines, f.String())
	}
	return res.Converted[0].Spec, lines
}

// lineFor returns the finding line about path of KubeadmConfig ns/c, or "".
func lineFor(lines []string, path string) string {
	for _, l := range lines {
		if strings.Contains(l, "KubeadmConfig ns/c: "+path+": ") {
			return l
		}
	}
	return ""
}

func TestConvertFields(t *testing.T) {
	cases := map[string]struct {
		spec  string
		check func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string)
	}{
		"cloud-init locks a password unless lockPassword is false; groups become a list": {
			spec: "  users:\n  - name: a\n    passwd: $6$x\n    groups: 'docker, wheel,,docker'\n  - name: b\n    lockPassword: true\n",
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Equal(t, []string{"docker", "wheel"}, spec.Users[0].Groups)
				assert.Equal(t, "$6$x", spec.Users[0].PasswordHash)
				assert.Equal(t, "KubeadmConfig ns/c: spec.users[0].lockPassword: the password is locked in the source (lockPassword unset or true); Ignition cannot lock a password it sets, so it will work on the console: remove passwd/passwdFrom to keep password login off", lineFor(lines, "spec.users[0].lockPassword"))
				assert.Empty(t, lineFor(lines, "spec.users[1].lockPassword"), "nothing to lock without a password")
			},
		},
		"CABPK's Ignition did not lock passwords": {
			spec: "  format: ignition\n  users:\n  - name: a\n    passwdFrom: {secret: {name: s, key: k}}\n",
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Equal(t, &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "s", Key: "k"}}, spec.Users[0].PasswordHashFrom)
				assert.Empty(t, lines)
			},
		},
		"sudo at a path spec.files writes already": {
			spec: "  format: ignition\n  files:\n  - {path: /etc/sudoers.d/a, content: x}\n  users:\n  - {name: a, sudo: ALL=(ALL) ALL}\n",
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				require.Len(t, spec.Files, 1)
				assert.Equal(t, "x", spec.Files[0].Content)
				assert.Contains(t, lineFor(lines, "spec.users[0].sudo"), "files[0] writes /etc/sudoers.d/a already")
			},
		},
		"partitions: percentages, MBR, aliases; filesystems: partition numbers, auto, formats": {
			spec: `  format: ignition
  diskSetup:
    partitions:
    - {device: /dev/sdb, diskLayout: [{percentage: 50}, {percentage: 50}]}
    - {device: /dev/nvme0n1, layout: true, tableType: mbr}
    - {device: /dev/disk/by-id/data, diskLayout: [{percentage: 100, partitionType: LinuxSwap}]}
    - {device: ephemeral0, layout: true}
    filesystems:
    - {device: /dev/nvme0n1, partition: "1", filesystem: ext4, label: data}
    - {device: /dev/disk/by-id/data, partition: "1", filesystem: swap, label: None}
    - {device: /dev/sdc, partition: auto, filesystem: ext4}
    - {device: /dev/sdd, filesystem: ntfs}
`,
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Contains(t, lineFor(lines, "spec.diskSetup.partitions[0].diskLayout"), "not in percent of the disk")
				assert.Contains(t, lineFor(lines, "spec.diskSetup.partitions[1].tableType"), "GPT partition tables only")
				assert.Contains(t, lineFor(lines, "spec.diskSetup.partitions[3].device"), "cloud-init device alias")
				assert.Contains(t, lineFor(lines, "spec.diskSetup.filesystems[2].partition"), "not created")
				assert.Contains(t, lineFor(lines, "spec.diskSetup.filesystems[3].filesystem"), `"ntfs"`)
				doc := spec.Butane.Inline
				assert.NotContains(t, doc, "/dev/sdb\n")
				assert.Contains(t, doc, "device: /dev/nvme0n1p1\n")
				assert.Contains(t, doc, "device: /dev/disk/by-id/data-part1\n")
				assert.Contains(t, doc, "type_guid: 0657FD6D-A4AB-43C4-84E5-0933C84B4F4F")
				assert.NotContains(t, doc, "label: None")
				assert.NotContains(t, doc, "/dev/sdc")
			},
		},
		"cloud-init mounts: type, options, dump and pass; unknown and swap mounts": {
			spec: `  diskSetup:
    filesystems:
    - {device: /dev/sdb, filesystem: xfs, label: data}
  mounts:
  - [LABEL=data, /data, xfs, "defaults,noatime", "0", "2"]
  - [/dev/sdz, /other]
  - [swap, none, swap, sw]
`,
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Contains(t, spec.Butane.Inline, "mount_options:\n        - noatime\n      path: /data\n")
				assert.Contains(t, lineFor(lines, "spec.mounts[0]"), "dump and fsck pass (0, 2)")
				assert.Contains(t, lineFor(lines, "spec.mounts[1]"), `"/dev/sdz" names no filesystem`)
				assert.Contains(t, lineFor(lines, "spec.mounts[2]"), `mount point "none" is not a path`)
			},
		},
		"CABPK's Ignition mounts: label, mount point, options": {
			spec: "  format: ignition\n  diskSetup:\n    filesystems:\n    - {device: /dev/sdb, filesystem: ext4, label: etcd}\n  mounts:\n  - [etcd, /var/lib/etcd, noatime, nodev]\n",
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Contains(t, spec.Butane.Inline, "mount_options:\n        - noatime\n        - nodev\n      path: /var/lib/etcd\n")
				assert.Empty(t, lines)
			},
		},
		"ntp disabled is nothing; servers without enabled under CABPK's Ignition get a note": {
			spec: "  format: ignition\n  ntp: {servers: [a.example, b.example]}\n",
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Contains(t, spec.Butane.Inline, "NTP=a.example b.example\n")
				assert.Contains(t, spec.Butane.Inline, "name: systemd-timesyncd.service")
				assert.True(t, strings.HasPrefix(lineFor(lines, "spec.ntp.enabled"), "note: "))
			},
		},
		"ntp enabled false": {
			spec: "  format: ignition\n  ntp: {servers: [a.example], enabled: false}\n",
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Empty(t, spec.Butane.Inline)
				assert.Empty(t, lines)
			},
		},
		"generated settings merge into the Container Linux Config": {
			spec: "  format: ignition\n  ntp: {servers: [a.example], enabled: true}\n  ignition:\n    containerLinuxConfig:\n      strict: true\n      additionalConfig: |\n        # mine\n        systemd:\n          units:\n          - name: x.service\n            enabled: true\n",
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Empty(t, spec.Butane.Inline, "set butane or containerLinuxConfig, not both")
				assert.True(t, spec.ContainerLinuxConfig.Strict)
				clc := spec.ContainerLinuxConfig.Inline
				assert.Contains(t, clc, "# mine")
				assert.Contains(t, clc, "- name: x.service\n      enabled: true\n    - name: systemd-timesyncd.service\n      enabled: true\n")
				assert.Contains(t, clc, "filesystem: root\n      path: /etc/systemd/timesyncd.conf.d/10-cluster-api-ntp.conf")
				assert.Empty(t, lines)
			},
		},
		"file templates, boot commands, inactive users, a second file at a path": {
			spec: "  format: ignition\n  bootCommands: [echo hi]\n  files:\n  - {path: /etc/a, content: '{{ .controlPlane.version }}', contentFormat: Template}\n  - {path: /etc/a, content: b}\n  users:\n  - {name: a, inactive: true}\n",
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, lines []string) {
				assert.Contains(t, lineFor(lines, "spec.files[0].contentFormat"), "does not render file templates")
				assert.Contains(t, lineFor(lines, "spec.files[1]"), "a second file at /etc/a")
				assert.Contains(t, lineFor(lines, "spec.bootCommands[0]"), "not carried")
				assert.Contains(t, lineFor(lines, "spec.users[0].inactive"), "no account expiry")
				assert.Empty(t, spec.PreKubeadmCommands)
				require.Len(t, spec.Files, 1)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec, lines := convertOne(t, config(tc.spec))
			tc.check(t, spec, lines)
		})
	}
}

// The converted object keeps names, labels and annotations, not what the API server set, nor
// kubectl's and Cluster API's records of the source.
func TestConvertMetadata(t *testing.T) {
	res, err := Convert([]byte(`apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfig
metadata:
  name: c
  namespace: ns
  uid: 0b6c0e5e-0000-0000-0000-000000000000
  resourceVersion: "42"
  labels: {cluster.x-k8s.io/cluster-name: one}
  annotations:
    kubectl.kubernetes.io/last-applied-configuration: "{}"
    cluster.x-k8s.io/conversion-data: "{}"
    team: a
  ownerReferences:
  - {apiVersion: cluster.x-k8s.io/v1beta2, kind: Machine, name: m, uid: 0b6c0e5e-0000-0000-0000-000000000001}
spec:
  format: ignition
status:
  dataSecretName: c
`))
	require.NoError(t, err)
	var out cabpiv1.IgnitionConfig
	require.NoError(t, yaml.UnmarshalStrict(res.Output, &out))
	assert.Equal(t, "c", out.Name)
	assert.Equal(t, "ns", out.Namespace)
	assert.Equal(t, map[string]string{"cluster.x-k8s.io/cluster-name": "one"}, out.Labels)
	assert.Equal(t, map[string]string{"team": "a"}, out.Annotations)
	assert.Empty(t, out.UID)
	assert.Empty(t, out.ResourceVersion)
	assert.Empty(t, out.OwnerReferences)
	assert.Empty(t, out.Status)
	assert.NotContains(t, string(res.Output), "status")
}

func TestConvertRefusesWhatItCannotRead(t *testing.T) {
	for name, tc := range map[string]struct{ input, want string }{
		"an old API version": {"apiVersion: bootstrap.cluster.x-k8s.io/v1alpha4\nkind: KubeadmConfig\nmetadata: {name: c}\n", "v1alpha4 is not supported"},
		"not YAML":           {"kind: [\n", "document 1: not YAML"},
		"an unknown field":   {config("  formatt: ignition\n"), `unknown field "formatt"`},
		"a renderer refusal": {config("  format: ignition\n  files:\n  - {path: /etc/kubeadm.sh, content: x}\n"), "KubeadmConfig ns/c: the converted config does not render"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Convert([]byte(tc.input))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// Other documents pass through byte for byte, in order, comments included.
func TestConvertPassesOtherDocumentsThrough(t *testing.T) {
	other := "# a comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x # why\ndata: {a: \"1\"}\n"
	input := other + "---\n" + config("  format: ignition\n") + "---\n" + other
	res, err := Convert([]byte(input))
	require.NoError(t, err)
	docs := strings.Split(string(res.Output), "---\n")
	require.Len(t, docs, 3)
	assert.Equal(t, other, docs[0])
	assert.Contains(t, docs[1], "kind: IgnitionConfig\n")
	assert.Equal(t, other, docs[2])
	assert.Empty(t, res.Findings)
}

// A Container Linux Config that is not YAML cannot be carried over: the converted config would
// not render, and convert says so (with the field and the line) instead of writing it.
func TestConvertRefusesAContainerLinuxConfigThatDoesNotTranspile(t *testing.T) {
	_, err := Convert([]byte(config("  format: ignition\n  ntp: {servers: [a.example], enabled: true}\n  ignition:\n    containerLinuxConfig:\n      additionalConfig: '[unclosed'\n")))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "does not render")
	assert.Contains(t, err.Error(), "containerLinuxConfig")
	assert.Contains(t, err.Error(), "line 1")
}

// sysextConfig is a KubeadmConfig whose Container Linux Config is clc (YAML, unindented).
func sysextConfig(clc string) string {
	var indented strings.Builder
	for line := range strings.SplitSeq(strings.TrimSuffix(clc, "\n"), "\n") {
		indented.WriteString("        " + line + "\n")
	}
	return config("  format: ignition\n  ignition:\n    containerLinuxConfig:\n      additionalConfig: |\n" + indented.String())
}

// The providers' flatcar-sysext flavors install Kubernetes from the Container Linux Config; the
// conversion maps them onto spec.kubernetes and removes what the renderer now writes.
func TestConvertKubernetesSysext(t *testing.T) {
	const field = "spec.ignition.containerLinuxConfig.additionalConfig"
	cases := map[string]struct {
		clc   string
		check func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, notes string)
	}{
		"a literal version, arm64 and a mirror: baseURL is the mirror, the version the Machine's": {
			clc: `# the mirror of the bakery
storage:
  links:
    - path: /etc/extensions/kubernetes.raw
      target: /opt/extensions/kubernetes/kubernetes-v1.32.2-arm64.raw
  files:
    - path: /opt/extensions/kubernetes/kubernetes-v1.32.2-arm64.raw
      contents:
        remote:
          url: https://mirror.example/sysext/kubernetes-v1.32.2-arm64.raw
    - path: /etc/motd
      contents:
        inline: hello
`,
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, notes string) {
				assert.Equal(t, cabpiv1.KubernetesSpec{
					Source:      cabpiv1.KubernetesSourceSysext,
					Arch:        cabpiv1.ArchitectureARM64,
					Sysext:      &cabpiv1.SysextSource{BaseURL: "https://mirror.example/sysext"},
					DigestsFrom: sysextDigests,
				}, spec.Kubernetes)
				clc := spec.ContainerLinuxConfig.Inline
				assert.NotContains(t, clc, "/etc/extensions/kubernetes.raw")
				assert.NotContains(t, clc, "kubernetes-v1.32.2-arm64.raw")
				assert.NotContains(t, clc, "links:")
				assert.Contains(t, clc, "# the mirror of the bakery\n")
				assert.Contains(t, clc, "path: /etc/motd")
				assert.Contains(t, notes, "the mirror https://mirror.example/sysext (spec.kubernetes.sysext.baseURL), which must serve the bakery's current layout")
				assert.Contains(t, notes, "the image's version v1.32.2 is dropped: spec.kubernetes installs the version of the Machine's spec.version")
				assert.NotContains(t, notes, "whose URLs moved")
				assert.NotContains(t, notes, "systemd-sysupdate")
			},
		},
		"a link without its file: unchanged, with a note": {
			clc: `storage:
  links:
    - path: /etc/extensions/kubernetes.raw
      target: /opt/extensions/kubernetes/kubernetes-${KUBERNETES_VERSION}-x86-64.raw
`,
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, notes string) {
				assert.Zero(t, spec.Kubernetes)
				assert.Equal(t, "storage:\n  links:\n    - path: /etc/extensions/kubernetes.raw\n      target: /opt/extensions/kubernetes/kubernetes-${KUBERNETES_VERSION}-x86-64.raw\n", spec.ContainerLinuxConfig.Inline)
				assert.Equal(t, "note: KubeadmConfig ns/c: "+field+": not mapped onto spec.kubernetes (source sysext): there is no file at the link's target /opt/extensions/kubernetes/kubernetes-${KUBERNETES_VERSION}-x86-64.raw; the Container Linux Config is kept as it is and installs Kubernetes itself\n", notes)
			},
		},
		"the timer enabled: sysupdate, and the bakery's current layout": {
			clc: `storage:
  links:
    - path: /etc/extensions/kubernetes.raw
      hard: false
      target: /opt/extensions/kubernetes/kubernetes-${KUBERNETES_VERSION}-x86-64.raw
  files:
    - path: /etc/sysupdate.kubernetes.d/kubernetes-${KUBERNETES_VERSION%.*}.conf
      mode: 0644
      contents:
        remote:
          url: https://extensions.flatcar.org/extensions/kubernetes/kubernetes-${KUBERNETES_VERSION%.*}.conf
    - path: /etc/sysupdate.d/noop.conf
      mode: 0644
      contents:
        remote:
          url: https://extensions.flatcar.org/extensions/noop.conf
    - path: /opt/extensions/kubernetes/kubernetes-${KUBERNETES_VERSION}-x86-64.raw
      contents:
        remote:
          url: https://extensions.flatcar.org/extensions/kubernetes-${KUBERNETES_VERSION}-x86-64.raw
systemd:
  units:
    - name: systemd-sysupdate.service
      dropins:
        - name: kubernetes.conf
          contents: |
            [Service]
            ExecStartPre=/usr/lib/systemd/systemd-sysupdate -C kubernetes update
        - name: 20-mine.conf
          contents: |
            [Service]
            Environment=A=b
    - name: systemd-sysupdate.timer
      enabled: true
    - name: locksmithd.service
      mask: true
`,
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, notes string) {
				assert.Equal(t, cabpiv1.KubernetesSpec{
					Source:      cabpiv1.KubernetesSourceSysext,
					Arch:        cabpiv1.ArchitectureAMD64,
					Sysext:      &cabpiv1.SysextSource{Sysupdate: true},
					DigestsFrom: sysextDigests,
				}, spec.Kubernetes)
				clc := spec.ContainerLinuxConfig.Inline
				assert.NotContains(t, clc, "storage:", "every file and link was the extension's")
				assert.NotContains(t, clc, "systemd-sysupdate.timer")
				assert.NotContains(t, clc, "kubernetes.conf")
				assert.Contains(t, clc, "- name: systemd-sysupdate.service\n      dropins:\n        - name: 20-mine.conf\n", "the user's own drop-in stays")
				assert.Contains(t, clc, "- name: locksmithd.service\n      mask: true\n")
				assert.Contains(t, notes, "with its systemd-sysupdate configuration, are now spec.kubernetes (source sysext, arch amd64): the Kubernetes system extension is downloaded from the bakery's current layout, https://extensions.flatcar.org/extensions (spec.kubernetes.sysext.baseURL unset)\n")
				assert.NotContains(t, notes, "timer disabled")
				assert.NotContains(t, notes, "is dropped")
			},
		},
		"a per-release tag of the bakery's GitHub releases, everything else removed": {
			clc: `storage:
  links:
    - path: /etc/extensions/kubernetes.raw
      target: /opt/extensions/kubernetes/kubernetes-${KUBERNETES_VERSION}-x86-64.raw
  files:
    - path: /opt/extensions/kubernetes/kubernetes-${KUBERNETES_VERSION}-x86-64.raw
      contents:
        remote:
          url: https://github.com/flatcar/sysext-bakery/releases/download/kubernetes-v1.32.2/kubernetes-${KUBERNETES_VERSION}-x86-64.raw
    - path: /etc/sysupdate.d/noop.conf
      contents:
        remote:
          url: https://github.com/flatcar/sysext-bakery/releases/download/latest/noop.conf
`,
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, notes string) {
				assert.Equal(t, cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Arch: cabpiv1.ArchitectureAMD64, DigestsFrom: sysextDigests}, spec.Kubernetes)
				assert.Equal(t, "storage:\n  files:\n    - path: /etc/sysupdate.d/noop.conf\n      contents:\n        remote:\n          url: https://github.com/flatcar/sysext-bakery/releases/download/latest/noop.conf\n", spec.ContainerLinuxConfig.Inline)
				assert.Contains(t, notes, "the source downloaded kubernetes-${KUBERNETES_VERSION}-x86-64.raw from the bakery's GitHub releases, whose URLs moved (cluster-api-provider-openstack#2600)")
				assert.Contains(t, notes, "systemd-sysupdate is configured only in part (no a file in /etc/sysupdate.kubernetes.d, no systemd-sysupdate.service's drop-in kubernetes.conf): not mapped onto spec.kubernetes.sysext.sysupdate, its entries are kept as they are")
			},
		},
		"the file downloads another image: unchanged, with a note": {
			clc: `storage:
  links:
    - path: /etc/extensions/kubernetes.raw
      target: /opt/extensions/kubernetes/kubernetes-v1.32.2-x86-64.raw
  files:
    - path: /opt/extensions/kubernetes/kubernetes-v1.32.2-x86-64.raw
      contents:
        remote:
          url: https://mirror.example/kubernetes-v1.31.0-x86-64.raw
`,
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, notes string) {
				assert.Zero(t, spec.Kubernetes)
				assert.Contains(t, spec.ContainerLinuxConfig.Inline, "/etc/extensions/kubernetes.raw")
				assert.Contains(t, notes, "not mapped onto spec.kubernetes (source sysext): the file at /opt/extensions/kubernetes/kubernetes-v1.32.2-x86-64.raw downloads https://mirror.example/kubernetes-v1.31.0-x86-64.raw, not kubernetes-v1.32.2-x86-64.raw")
			},
		},
		"a mirror whose directories are per version: unchanged, with a note": {
			clc: `storage:
  links:
    - path: /etc/extensions/kubernetes.raw
      target: /opt/extensions/kubernetes/kubernetes-v1.32.2-x86-64.raw
  files:
    - path: /opt/extensions/kubernetes/kubernetes-v1.32.2-x86-64.raw
      contents:
        remote:
          url: https://mirror.example/v1.32.2/kubernetes-v1.32.2-x86-64.raw
`,
			check: func(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, notes string) {
				assert.Zero(t, spec.Kubernetes)
				assert.Contains(t, notes, "its directory names the version")
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec, lines := convertOne(t, sysextConfig(tc.clc))
			var notes strings.Builder
			for _, l := range lines {
				if strings.HasPrefix(l, "warning: ") {
					continue // the renderer's, on the entries kept (a file without a mode)
				}
				require.True(t, strings.HasPrefix(l, "note: KubeadmConfig ns/c: "+field+": "), "only notes about the Container Linux Config: %s", l)
				notes.WriteString(l + "\n")
			}
			tc.check(t, spec, notes.String())
		})
	}
}

// sysextDigests is where a converted sysext source reads its image's digest from.
var sysextDigests = &cabpiv1.DigestsSource{ConfigMap: &cabpiv1.KeyReference{Name: SysextDigestsConfigMap, Key: SysextDigestsKey}}
