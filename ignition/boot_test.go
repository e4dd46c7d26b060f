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
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootcheck"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// kubeadmDirs are where images put kubeadm: the Kubernetes sysext in /usr/bin, images and guides
// that add binaries to Flatcar's read-only /usr in /opt/bin.
var kubeadmDirs = []string{"/usr/bin", "/opt/bin"}

// bootSnippets write a file, a link, a unit and a drop-in for kubeadm.service of each variant's
// Butane, as users do; the boot must leave them as written and honour the drop-in.
var bootSnippets = map[cabpiv1.Variant]string{
	cabpiv1.VariantFlatcar: "variant: flatcar\nversion: 1.0.0\n" + bootSnippetBody,
	cabpiv1.VariantFCOS:    "variant: fcos\nversion: 1.5.0\n" + bootSnippetBody,
}

const bootSnippetBody = `storage:
  files:
    - path: /etc/cabpi-boot/hello.conf
      mode: 0640
      contents:
        inline: hello
  links:
    - path: /etc/cabpi-boot/hello.link
      target: /etc/cabpi-boot/hello.conf
systemd:
  units:
    - name: cabpi-boot-extra.service
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
            After=cabpi-boot-extra.service
            [Service]
            Environment="CABPI_BOOT_DROPIN=from drop-in"
`

// appliedNode applies a rendered config with the real ignition-apply and checks kubeadm.service
// (and units) with the host's real systemd: it loads with its drop-ins and its dependencies
// resolve (systemd-analyze verify), the first boot enables it (systemctl --root preset), and it
// runs the script with bash, so that /etc mounted noexec (Flatcar 4628+) does not stop it, only
// while its configuration is there (a reboot skips it). It returns the applied root.
func appliedNode(t *testing.T, data []byte, units ...string) (string, bootcheck.Unit) {
	t.Helper()
	root := ignitionapply.Apply(t, data)
	bootcheck.Verify(t, root, append([]string{ignition.KubeadmUnitName}, units...)...)
	assert.True(t, bootcheck.Enabled(t, root, ignition.KubeadmUnitName), "kubeadm.service is enabled by a preset")
	u := bootcheck.ReadUnit(t, root, ignition.KubeadmUnitName)
	assert.Equal(t, []string{"/bin/bash " + bootcheck.ScriptPath}, u.Values("Service", "ExecStart"))
	assert.Equal(t, []string{ignition.KubeadmConfigPath}, u.Values("Unit", "ConditionPathExists"))
	assert.Equal(t, []string{"oneshot"}, u.Values("Service", "Type"))
	return root, u
}

// Each role on each variant, wherever kubeadm is installed: kubeadm.service is valid, enabled and
// runs the script with bash; the script runs kubeadm once with its configuration, the sentinel
// appears only after it exited 0 and the token-bearing configuration is then gone; when kubeadm
// fails, the script fails, no sentinel, and the configuration stays for the next boot. The user's
// file, link, unit and drop-in land as written. (The boot itself, by systemd on a node with /etc
// noexec: the real-node suite, docs/adr/029-one-way-to-boot-a-node.md.)
func TestBootOnTodaysNodes(t *testing.T) {
	roles := map[string]func(cabpiv1.Variant, string) ignition.Input{
		"init":          initInput,
		"control-plane": controlPlaneJoinInput,
		"worker":        joinInput,
	}
	for role, input := range roles {
		for _, variant := range []cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS} {
			for _, dir := range kubeadmDirs {
				t.Run(fmt.Sprintf("%s/%s/kubeadm-in-%s", role, variant, path.Base(path.Dir(dir))+"-"+path.Base(dir)), func(t *testing.T) {
					in := input(variant, "v1.34.0")
					in.Butane = bootSnippets[variant]
					out, err := ignition.Render(in)
					require.NoError(t, err)

					root, u := appliedNode(t, out.Data, "cabpi-boot-extra.service")
					// The user's file, link, unit and drop-in landed as written; the drop-in is read.
					assert.Equal(t, "hello", readFile(t, root, "/etc/cabpi-boot/hello.conf", 0o640))
					link, err := os.Readlink(filepath.Join(root, "etc/cabpi-boot/hello.link"))
					require.NoError(t, err)
					assert.Equal(t, "/etc/cabpi-boot/hello.conf", link)
					assert.Equal(t, []string{"/bin/true"}, bootcheck.ReadUnit(t, root, "cabpi-boot-extra.service").Values("Service", "ExecStart"))
					assert.True(t, bootcheck.Enabled(t, root, "cabpi-boot-extra.service"))
					assert.Contains(t, u.Values("Service", "Environment"), `"CABPI_BOOT_DROPIN=from drop-in"`)
					assert.Contains(t, u.Words("Unit", "After"), "cabpi-boot-extra.service")

					ok := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: dir})
					require.Equal(t, 0, ok.ExitCode, ok.Output)
					require.Len(t, ok.KubeadmCalls, 1, "kubeadm runs once")
					call := ok.KubeadmCalls[0]
					assert.Equal(t, path.Join(dir, "kubeadm"), call.Path)
					assertKubeadmCall(t, role, call)
					assert.False(t, call.SentinelExisted, "no sentinel before kubeadm ran")
					assert.True(t, ok.SentinelExists, "sentinel after kubeadm exited 0")
					assert.NoFileExists(t, filepath.Join(root, ignition.KubeadmConfigPath), "the token-bearing config is removed")
					if role != "init" {
						assert.Contains(t, call.Config, "token: "+testToken, "kubeadm got the configuration with the join token")
					}

					root = ignitionapply.Apply(t, out.Data)
					failed := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: dir, KubeadmExit: 1})
					assert.NotEqual(t, 0, failed.ExitCode, "kubeadm.service fails")
					assert.Len(t, failed.KubeadmCalls, 1)
					assert.False(t, failed.SentinelExists, "no sentinel when kubeadm failed")
					readFile(t, root, ignition.KubeadmConfigPath, 0o600) // kept for the next boot
				})
			}
		}
	}
}

// assertKubeadmCall checks the subcommand and the kinds of the configuration kubeadm was given.
func assertKubeadmCall(t *testing.T, role string, call bootcheck.KubeadmCall) {
	t.Helper()
	require.NotEmpty(t, call.Args)
	assert.Contains(t, strings.Join(call.Args, " "), "--config /etc/kubeadm.yml")
	switch role {
	case "init":
		assert.Equal(t, "init", call.Args[0])
		assert.Contains(t, call.Config, "kind: ClusterConfiguration")
		assert.Contains(t, call.Config, "kind: InitConfiguration")
	case "control-plane":
		assert.Equal(t, "join", call.Args[0])
		assert.Contains(t, call.Config, "kind: JoinConfiguration")
		assert.Contains(t, call.Config, "controlPlane:")
	default:
		assert.Equal(t, "join", call.Args[0])
		assert.Contains(t, call.Config, "kind: JoinConfiguration")
		assert.NotContains(t, call.Config, "controlPlane:")
		assert.Contains(t, call.Config, ignition.UninitializedTaintKey)
	}
}

// Commands and drop-ins that once made a failed kubeadm leave the success sentinel behind (shell
// options, traps, writing the file, shadowing kubeadm, a sentinel there before the script, as a
// drop-in's ExecStartPre= leaves it): the sentinel now means kubeadm exited 0. With a kubeadm that
// succeeds, the same inputs still bootstrap.
func TestSentinelMeansKubeadmSucceeded(t *testing.T) {
	const sentinel = ignition.SentinelPath
	dropinPre := []string{"/bin/mkdir -p /run/cluster-api", "/usr/bin/touch " + sentinel}
	cases := map[string]struct {
		pre    []string
		butane string
		left   bool // the sentinel is there when the script starts
	}{
		"set +e":                   {pre: []string{"set +e"}},
		"set +o errexit":           {pre: []string{"set +o errexit +o pipefail"}},
		"trap on EXIT writes it":   {pre: []string{"trap 'mkdir -p /run/cluster-api; touch " + sentinel + "' EXIT"}},
		"trap on ERR exits 0":      {pre: []string{"trap 'exit 0' ERR"}},
		"command writes it":        {pre: []string{"mkdir -p /run/cluster-api", "echo success > " + sentinel}},
		"directory at its path":    {pre: []string{"mkdir -p " + sentinel}},
		"function shadows kubeadm": {pre: []string{`kubeadm() { command kubeadm "$@" || true; }`}},
		"exported function":        {pre: []string{`kubeadm() { command kubeadm "$@" || true; }`, "export -f kubeadm"}},
		"alias shadows kubeadm":    {pre: []string{"shopt -s expand_aliases", "alias kubeadm='true'"}},
		"drop-in ExecStartPre writes it": {left: true, butane: butaneDropin(ignition.KubeadmUnitName,
			"[Service]\nExecStartPre="+dropinPre[0]+"\nExecStartPre="+dropinPre[1]+"\n")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			in.PreKubeadmCommands = tc.pre
			in.Butane = tc.butane
			out, err := ignition.Render(in)
			require.NoError(t, err)
			opts := bootcheck.ScriptOptions{KubeadmDir: "/opt/bin", KubeadmExit: 1}
			if tc.left {
				// systemd runs the drop-in's ExecStartPre= before the script: it leaves the sentinel.
				_, u := appliedNode(t, out.Data)
				require.Equal(t, dropinPre, u.Values("Service", "ExecStartPre"))
				opts.RunFiles = map[string]string{sentinel: ""}
			}

			failed := bootcheck.RunScript(t, ignitionapply.Apply(t, out.Data), opts)
			assert.NotEqual(t, 0, failed.ExitCode, failed.Output)
			assert.Len(t, failed.KubeadmCalls, 1, "the real kubeadm ran")
			assert.False(t, failed.SentinelExists, "kubeadm failed: no sentinel")

			opts.KubeadmExit = 0
			ok := bootcheck.RunScript(t, ignitionapply.Apply(t, out.Data), opts)
			assert.Equal(t, 0, ok.ExitCode, ok.Output)
			assert.True(t, ok.SentinelExists)
		})
	}
}

// The node is named, and its provider ID set, from the metadata the variant's metadata service
// wrote: kubeadm.service requires the service, starts after it and reads its file (without "-":
// no file, no start); only the named attributes are substituted, each checked, before kubeadm
// runs.
func TestBootNamesNodeFromMetadata(t *testing.T) {
	type metadataCase struct {
		variant    cabpiv1.Variant
		platform   cabpiv1.MetadataPlatform
		providerID bool
		service    string
		file       string
		env        map[string]string // what the service wrote, as systemd hands it to the script
		hostname   string
		wantName   string
		wantID     string
	}
	cases := map[string]metadataCase{
		"aws on flatcar": {
			variant: cabpiv1.VariantFlatcar, platform: cabpiv1.MetadataPlatformAWS, providerID: true,
			service: "coreos-metadata.service", file: "/run/metadata/flatcar",
			env: map[string]string{"COREOS_EC2_HOSTNAME": "IP-10-0-0-7.EC2.Internal", "COREOS_EC2_AVAILABILITY_ZONE": "us-east-1a",
				"COREOS_EC2_INSTANCE_ID": "i-0abc123", "COREOS_EC2_IPV4_LOCAL": "10.0.0.7"},
			wantName: "ip-10-0-0-7.ec2.internal", wantID: "aws:///us-east-1a/i-0abc123",
		},
		"aws on fcos": {
			variant: cabpiv1.VariantFCOS, platform: cabpiv1.MetadataPlatformAWS, providerID: true,
			service: "afterburn.service", file: "/run/metadata/afterburn",
			env: map[string]string{"AFTERBURN_AWS_HOSTNAME": "ip-10-0-0-8.ec2.internal",
				"AFTERBURN_AWS_AVAILABILITY_ZONE": "eu-west-1b", "AFTERBURN_AWS_INSTANCE_ID": "i-0def456"},
			wantName: "ip-10-0-0-8.ec2.internal", wantID: "aws:///eu-west-1b/i-0def456",
		},
		"openstack on fcos": {
			variant: cabpiv1.VariantFCOS, platform: cabpiv1.MetadataPlatformOpenStack, providerID: true,
			service: "afterburn.service", file: "/run/metadata/afterburn",
			env: map[string]string{"AFTERBURN_OPENSTACK_HOSTNAME": "worker-3",
				"AFTERBURN_OPENSTACK_INSTANCE_UUID": "2b9d6e1c-3f4a-4c55-9a0b-7f1e2d3c4b5a"},
			wantName: "worker-3", wantID: "openstack:///2b9d6e1c-3f4a-4c55-9a0b-7f1e2d3c4b5a",
		},
		"openstack on flatcar": {
			variant: cabpiv1.VariantFlatcar, platform: cabpiv1.MetadataPlatformOpenStack,
			service: "coreos-metadata.service", file: "/run/metadata/flatcar",
			env:      map[string]string{"COREOS_OPENSTACK_HOSTNAME": "worker-4"},
			wantName: "worker-4",
		},
		"azure on flatcar": {
			variant: cabpiv1.VariantFlatcar, platform: cabpiv1.MetadataPlatformAzure,
			service: "coreos-metadata.service", file: "/run/metadata/flatcar",
			env:      map[string]string{"COREOS_AZURE_IPV4_DYNAMIC": "10.1.0.4"},
			hostname: "Azure-VM-0", wantName: "azure-vm-0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := joinInput(tc.variant, "v1.34.0")
			in.NodeName = &ignition.NodeNameFromMetadata{Platform: tc.platform, ProviderID: tc.providerID}
			out, err := ignition.Render(in)
			require.NoError(t, err)

			root, u := appliedNode(t, out.Data)
			assert.Contains(t, u.Words("Unit", "Requires"), tc.service)
			assert.Contains(t, u.Words("Unit", "After"), tc.service)
			assert.Equal(t, []string{tc.file}, u.Values("Service", "EnvironmentFile"))

			rep := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/opt/bin", Env: tc.env, Hostname: tc.hostname})
			require.Equal(t, 0, rep.ExitCode, rep.Output)
			require.Len(t, rep.KubeadmCalls, 1)
			config := rep.KubeadmCalls[0].Config
			assert.Contains(t, config, "\n  name: "+tc.wantName+"\n")
			if tc.wantID != "" {
				assert.Contains(t, config, "value: "+tc.wantID+"\n")
			} else {
				assert.NotContains(t, config, "provider-id")
			}
			assert.NotContains(t, config, "${", "every placeholder was substituted")
			assert.Contains(t, config, "token: "+testToken, "the token is untouched")
		})
	}

	for name, value := range map[string]string{
		"empty or not set": "",
		"shell text":       "x;touch /tmp/pwned",
		"YAML text":        "a\n  token: x",
	} {
		t.Run("hostname attribute "+name, func(t *testing.T) {
			in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			in.NodeName = &ignition.NodeNameFromMetadata{Platform: cabpiv1.MetadataPlatformAWS}
			out, err := ignition.Render(in)
			require.NoError(t, err)
			env := map[string]string{}
			if value != "" {
				env["COREOS_EC2_HOSTNAME"] = value
			}
			rep := bootcheck.RunScript(t, ignitionapply.Apply(t, out.Data), bootcheck.ScriptOptions{KubeadmDir: "/opt/bin", Env: env})
			assert.NotEqual(t, 0, rep.ExitCode)
			assert.Contains(t, rep.Output, "cabpi: metadata attribute COREOS_EC2_HOSTNAME")
			assert.Empty(t, rep.KubeadmCalls, "kubeadm never runs with a wrong name")
			assert.False(t, rep.SentinelExists)
		})
	}
}

// The pattern of the cloud providers' Flatcar flavors (a drop-in reading coreos-metadata plus
// envsubst in a pre-kubeadm command) names the node.
func TestBootCloudProviderDropinPattern(t *testing.T) {
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.JoinConfiguration.NodeRegistration.Name = "${COREOS_EC2_HOSTNAME}"
	in.PreKubeadmCommands = []string{"envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp", "mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml"}
	in.Butane = butaneDropin(ignition.KubeadmUnitName,
		"[Unit]\nRequires=coreos-metadata.service\nAfter=coreos-metadata.service\n[Service]\nEnvironmentFile=/run/metadata/flatcar\n")
	out, err := ignition.Render(in)
	require.NoError(t, err)
	root, u := appliedNode(t, out.Data)
	assert.Contains(t, u.Words("Unit", "Requires"), "coreos-metadata.service")
	assert.Contains(t, u.Words("Unit", "After"), "coreos-metadata.service")
	assert.Equal(t, []string{"/run/metadata/flatcar"}, u.Values("Service", "EnvironmentFile"))

	rep := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/usr/bin",
		Env: map[string]string{"COREOS_EC2_HOSTNAME": "ip-10-0-0-9.ec2.internal"}})
	require.Equal(t, 0, rep.ExitCode, rep.Output)
	require.Len(t, rep.KubeadmCalls, 1)
	assert.Contains(t, rep.KubeadmCalls[0].Config, "name: ip-10-0-0-9.ec2.internal")
	assert.True(t, rep.SentinelExists)
}
