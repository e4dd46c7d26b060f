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
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/golden"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// goldenCases cover every role on both variants, with and without a user snippet, and both
// kubeadm API versions: v1beta3 (Kubernetes 1.30) and v1beta4 (1.31 and later); and a flatcar
// worker whose snippet is a Container Linux Config.
func goldenCases() map[string]ignition.Input {
	withSnippet := func(in ignition.Input, doc string) ignition.Input {
		in.Butane = doc
		in.PreKubeadmCommands = []string{"systemctl enable --now containerd"}
		in.PostKubeadmCommands = []string{"echo bootstrapped > /var/log/cabpi.log"}
		in.Files = []ignition.File{{Path: "/etc/cabpi/hello", Content: []byte("hello\n"), Mode: 0o640, Owner: "500:500"}}
		return in
	}
	withCLC := func(in ignition.Input, doc string) ignition.Input {
		in = withSnippet(in, "")
		in.ContainerLinuxConfig = doc
		return in
	}
	return map[string]ignition.Input{
		"worker-flatcar-v1.34.0":               joinInput(cabpiv1.VariantFlatcar, "v1.34.0"),
		"worker-flatcar-snippet-v1.34.0":       withSnippet(joinInput(cabpiv1.VariantFlatcar, "v1.34.0"), flatcarSnippet),
		"worker-fcos-v1.34.0":                  joinInput(cabpiv1.VariantFCOS, "v1.34.0"),
		"worker-fcos-snippet-v1.34.0":          withSnippet(joinInput(cabpiv1.VariantFCOS, "v1.34.0"), fcosSnippet),
		"worker-flatcar-v1.30.4":               joinInput(cabpiv1.VariantFlatcar, "v1.30.4"),
		"init-flatcar-v1.34.0":                 initInput(cabpiv1.VariantFlatcar, "v1.34.0"),
		"init-fcos-v1.34.0":                    initInput(cabpiv1.VariantFCOS, "v1.34.0"),
		"init-flatcar-v1.30.4":                 initInput(cabpiv1.VariantFlatcar, "v1.30.4"),
		"init-fcos-snippet-v1.31.0":            withSnippet(initInput(cabpiv1.VariantFCOS, "v1.31.0"), fcosSnippet),
		"controlplane-flatcar-v1.34.0":         controlPlaneJoinInput(cabpiv1.VariantFlatcar, "v1.34.0"),
		"controlplane-fcos-v1.34.0":            controlPlaneJoinInput(cabpiv1.VariantFCOS, "v1.34.0"),
		"controlplane-fcos-v1.30.4":            controlPlaneJoinInput(cabpiv1.VariantFCOS, "v1.30.4"),
		"controlplane-flatcar-snippet-v1.31.0": withSnippet(controlPlaneJoinInput(cabpiv1.VariantFlatcar, "v1.31.0"), flatcarSnippet),
		"worker-flatcar-clc-v1.34.0":           withCLC(joinInput(cabpiv1.VariantFlatcar, "v1.34.0"), flatcarCLC),
	}
}

func TestRenderGolden(t *testing.T) {
	for name, in := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			out, err := ignition.Render(in)
			require.NoError(t, err)

			// What a node would do with it: the config parses, without a warning, at the
			// version reported.
			_, rpt, err := ignconfig.Parse(out.Data)
			require.NoError(t, err, rpt.String())
			assert.Empty(t, rpt.Entries, "Ignition reports on the rendered config")
			assert.Equal(t, out.SpecVersion, specVersion(t, out.Data))
			assert.Equal(t, len(out.Data), out.Size.Bytes)
			assert.Positive(t, out.Size.GzipBytes)
			assert.Less(t, out.Size.GzipBytes, out.Size.Bytes)

			var pretty bytes.Buffer
			require.NoError(t, json.Indent(&pretty, out.Data, "", "  "))
			pretty.WriteByte('\n')
			golden.Assert(t, name+".json", pretty.Bytes())
		})
	}
}

// The kubeadm document follows the role and the Kubernetes version.
func TestKubeadmConfigPerRoleAndVersion(t *testing.T) {
	cases := []struct {
		in         ignition.Input
		apiVersion string
		kinds      []string
		contains   []string
		absent     []string
	}{
		{joinInput(cabpiv1.VariantFlatcar, "v1.30.4"), "kubeadm.k8s.io/v1beta3", []string{"JoinConfiguration"},
			[]string{testToken, "node.cluster.x-k8s.io/uninitialized", "node-labels: pool=default"}, []string{"controlPlane:"}},
		{joinInput(cabpiv1.VariantFCOS, "v1.31.0"), "kubeadm.k8s.io/v1beta4", []string{"JoinConfiguration"},
			[]string{testToken, "node.cluster.x-k8s.io/uninitialized", "value: pool=default"}, []string{"controlPlane:"}},
		{controlPlaneJoinInput(cabpiv1.VariantFlatcar, "v1.34.0"), "kubeadm.k8s.io/v1beta4", []string{"JoinConfiguration"},
			[]string{testToken, "controlPlane:", "advertiseAddress: 10.0.0.2"}, []string{"node.cluster.x-k8s.io/uninitialized"}},
		{initInput(cabpiv1.VariantFCOS, "v1.30.4"), "kubeadm.k8s.io/v1beta3", []string{"ClusterConfiguration", "InitConfiguration"},
			[]string{"clusterName: demo", "podSubnet: 192.168.0.0/16", "kubernetesVersion: v1.30.4", "controlPlaneEndpoint: " + testEndpoint},
			[]string{"node.cluster.x-k8s.io/uninitialized", testToken}},
		{initInput(cabpiv1.VariantFlatcar, "v1.34.0"), "kubeadm.k8s.io/v1beta4", []string{"ClusterConfiguration", "InitConfiguration"},
			[]string{"clusterName: demo", "serviceSubnet: 10.96.0.0/12", "dnsDomain: cluster.local", "api.example.com"},
			[]string{"node.cluster.x-k8s.io/uninitialized"}},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%s-%s-%s", tc.in.Role, tc.in.Variant, tc.in.KubernetesVersion), func(t *testing.T) {
			out, err := ignition.Render(tc.in)
			require.NoError(t, err)
			kubeadm := fileContent(t, out.Data, ignition.KubeadmConfigPath)
			assert.Equal(t, len(tc.kinds), strings.Count(kubeadm, "apiVersion: "+tc.apiVersion), kubeadm)
			for _, kind := range tc.kinds {
				assert.Contains(t, kubeadm, "kind: "+kind+"\n")
			}
			for _, s := range tc.contains {
				assert.Contains(t, kubeadm, s)
			}
			for _, s := range tc.absent {
				assert.NotContains(t, kubeadm, s)
			}
		})
	}
}

// The uninitialized taint is added once, next to the user's taints, never duplicated, and the
// caller's JoinConfiguration is not modified.
func TestWorkerTaints(t *testing.T) {
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	mine := []corev1.Taint{userTaint, {Key: ignition.UninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	in.JoinConfiguration.NodeRegistration.Taints = &mine
	out, err := ignition.Render(in)
	require.NoError(t, err)
	kubeadm := fileContent(t, out.Data, ignition.KubeadmConfigPath)
	assert.Equal(t, 1, strings.Count(kubeadm, ignition.UninitializedTaintKey), kubeadm)
	assert.Contains(t, kubeadm, "key: dedicated")

	user := []corev1.Taint{userTaint}
	in.JoinConfiguration.NodeRegistration.Taints = &user
	out, err = ignition.Render(in)
	require.NoError(t, err)
	kubeadm = fileContent(t, out.Data, ignition.KubeadmConfigPath)
	assert.Equal(t, 1, strings.Count(kubeadm, ignition.UninitializedTaintKey), kubeadm)
	assert.Contains(t, kubeadm, "key: dedicated")
	assert.Equal(t, []corev1.Taint{userTaint}, *in.JoinConfiguration.NodeRegistration.Taints, "the input is not modified")
}

// Identical input gives identical bytes, and Render leaves its input as it found it.
func TestRenderIsDeterministicAndPure(t *testing.T) {
	for name, in := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			// %#v prints the pointer fields as addresses: what they point to is compared as JSON.
			before := fmt.Sprintf("%#v", in)
			beforeJoin, beforeInit := deepString(in.JoinConfiguration), deepString(in.InitConfiguration)
			beforeCluster, beforeData := deepString(in.ClusterConfiguration), deepString(in.ClusterData)
			first, err := ignition.Render(in)
			require.NoError(t, err)
			for range 3 {
				again, err := ignition.Render(in)
				require.NoError(t, err)
				require.Equal(t, string(first.Data), string(again.Data))
				require.Equal(t, first.Size, again.Size)
			}
			assert.Equal(t, before, fmt.Sprintf("%#v", in))
			assert.Equal(t, beforeJoin, deepString(in.JoinConfiguration))
			assert.Equal(t, beforeInit, deepString(in.InitConfiguration))
			assert.Equal(t, beforeCluster, deepString(in.ClusterConfiguration))
			assert.Equal(t, beforeData, deepString(in.ClusterData))
		})
	}
}

// The version emitted is the variant's floor, raised by the snippet's version, or the pin.
func TestSpecVersionSelection(t *testing.T) {
	cases := []struct {
		name    string
		variant cabpiv1.Variant
		butane  string
		pin     string
		want    string
	}{
		{"flatcar floor", cabpiv1.VariantFlatcar, "", "", "3.3.0"},
		{"fcos floor", cabpiv1.VariantFCOS, "", "", "3.0.0"},
		{"flatcar 1.1.0 snippet", cabpiv1.VariantFlatcar, "variant: flatcar\nversion: 1.1.0\n", "", "3.4.0"},
		{"fcos 1.5.0 snippet", cabpiv1.VariantFCOS, "variant: fcos\nversion: 1.5.0\n", "", "3.4.0"},
		{"fcos 1.6.0 snippet", cabpiv1.VariantFCOS, "variant: fcos\nversion: 1.6.0\n", "", "3.5.0"},
		{"fcos pinned above snippet", cabpiv1.VariantFCOS, "variant: fcos\nversion: 1.1.0\n", "3.6.0", "3.6.0"},
		{"flatcar pinned", cabpiv1.VariantFlatcar, "", "3.4.0", "3.4.0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := joinInput(tc.variant, "v1.34.0")
			in.Butane, in.IgnitionVersion = tc.butane, tc.pin
			out, err := ignition.Render(in)
			require.NoError(t, err)
			assert.Equal(t, tc.want, out.SpecVersion)
			assert.Equal(t, tc.want, specVersion(t, out.Data))
		})
	}
}

// Every bad input is an *ignition.Error of the expected kind and field, located in the Butane
// document where that is where the mistake is; none panics and none gives data.
func TestRenderRejectsBadInput(t *testing.T) {
	worker := func(mutate func(*ignition.Input)) ignition.Input {
		in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
		mutate(&in)
		return in
	}
	cases := []struct {
		name     string
		in       ignition.Input
		kind     ignition.ErrorKind
		field    string
		line     int
		contains string
	}{
		{"unknown variant", worker(func(in *ignition.Input) { in.Variant = "ubuntu" }), ignition.ErrInvalidInput, "variant", 0, "unknown variant"},
		{"butane not YAML", worker(func(in *ignition.Input) { in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files: [\n" }),
			ignition.ErrInvalidButane, "butane", 4, "not valid YAML"},
		{"butane wrong type", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/x\n      mode: rw\n"
		}), ignition.ErrInvalidButane, "butane", 6, "cannot unmarshal"},
		{"butane unknown key under strict", worker(func(in *ignition.Input) {
			in.Butane, in.ButaneStrict = "variant: flatcar\nversion: 1.0.0\nstorage:\n  filez: []\n", true
		}), ignition.ErrInvalidButane, "butane", 4, "strict"},
		{"butane of another variant", worker(func(in *ignition.Input) { in.Butane = "variant: fcos\nversion: 1.5.0\n" }),
			ignition.ErrVariantMismatch, "butane", 1, `"fcos" does not match`},
		{"butane for flatcar on fcos", worker(func(in *ignition.Input) {
			in.Variant, in.Butane = cabpiv1.VariantFCOS, flatcarSnippet
		}), ignition.ErrVariantMismatch, "butane", 1, `"flatcar" does not match the config's variant "fcos"`},
		{"butane unknown variant", worker(func(in *ignition.Input) { in.Butane = "variant: ubuntu\nversion: 1.0.0\n" }),
			ignition.ErrInvalidButane, "butane", 1, "unknown Butane variant"},
		{"butane unknown version", worker(func(in *ignition.Input) { in.Butane = "variant: flatcar\nversion: 9.9.9\n" }),
			ignition.ErrInvalidButane, "butane", 2, ""},
		{"butane experimental version", worker(func(in *ignition.Input) {
			in.Butane = "variant: fcos\nversion: 1.7.0-experimental\n"
			in.Variant = cabpiv1.VariantFCOS
		}),
			ignition.ErrInvalidButane, "butane", 2, ""},
		{"butane without version", worker(func(in *ignition.Input) { in.Butane = "variant: flatcar\n" }),
			ignition.ErrInvalidButane, "butane", 1, "no version"},
		{"butane writes the kubeadm config", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/kubeadm.yml\n      contents:\n        inline: x\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/kubeadm.yml"},
		{"butane path not simplified", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/./kubeadm.sh\n"
		}), ignition.ErrInvalidButane, "butane", 5, "not fully simplified"},
		{"file at an owned path through a dotted path", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/./kubeadm.sh", Content: []byte("x")}}
		}), ignition.ErrOwnedPathConflict, "files[0].path", 0, "/etc/kubeadm.sh"},
		{"butane links the sentinel", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /run/cluster-api/bootstrap-success.complete\n      target: /dev/null\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, ignition.SentinelPath},
		{"butane replaces /etc with a file", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /run/cluster-api\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, ""},
		{"butane defines kubeadm.service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kubeadm.service\n      enabled: false\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "kubeadm.service"},
		{"butane drop-in replaces ExecStart of kubeadm.service", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Service]\nExecStart=\nExecStart=/bin/true\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "sets ExecStart= in [Service]"},
		{"butane drop-in changes the unit type", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Service]\nType=simple\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "sets Type=simple"},
		{"butane drop-in runs kubeadm as another user", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Unit]\nAfter=x.service\n[Service]\nUser=core\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "sets User=core in [Service]: kubeadm must run as root"},
		{"butane drop-in resets the guard condition", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Unit]\nConditionPathExists=\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "guard ConditionPathExists=/etc/kubeadm.yml included"},
		{"butane drop-in resets every condition through another one", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Unit]\nConditionFileNotEmpty=\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "an empty ConditionFileNotEmpty= resets every condition"},
		{"butane drop-in keeps the unit from being active", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Service]\nRemainAfterExit=no\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "RemainAfterExit"},
		{"butane drop-in counts failure as success", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Service]\nSuccessExitStatus=1\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "a failed bootstrap would count as a success"},
		{"butane drop-in writes the sentinel after a failure", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Service]\nExecStopPost=/usr/bin/touch /run/cluster-api/bootstrap-success.complete\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "ExecStopPost"},
		{"butane drop-in sets BASH_ENV", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Service]\nEnvironment=\"A=1\" \"BASH_ENV=/opt/x\"\n")
		}), ignition.ErrOwnedPathConflict, "butane", 0, "BASH_ENV changes how bash runs the bootstrap script"},
		{"butane drop-in that does not parse", worker(func(in *ignition.Input) {
			in.Butane = butaneDropin("kubeadm.service", "[Service\nUser=core\n")
		}), ignition.ErrInvalidButane, "butane", 8, "invalid unit content"},
		{"spec file drop-in that does not parse", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/systemd/system/service.d/10-x.conf", Content: []byte("[Service\nUser=core\n")}}
		}), ignition.ErrOwnedPathConflict, "files[0].content", 0, "not a systemd unit file"},
		{"butane disables kubeadm.service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kubeadm.service\n      enabled: false\n      dropins:\n        - name: 10-x.conf\n          contents: \"[Unit]\\nAfter=x.service\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "disables unit kubeadm.service"},
		{"butane file drop-in for every service replaces ExecStart", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system/service.d/10-x.conf\n      contents:\n        inline: \"[Service]\\nExecStart=\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/systemd/system/service.d/10-x.conf for kubeadm.service sets ExecStart="},
		{"butane drop-in file with appended lines", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system/kubeadm.service.d/10-x.conf\n      contents:\n        inline: \"[Service]\\n\"\n      append:\n        - inline: \"Type=simple\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "sets Type=simple"},
		{"butane drop-in from a remote source", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system/kubeadm.service.d/10-x.conf\n      contents:\n        source: https://example.com/10-x.conf\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "cannot be checked"},
		{"butane links the drop-in directory of kubeadm.service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /etc/systemd/system/kubeadm.service.d\n      target: /opt/dropins\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "in or at a drop-in directory of kubeadm.service"},
		{"butane links the drop-in directory of every service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /etc/systemd/system/service.d\n      target: /opt/dropins\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "what a link points to cannot be checked"},
		{"butane merges a remote config", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nignition:\n  config:\n    merge:\n      - source: https://example.com/extra.ign\n"
		}), ignition.ErrInvalidButane, "butane", 0, "ignition.config.merge"},
		{"butane sets BASH_ENV for every service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system.conf.d/10-env.conf\n      contents:\n        inline: \"[Manager]\\nDefaultEnvironment=BASH_ENV=/opt/x\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "sets BASH_ENV for every service"},
		{"spec file sets BASH_ENV for every service", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/systemd/system.conf", Content: []byte("[Manager]\nDefaultEnvironment=\"A=1\" BASH_ENV=/opt/x\n")}}
		}), ignition.ErrOwnedPathConflict, "files[0].content", 0, "sets BASH_ENV for every service"},
		{"butane links a drop-in", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /etc/systemd/system/kubeadm.service.d/10-x.conf\n      target: /opt/x.conf\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "what a link points to cannot be checked"},
		{"butane replaces the config", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nignition:\n  config:\n    replace:\n      source: https://example.com/x.ign\n"
		}), ignition.ErrInvalidButane, "butane", 0, "replace"},
		{"butane reads a local file", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/x\n      contents:\n        local: x\n"
		}), ignition.ErrInvalidButane, "butane", 7, "files directory"},
		{"file at an owned path", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/kubeadm.yml", Content: []byte("x")}}
		}), ignition.ErrOwnedPathConflict, "files[0].path", 0, "/etc/kubeadm.yml"},
		{"spec file drop-in runs kubeadm as another user", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/systemd/system/kubeadm.service.d/10-x.conf", Content: []byte("[Service]\nUser=core\n")}}
		}), ignition.ErrOwnedPathConflict, "files[0].content", 0, "sets User=core"},
		{"spec file replaces kubeadm.service", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/systemd/system/kubeadm.service", Content: []byte("[Service]\n")}}
		}), ignition.ErrOwnedPathConflict, "files[0].path", 0, "/etc/systemd/system/kubeadm.service"},
		{"relative file path", worker(func(in *ignition.Input) { in.Files = []ignition.File{{Path: "etc/x"}} }),
			ignition.ErrInvalidInput, "files[0].path", 0, "not absolute"},
		{"file written twice", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/x"}, {Path: "/etc//x"}}
		}), ignition.ErrInvalidInput, "files[1].path", 0, "also written"},
		{"file mode out of range", worker(func(in *ignition.Input) { in.Files = []ignition.File{{Path: "/etc/x", Mode: 0o17777}} }),
			ignition.ErrInvalidInput, "files[0].permissions", 0, ""},
		{"bad owner", worker(func(in *ignition.Input) { in.Files = []ignition.File{{Path: "/etc/x", Owner: "a:b:c"}} }),
			ignition.ErrInvalidInput, "files[0].owner", 0, ""},
		{"snippet file clashes with a spec file", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/x", Content: []byte("a")}}
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/x\n"
		}), "", "", 0, "/etc/x"},
		{"snippet writes a certificate path", func() ignition.Input {
			in := controlPlaneJoinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/kubernetes/pki/ca.key\n"
			return in
		}(), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/kubernetes/pki/ca.key"},
		// Commands spliced into /etc/kubeadm.sh must end where they seem to, or they swallow the
		// kubeadm step while the sentinel is still written.
		{"pre-kubeadm command with an unclosed quote", worker(func(in *ignition.Input) {
			in.PreKubeadmCommands = []string{"echo ok", "true", "echo 'x"}
		}), ignition.ErrInvalidInput, "preKubeadmCommands[2]", 0,
			"preKubeadmCommands[2]: not a complete shell command: 1:6: reached EOF without closing quote"},
		{"pre-kubeadm command ending in a line continuation", worker(func(in *ignition.Input) {
			in.PreKubeadmCommands = []string{"echo pre \\"}
		}), ignition.ErrInvalidInput, "preKubeadmCommands[0]", 0, "line continuation"},
		{"pre-kubeadm command with an unclosed here-document", worker(func(in *ignition.Input) {
			in.PreKubeadmCommands = []string{"cat > /etc/x <<EOF\nhello"}
		}), ignition.ErrInvalidInput, "preKubeadmCommands[0]", 0, "unclosed here-document"},
		{"pre-kubeadm if without fi", worker(func(in *ignition.Input) {
			in.PreKubeadmCommands = []string{"if true; then echo x"}
		}), ignition.ErrInvalidInput, "preKubeadmCommands[0]", 0, "must end with `fi`"},
		{"post-kubeadm command with a trailing &&", worker(func(in *ignition.Input) {
			in.PostKubeadmCommands = []string{"echo a", "echo b &&"}
		}), ignition.ErrInvalidInput, "postKubeadmCommands[1]", 0, "must be followed by a statement"},
		{"post-kubeadm command with a trailing pipe", worker(func(in *ignition.Input) {
			in.PostKubeadmCommands = []string{"echo b |"}
		}), ignition.ErrInvalidInput, "postKubeadmCommands[0]", 0, "must be followed by a statement"},

		// Other ways to override or disable kubeadm.service.
		{"butane writes a drop-in for every service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system/service.d/10-x.conf\n      contents:\n        inline: \"[Service]\\nExecStart=\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/systemd/system/service.d"},
		{"butane overrides kubeadm.service in system.control", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /etc/systemd/system.control/kubeadm.service\n      target: /dev/null\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/systemd/system.control/kubeadm.service"},
		{"butane adds a drop-in in system.attached", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  directories:\n    - path: /etc/systemd/system.attached/kubeadm.service.d\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/systemd/system.attached/kubeadm.service.d"},
		{"butane writes Ignition's preset file", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system-preset/20-ignition.preset\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "20-ignition.preset"},
		{"butane preset disables kube*", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system-preset/10-x.preset\n      contents:\n        inline: \"enable foo.service\\n  disable   kube*\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, `line "disable   kube*" disables kubeadm.service`},
		{"butane gzipped preset disables every unit", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system-preset/10-x.preset\n      contents:\n        compression: gzip\n        source: " + gzipDataURL("disable *\n") + "\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, `"disable *"`},
		{"butane preset appends a disable line", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system-preset/10-x.preset\n      append:\n        - inline: \"disable kubeadm.service\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "disables kubeadm.service"},
		{"butane preset line split between contents and append", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system-preset/10-x.preset\n      contents:\n        inline: dis\n      append:\n        - inline: \"able kubeadm.service\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, `"disable kubeadm.service"`},
		{"butane preset from a remote source", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system-preset/10-x.preset\n      contents:\n        source: https://example.com/x.preset\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "cannot be checked"},
		{"butane links a preset file", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /etc/systemd/system-preset/10-x.preset\n      target: /opt/x.preset\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "cannot be checked"},
		{"spec file preset disables kubeadm.service", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/systemd/system-preset/10-x.preset", Content: []byte("disable kubeadm.service\n")}}
		}), ignition.ErrOwnedPathConflict, "files[0].content", 0, "disables kubeadm.service"},
		{"butane hard link to the kubeadm config", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /etc/x\n      target: /etc/kubeadm.yml\n      hard: true\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "hard link at /etc/x to /etc/kubeadm.yml"},
		{"butane hard link to the kubeadm script, relative", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /opt/x\n      target: etc/kubeadm.sh\n      hard: true\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "conflicts with /etc/kubeadm.sh"},
		{"butane masks kubeadm.service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kubeadm.service\n      mask: true\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "masks unit kubeadm.service"},
		{"butane disables a unit glob matching kubeadm.service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kube*.service\n      enabled: false\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "kube*.service, which matches kubeadm.service"},
		{"butane unit name reaching system.control", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: ../system.control/kubeadm.service\n      contents: \"[Service]\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/systemd/system.control/kubeadm.service"},
		{"butane drop-in name reaching service.d", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: foo.service\n      dropins:\n        - name: ../service.d/10-x.conf\n          contents: \"[Service]\\nExecStart=\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/systemd/system/service.d/10-x.conf for kubeadm.service sets ExecStart="},
		{"butane drop-in name reaching system.control", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kubeadm.service\n      dropins:\n        - name: ../../system.control/kubeadm.service.d/10-x.conf\n          contents: \"[Service]\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/systemd/system.control/kubeadm.service.d"},

		// Configs Ignition accepts but fails on at boot.
		{"file inside another file", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/opt/a", Content: []byte("a")}, {Path: "/opt/a/b", Content: []byte("b")}}
		}), ignition.ErrInvalidInput, "files[1].path", 0, "file /opt/a/b (written by files[1]) is inside /opt/a, a file written by files[0]"},
		{"snippet directory at a spec file", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/opt/a", Content: []byte("a")}}
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  directories:\n    - path: /opt/a\n"
		}), ignition.ErrInvalidInput, "butane", 0, "directory at /opt/a, where files[0] writes a file"},
		{"snippet link at a spec file", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/opt/a", Content: []byte("a")}}
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /opt/a\n      target: /opt/b\n"
		}), ignition.ErrInvalidInput, "butane", 0, "link at /opt/a, where files[0] writes a file"},
		{"snippet file inside a spec file", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/opt/a", Content: []byte("a")}}
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /opt/a/b/c\n"
		}), ignition.ErrInvalidInput, "butane", 0, "file /opt/a/b/c (written by the Butane snippet) is inside /opt/a, a file written by files[0]"},
		{"spec file inside a snippet link", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/opt/l/x", Content: []byte("a")}}
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /opt/l\n      target: /var/l\n"
		}), ignition.ErrInvalidInput, "butane", 0, "is inside /opt/l, a link written by the Butane snippet"},

		// Paths a shell would split or expand.
		{"file path with a space", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/a b", Content: []byte("a")}}
		}), ignition.ErrInvalidInput, "files[0].path", 0, `file path "/etc/a b" contains ' '`},
		{"file path with a command substitution", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/$(reboot)", Content: []byte("a")}}
		}), ignition.ErrInvalidInput, "files[0].path", 0, `contains '$'`},
		{"file path with a newline", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/a\nb", Content: []byte("a")}}
		}), ignition.ErrInvalidInput, "files[0].path", 0, `contains '\n'`},
		{"snippet directory with a semicolon", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  directories:\n    - path: /opt/a;b\n"
		}), ignition.ErrInvalidInput, "butane", 0, `directory path "/opt/a;b" contains ';'`},
		{"snippet link with a quote", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: \"/opt/a'b\"\n      target: /opt\n"
		}), ignition.ErrInvalidInput, "butane", 0, `contains '\''`},
		{"Kubernetes too old", worker(func(in *ignition.Input) { in.KubernetesVersion = "v1.21.9" }),
			ignition.ErrUnsupportedKubernetesVersion, "version", 0, "v1.21.9"},
		{"Kubernetes not a version", worker(func(in *ignition.Input) { in.KubernetesVersion = "latest" }),
			ignition.ErrUnsupportedKubernetesVersion, "version", 0, "latest"},
		{"Kubernetes missing", worker(func(in *ignition.Input) { in.KubernetesVersion = "" }),
			ignition.ErrUnsupportedKubernetesVersion, "version", 0, ""},
		{"Ignition 3.0.0 pinned on flatcar", worker(func(in *ignition.Input) { in.IgnitionVersion = "3.0.0" }),
			ignition.ErrUnsupportedIgnitionVersion, "ignitionVersion", 0, "3.0.0"},
		{"Ignition version that does not exist", worker(func(in *ignition.Input) { in.IgnitionVersion = "3.9.0" }),
			ignition.ErrUnsupportedIgnitionVersion, "ignitionVersion", 0, ""},
		{"pinned below the snippet", worker(func(in *ignition.Input) {
			in.Variant, in.IgnitionVersion, in.Butane = cabpiv1.VariantFCOS, "3.1.0", "variant: fcos\nversion: 1.5.0\n"
		}), ignition.ErrUnsupportedIgnitionVersion, "ignitionVersion", 0, "lower than 3.4.0"},
		{"unknown role", worker(func(in *ignition.Input) { in.Role = "etcd" }), ignition.ErrInvalidInput, "role", 0, "etcd"},
		{"join without configuration", worker(func(in *ignition.Input) { in.JoinConfiguration = nil }),
			ignition.ErrInvalidInput, "joinConfiguration", 0, ""},
		{"worker with a controlPlane section", func() ignition.Input {
			in := controlPlaneJoinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			in.Role, in.Certificates = ignition.RoleWorkerJoin, nil
			return in
		}(), ignition.ErrInvalidInput, "joinConfiguration.controlPlane", 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ignition.Render(tc.in)
			require.Error(t, err)
			assert.Nil(t, out.Data, "no data on error")
			var ierr *ignition.Error
			require.ErrorAs(t, err, &ierr, "input errors are *ignition.Error: %v", err)
			if tc.kind != "" {
				assert.Equal(t, tc.kind, ierr.Kind, ierr.Error())
			}
			if tc.field != "" {
				assert.Equal(t, tc.field, ierr.Place.String(), ierr.Error())
			}
			if tc.line != 0 {
				assert.Equal(t, tc.line, ierr.Line, ierr.Error())
			}
			assert.Contains(t, ierr.Error(), tc.contains)
			assert.NotContains(t, ierr.Error(), testToken, "errors never carry the token")
		})
	}
}

// Inputs close to the rejected ones render: the checks refuse what is harmful, not what looks
// like it.
func TestRenderAcceptsNearMisses(t *testing.T) {
	snippet := `variant: flatcar
version: 1.0.0
storage:
  files:
    - path: /etc/systemd/system-preset/10-x.preset
      contents:
        inline: |
          enable *
          # disable kubeadm.service
          disable kubelet.service
    - path: /etc/motd
      user:
        name: core
  directories:
    - path: /opt/a
  links:
    - path: /etc/kubeadm-config
      target: /etc/kubeadm.yml
systemd:
  units:
    - name: kubeadm-extra.service
      dropins:
        - name: 10-x.conf
          contents: "[Service]\n"
`
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.Butane = snippet
	in.Files = []ignition.File{{Path: "/opt/a/b", Content: []byte("b")}}
	in.PreKubeadmCommands = []string{`echo a \\`, "cat > /etc/x <<EOF\nhello\nEOF", "if true; then\n  echo x\nfi"}
	out, err := ignition.Render(in)
	require.NoError(t, err)
	script := fileContent(t, out.Data, ignition.KubeadmScriptPath)
	assert.Contains(t, script, "\nfi\n\n)\n", "an empty line before the end of the subshell")

	// The owner-only entry keeps no mode, so Ignition keeps the existing file's.
	cfg, _, err := ignconfig.Parse(out.Data)
	require.NoError(t, err)
	for _, f := range cfg.Storage.Files {
		if f.Path == "/etc/motd" {
			assert.Nil(t, f.Mode, "no mode for a file without contents")
		}
	}
}

// The exported validators agree with Render, so admission and reconcile reject the same input.
func TestValidatorsAgreeWithRender(t *testing.T) {
	require.NoError(t, ignition.ValidateKubernetesVersion("v1.22.0"))
	require.Error(t, ignition.ValidateKubernetesVersion("v1.21.0"))
	// A leading zero parses (tolerantly), but names no release and no kubelet's version.
	for _, v := range []string{"v1.034.0", "v01.34.0", "v1.34.04", "1.034"} {
		err := ignition.ValidateKubernetesVersion(v)
		require.ErrorContains(t, err, "leading zero", v)
		_, err = ignition.Render(joinInput(cabpiv1.VariantFlatcar, v))
		var ierr *ignition.Error
		require.ErrorAs(t, err, &ierr, v)
		assert.Equal(t, ignition.ErrUnsupportedKubernetesVersion, ierr.Kind, v)
	}
	for _, v := range []string{"v1.34.0", "1.34", "v1.34.10", "v1.35.0-rc.0", "v1.34.0+build.01"} {
		require.NoError(t, ignition.ValidateKubernetesVersion(v), v)
	}
	require.NoError(t, ignition.ValidateIgnitionVersion(cabpiv1.VariantFlatcar, ""))
	assert.Equal(t, []string{"3.3.0", "3.4.0"}, ignition.AllowedIgnitionVersions(cabpiv1.VariantFlatcar))
	for _, v := range ignition.AllowedIgnitionVersions(cabpiv1.VariantFCOS) {
		require.NoError(t, ignition.ValidateIgnitionVersion(cabpiv1.VariantFCOS, v))
		in := joinInput(cabpiv1.VariantFCOS, "v1.34.0")
		in.IgnitionVersion = v
		out, err := ignition.Render(in)
		require.NoError(t, err, v)
		assert.Equal(t, v, out.SpecVersion)
	}
	assert.Nil(t, ignition.AllowedIgnitionVersions("ubuntu"))
}

// fileContent decodes one file of a rendered config, compressed or wrapped as it may be.
func fileContent(t testing.TB, data []byte, path string) string {
	t.Helper()
	files, err := ignition.ReadFiles(data)
	require.NoError(t, err)
	content, ok := files[path]
	require.True(t, ok, "file not in config: %s", path)
	return string(content)
}

// specVersion reads the version a config declares (ignition/v2/config.Parse returns the config
// translated to the newest spec, so its version field says nothing about the input).
func specVersion(t testing.TB, data []byte) string {
	t.Helper()
	var head struct {
		Ignition struct{ Version string } `json:"ignition"`
	}
	require.NoError(t, json.Unmarshal(data, &head))
	return head.Ignition.Version
}

func deepString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// gzipDataURL is s gzipped in a base64 data URL, as a compressed Ignition resource.
func gzipDataURL(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return "data:;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}
