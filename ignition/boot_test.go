package ignition_test

import (
	"fmt"
	"os"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootsim"
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

// Each role boots on each variant wherever kubeadm is installed, with /etc noexec: kubeadm runs
// once with its configuration, the sentinel appears only after it exited 0 and the token-bearing
// configuration is then gone; when kubeadm fails, the unit fails, no sentinel, and the
// configuration stays for the next boot.
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
					inspect := []string{ignition.KubeadmConfigPath, "/etc/cabpi-boot/hello.conf", "/etc/cabpi-boot/hello.link",
						"/etc/systemd/system/cabpi-boot-extra.service", "/etc/systemd/system/kubeadm.service.d/10-env.conf"}

					ok := bootsim.Boot(t, bootsim.Options{Config: out.Data, KubeadmDir: dir, KubeadmExit: 0, Inspect: inspect})
					assert.True(t, ok.Enabled, "kubeadm.service is enabled by a preset")
					require.Equal(t, "success", ok.Result, "%s\n%+v", ok.FailedStep, ok.Steps)
					require.Len(t, ok.KubeadmCalls, 1, "kubeadm runs once")
					call := ok.KubeadmCalls[0]
					assert.Equal(t, path.Join(dir, "kubeadm"), call.Path)
					assertKubeadmCall(t, role, call)
					assert.False(t, call.SentinelExisted, "no sentinel before kubeadm ran")
					assert.True(t, ok.SentinelExists, "sentinel after kubeadm exited 0")
					assert.False(t, ok.Files[ignition.KubeadmConfigPath].Exists, "the token-bearing config is removed")
					if role != "init" {
						assert.Contains(t, call.Config, "token: "+testToken, "kubeadm got the configuration with the join token")
					}

					// The user's file, link, unit and drop-in landed as written; the drop-in applied.
					assert.Equal(t, "hello", ok.Files["/etc/cabpi-boot/hello.conf"].Content)
					assert.Equal(t, os.FileMode(0o640), ok.Files["/etc/cabpi-boot/hello.conf"].Mode.Perm())
					assert.Equal(t, "/etc/cabpi-boot/hello.conf", ok.Files["/etc/cabpi-boot/hello.link"].LinkTarget)
					assert.Contains(t, ok.Files["/etc/systemd/system/cabpi-boot-extra.service"].Content, "ExecStart=/bin/true")
					assert.True(t, ok.Files["/etc/systemd/system/kubeadm.service.d/10-env.conf"].Exists)
					assert.Contains(t, ok.Environment, "CABPI_BOOT_DROPIN=from drop-in")
					assert.Contains(t, ok.After, "cabpi-boot-extra.service")

					failed := bootsim.Boot(t, bootsim.Options{Config: out.Data, KubeadmDir: dir, KubeadmExit: 1, Inspect: inspect})
					assert.Equal(t, "failed", failed.Result)
					assert.Len(t, failed.KubeadmCalls, 1)
					assert.False(t, failed.SentinelExists, "no sentinel when kubeadm failed")
					kept := failed.Files[ignition.KubeadmConfigPath]
					assert.True(t, kept.Exists, "the configuration is kept for the next boot")
					assert.Equal(t, os.FileMode(0o600), kept.Mode.Perm())
				})
			}
		}
	}
}

// assertKubeadmCall checks the subcommand and the kinds of the configuration kubeadm was given.
func assertKubeadmCall(t *testing.T, role string, call bootsim.KubeadmCall) {
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
// options, traps, writing the file, shadowing kubeadm): the sentinel now means kubeadm exited 0.
// With a kubeadm that succeeds, the same inputs still bootstrap.
func TestSentinelMeansKubeadmSucceeded(t *testing.T) {
	const sentinel = ignition.SentinelPath
	cases := map[string]struct {
		pre    []string
		butane string
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
		"drop-in ExecStartPre writes it": {butane: butaneDropin(ignition.KubeadmUnitName,
			"[Service]\nExecStartPre=/bin/mkdir -p /run/cluster-api\nExecStartPre=/usr/bin/touch "+sentinel+"\n")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			in.PreKubeadmCommands = tc.pre
			in.Butane = tc.butane
			out, err := ignition.Render(in)
			require.NoError(t, err)

			failed := bootsim.Boot(t, bootsim.Options{Config: out.Data, KubeadmDir: "/opt/bin", KubeadmExit: 1})
			assert.Equal(t, "failed", failed.Result, "%+v", failed.Steps)
			assert.Len(t, failed.KubeadmCalls, 1, "the real kubeadm ran")
			assert.False(t, failed.SentinelExists, "kubeadm failed: no sentinel")

			ok := bootsim.Boot(t, bootsim.Options{Config: out.Data, KubeadmDir: "/opt/bin", KubeadmExit: 0})
			assert.Equal(t, "success", ok.Result, "%s %+v", ok.FailedStep, ok.Steps)
			assert.True(t, ok.SentinelExists)
		})
	}
}

// The node is named, and its provider ID set, from the metadata the variant's metadata service
// wrote: only the named attributes are substituted, each checked, before kubeadm runs.
func TestBootNamesNodeFromMetadata(t *testing.T) {
	type metadataCase struct {
		variant    cabpiv1.Variant
		platform   cabpiv1.MetadataPlatform
		providerID bool
		service    string
		runFiles   map[string]string
		hostname   string
		wantName   string
		wantID     string
	}
	cases := map[string]metadataCase{
		"aws on flatcar": {
			variant: cabpiv1.VariantFlatcar, platform: cabpiv1.MetadataPlatformAWS, providerID: true, service: "coreos-metadata.service",
			runFiles: map[string]string{"/run/metadata/flatcar": "COREOS_EC2_HOSTNAME=IP-10-0-0-7.EC2.Internal\n" +
				"COREOS_EC2_AVAILABILITY_ZONE=us-east-1a\nCOREOS_EC2_INSTANCE_ID=i-0abc123\nCOREOS_EC2_IPV4_LOCAL=10.0.0.7\n"},
			wantName: "ip-10-0-0-7.ec2.internal", wantID: "aws:///us-east-1a/i-0abc123",
		},
		"aws on fcos": {
			variant: cabpiv1.VariantFCOS, platform: cabpiv1.MetadataPlatformAWS, providerID: true, service: "afterburn.service",
			runFiles: map[string]string{"/run/metadata/afterburn": "AFTERBURN_AWS_HOSTNAME=ip-10-0-0-8.ec2.internal\n" +
				"AFTERBURN_AWS_AVAILABILITY_ZONE=eu-west-1b\nAFTERBURN_AWS_INSTANCE_ID=i-0def456\n"},
			wantName: "ip-10-0-0-8.ec2.internal", wantID: "aws:///eu-west-1b/i-0def456",
		},
		"openstack on fcos": {
			variant: cabpiv1.VariantFCOS, platform: cabpiv1.MetadataPlatformOpenStack, providerID: true, service: "afterburn.service",
			runFiles: map[string]string{"/run/metadata/afterburn": "AFTERBURN_OPENSTACK_HOSTNAME=worker-3\n" +
				"AFTERBURN_OPENSTACK_INSTANCE_UUID=2b9d6e1c-3f4a-4c55-9a0b-7f1e2d3c4b5a\n"},
			wantName: "worker-3", wantID: "openstack:///2b9d6e1c-3f4a-4c55-9a0b-7f1e2d3c4b5a",
		},
		"openstack on flatcar": {
			variant: cabpiv1.VariantFlatcar, platform: cabpiv1.MetadataPlatformOpenStack, service: "coreos-metadata.service",
			runFiles: map[string]string{"/run/metadata/flatcar": "COREOS_OPENSTACK_HOSTNAME=worker-4\n"},
			wantName: "worker-4",
		},
		"azure on flatcar": {
			variant: cabpiv1.VariantFlatcar, platform: cabpiv1.MetadataPlatformAzure, service: "coreos-metadata.service",
			runFiles: map[string]string{"/run/metadata/flatcar": "COREOS_AZURE_IPV4_DYNAMIC=10.1.0.4\n"},
			hostname: "Azure-VM-0", wantName: "azure-vm-0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := joinInput(tc.variant, "v1.34.0")
			in.NodeName = &ignition.NodeNameFromMetadata{Platform: tc.platform, ProviderID: tc.providerID}
			out, err := ignition.Render(in)
			require.NoError(t, err)

			rep := bootsim.Boot(t, bootsim.Options{Config: out.Data, KubeadmDir: "/opt/bin", RunFiles: tc.runFiles, Hostname: tc.hostname})
			require.Equal(t, "success", rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
			assert.Contains(t, rep.Requires, tc.service)
			assert.Contains(t, rep.After, tc.service)
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

	t.Run("metadata service did not run", func(t *testing.T) {
		in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
		in.NodeName = &ignition.NodeNameFromMetadata{Platform: cabpiv1.MetadataPlatformAWS}
		out, err := ignition.Render(in)
		require.NoError(t, err)
		rep := bootsim.Boot(t, bootsim.Options{Config: out.Data, KubeadmDir: "/opt/bin"})
		assert.Equal(t, "failed", rep.Result)
		assert.Empty(t, rep.KubeadmCalls, "kubeadm never runs with a wrong name")
		assert.False(t, rep.SentinelExists)
	})
	for name, value := range map[string]string{"shell text": "x;touch /tmp/pwned", "YAML text": "a\n  token: x", "empty": ""} {
		t.Run("hostname attribute is "+name, func(t *testing.T) {
			in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			in.NodeName = &ignition.NodeNameFromMetadata{Platform: cabpiv1.MetadataPlatformAWS}
			out, err := ignition.Render(in)
			require.NoError(t, err)
			rep := bootsim.Boot(t, bootsim.Options{Config: out.Data, KubeadmDir: "/opt/bin",
				RunFiles: map[string]string{"/run/metadata/flatcar": fmt.Sprintf("COREOS_EC2_HOSTNAME=%q\n", value)}})
			assert.Equal(t, "failed", rep.Result)
			assert.Empty(t, rep.KubeadmCalls)
			assert.False(t, rep.SentinelExists)
		})
	}
}

// The pattern of the cloud providers' Flatcar flavors (a drop-in reading coreos-metadata plus
// envsubst in a pre-kubeadm command) boots and names the node.
func TestBootCloudProviderDropinPattern(t *testing.T) {
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.JoinConfiguration.NodeRegistration.Name = "${COREOS_EC2_HOSTNAME}"
	in.PreKubeadmCommands = []string{"envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp", "mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml"}
	in.Butane = butaneDropin(ignition.KubeadmUnitName,
		"[Unit]\nRequires=coreos-metadata.service\nAfter=coreos-metadata.service\n[Service]\nEnvironmentFile=/run/metadata/flatcar\n")
	out, err := ignition.Render(in)
	require.NoError(t, err)
	rep := bootsim.Boot(t, bootsim.Options{Config: out.Data, KubeadmDir: "/usr/bin",
		RunFiles: map[string]string{"/run/metadata/flatcar": "COREOS_EC2_HOSTNAME=ip-10-0-0-9.ec2.internal\n"}})
	require.Equal(t, "success", rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
	assert.Contains(t, rep.Requires, "coreos-metadata.service")
	require.Len(t, rep.KubeadmCalls, 1)
	assert.Contains(t, rep.KubeadmCalls[0].Config, "name: ip-10-0-0-9.ec2.internal")
	assert.True(t, rep.SentinelExists)
}
