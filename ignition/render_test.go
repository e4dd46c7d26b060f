package ignition_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// goldenCases cover every role on both variants, with and without a user snippet, and both
// kubeadm API versions: v1beta3 (Kubernetes 1.30) and v1beta4 (1.31 and later).
func goldenCases() map[string]ignition.Input {
	withSnippet := func(in ignition.Input, doc string) ignition.Input {
		in.Butane = doc
		in.PreKubeadmCommands = []string{"systemctl enable --now containerd"}
		in.PostKubeadmCommands = []string{"echo bootstrapped > /var/log/cabpi.log"}
		in.Files = []ignition.File{{Path: "/etc/cabpi/hello", Content: []byte("hello\n"), Mode: 0o640, Owner: "500:500"}}
		return in
	}
	return map[string]ignition.Input{
		"worker-flatcar-v1.34.0":               joinInput(ignition.VariantFlatcar, "v1.34.0"),
		"worker-flatcar-snippet-v1.34.0":       withSnippet(joinInput(ignition.VariantFlatcar, "v1.34.0"), flatcarSnippet),
		"worker-fcos-v1.34.0":                  joinInput(ignition.VariantFCOS, "v1.34.0"),
		"worker-fcos-snippet-v1.34.0":          withSnippet(joinInput(ignition.VariantFCOS, "v1.34.0"), fcosSnippet),
		"worker-flatcar-v1.30.4":               joinInput(ignition.VariantFlatcar, "v1.30.4"),
		"init-flatcar-v1.34.0":                 initInput(ignition.VariantFlatcar, "v1.34.0"),
		"init-fcos-v1.34.0":                    initInput(ignition.VariantFCOS, "v1.34.0"),
		"init-flatcar-v1.30.4":                 initInput(ignition.VariantFlatcar, "v1.30.4"),
		"init-fcos-snippet-v1.31.0":            withSnippet(initInput(ignition.VariantFCOS, "v1.31.0"), fcosSnippet),
		"controlplane-flatcar-v1.34.0":         controlPlaneJoinInput(ignition.VariantFlatcar, "v1.34.0"),
		"controlplane-fcos-v1.34.0":            controlPlaneJoinInput(ignition.VariantFCOS, "v1.34.0"),
		"controlplane-fcos-v1.30.4":            controlPlaneJoinInput(ignition.VariantFCOS, "v1.30.4"),
		"controlplane-flatcar-snippet-v1.31.0": withSnippet(controlPlaneJoinInput(ignition.VariantFlatcar, "v1.31.0"), flatcarSnippet),
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
			golden(t, name+".json", pretty.Bytes())
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
		{joinInput(ignition.VariantFlatcar, "v1.30.4"), "kubeadm.k8s.io/v1beta3", []string{"JoinConfiguration"},
			[]string{testToken, "node.cluster.x-k8s.io/uninitialized", "node-labels: pool=default"}, []string{"controlPlane:"}},
		{joinInput(ignition.VariantFCOS, "v1.31.0"), "kubeadm.k8s.io/v1beta4", []string{"JoinConfiguration"},
			[]string{testToken, "node.cluster.x-k8s.io/uninitialized", "value: pool=default"}, []string{"controlPlane:"}},
		{controlPlaneJoinInput(ignition.VariantFlatcar, "v1.34.0"), "kubeadm.k8s.io/v1beta4", []string{"JoinConfiguration"},
			[]string{testToken, "controlPlane:", "advertiseAddress: 10.0.0.2"}, []string{"node.cluster.x-k8s.io/uninitialized"}},
		{initInput(ignition.VariantFCOS, "v1.30.4"), "kubeadm.k8s.io/v1beta3", []string{"ClusterConfiguration", "InitConfiguration"},
			[]string{"clusterName: demo", "podSubnet: 192.168.0.0/16", "kubernetesVersion: v1.30.4", "controlPlaneEndpoint: " + testEndpoint},
			[]string{"node.cluster.x-k8s.io/uninitialized", testToken}},
		{initInput(ignition.VariantFlatcar, "v1.34.0"), "kubeadm.k8s.io/v1beta4", []string{"ClusterConfiguration", "InitConfiguration"},
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
	in := joinInput(ignition.VariantFlatcar, "v1.34.0")
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
			before := fmt.Sprintf("%#v", in)
			beforeJoin, beforeInit := deepString(in.JoinConfiguration), deepString(in.InitConfiguration)
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
		})
	}
}

// The version emitted is the variant's floor, raised by the snippet's version, or the pin.
func TestSpecVersionSelection(t *testing.T) {
	cases := []struct {
		name    string
		variant ignition.Variant
		butane  string
		pin     string
		want    string
	}{
		{"flatcar floor", ignition.VariantFlatcar, "", "", "3.3.0"},
		{"fcos floor", ignition.VariantFCOS, "", "", "3.0.0"},
		{"flatcar 1.1.0 snippet", ignition.VariantFlatcar, "variant: flatcar\nversion: 1.1.0\n", "", "3.4.0"},
		{"fcos 1.5.0 snippet", ignition.VariantFCOS, "variant: fcos\nversion: 1.5.0\n", "", "3.4.0"},
		{"fcos 1.6.0 snippet", ignition.VariantFCOS, "variant: fcos\nversion: 1.6.0\n", "", "3.5.0"},
		{"fcos pinned above snippet", ignition.VariantFCOS, "variant: fcos\nversion: 1.1.0\n", "3.6.0", "3.6.0"},
		{"flatcar pinned", ignition.VariantFlatcar, "", "3.4.0", "3.4.0"},
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
		in := joinInput(ignition.VariantFlatcar, "v1.34.0")
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
		{"butane unknown variant", worker(func(in *ignition.Input) { in.Butane = "variant: ubuntu\nversion: 1.0.0\n" }),
			ignition.ErrInvalidButane, "butane", 1, "unknown Butane variant"},
		{"butane unknown version", worker(func(in *ignition.Input) { in.Butane = "variant: flatcar\nversion: 9.9.9\n" }),
			ignition.ErrInvalidButane, "butane", 2, ""},
		{"butane experimental version", worker(func(in *ignition.Input) {
			in.Butane = "variant: fcos\nversion: 1.7.0-experimental\n"
			in.Variant = ignition.VariantFCOS
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
		}), ignition.ErrOwnedPathConflict, "files[0]", 0, "/etc/kubeadm.sh"},
		{"butane links the sentinel", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /run/cluster-api/bootstrap-success.complete\n      target: /dev/null\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, ignition.SentinelPath},
		{"butane replaces /etc with a file", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /run/cluster-api\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, ""},
		{"butane defines kubeadm.service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kubeadm.service\n      enabled: false\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "kubeadm.service"},
		{"butane adds a drop-in to kubeadm.service", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kubeadm.service\n      dropins:\n        - name: x.conf\n          contents: \"[Service]\\n\"\n"
		}), ignition.ErrOwnedPathConflict, "butane", 0, "drop-ins"},
		{"butane replaces the config", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nignition:\n  config:\n    replace:\n      source: https://example.com/x.ign\n"
		}), ignition.ErrInvalidButane, "butane", 0, "replace"},
		{"butane reads a local file", worker(func(in *ignition.Input) {
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/x\n      contents:\n        local: x\n"
		}), ignition.ErrInvalidButane, "butane", 7, "files directory"},
		{"file at an owned path", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/kubeadm.yml", Content: []byte("x")}}
		}), ignition.ErrOwnedPathConflict, "files[0]", 0, "/etc/kubeadm.yml"},
		{"file under the unit's drop-in directory", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/systemd/system/kubeadm.service.d/10-x.conf", Content: []byte("x")}}
		}), ignition.ErrOwnedPathConflict, "files[0]", 0, "kubeadm.service"},
		{"relative file path", worker(func(in *ignition.Input) { in.Files = []ignition.File{{Path: "etc/x"}} }),
			ignition.ErrInvalidInput, "files[0]", 0, "not absolute"},
		{"file written twice", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/x"}, {Path: "/etc//x"}}
		}), ignition.ErrInvalidInput, "files[1]", 0, "also written"},
		{"file mode out of range", worker(func(in *ignition.Input) { in.Files = []ignition.File{{Path: "/etc/x", Mode: 0o17777}} }),
			ignition.ErrInvalidInput, "files[0]", 0, ""},
		{"bad owner", worker(func(in *ignition.Input) { in.Files = []ignition.File{{Path: "/etc/x", Owner: "a:b:c"}} }),
			ignition.ErrInvalidInput, "files[0]", 0, ""},
		{"snippet file clashes with a spec file", worker(func(in *ignition.Input) {
			in.Files = []ignition.File{{Path: "/etc/x", Content: []byte("a")}}
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/x\n"
		}), "", "", 0, "/etc/x"},
		{"snippet writes a certificate path", func() ignition.Input {
			in := controlPlaneJoinInput(ignition.VariantFlatcar, "v1.34.0")
			in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/kubernetes/pki/ca.key\n"
			return in
		}(), ignition.ErrOwnedPathConflict, "butane", 0, "/etc/kubernetes/pki/ca.key"},
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
			in.Variant, in.IgnitionVersion, in.Butane = ignition.VariantFCOS, "3.1.0", "variant: fcos\nversion: 1.5.0\n"
		}), ignition.ErrUnsupportedIgnitionVersion, "ignitionVersion", 0, "lower than 3.4.0"},
		{"unknown role", worker(func(in *ignition.Input) { in.Role = "etcd" }), ignition.ErrInvalidInput, "role", 0, "etcd"},
		{"join without configuration", worker(func(in *ignition.Input) { in.JoinConfiguration = nil }),
			ignition.ErrInvalidInput, "joinConfiguration", 0, ""},
		{"worker with a controlPlane section", func() ignition.Input {
			in := controlPlaneJoinInput(ignition.VariantFlatcar, "v1.34.0")
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
				assert.Equal(t, tc.field, ierr.Field, ierr.Error())
			}
			if tc.line != 0 {
				assert.Equal(t, tc.line, ierr.Line, ierr.Error())
			}
			assert.Contains(t, ierr.Error(), tc.contains)
			assert.NotContains(t, ierr.Error(), testToken, "errors never carry the token")
		})
	}
}

// The exported validators agree with Render, so admission and reconcile reject the same input.
func TestValidatorsAgreeWithRender(t *testing.T) {
	require.NoError(t, ignition.ValidateButane(ignition.VariantFlatcar, flatcarSnippet, true))
	require.NoError(t, ignition.ValidateButane(ignition.VariantFCOS, "", true))
	err := ignition.ValidateButane(ignition.VariantFCOS, flatcarSnippet, false)
	var ierr *ignition.Error
	require.ErrorAs(t, err, &ierr)
	assert.Equal(t, ignition.ErrVariantMismatch, ierr.Kind)

	require.NoError(t, ignition.ValidateKubernetesVersion("v1.22.0"))
	require.Error(t, ignition.ValidateKubernetesVersion("v1.21.0"))
	require.NoError(t, ignition.ValidateIgnitionVersion(ignition.VariantFlatcar, ""))
	assert.Equal(t, []string{"3.3.0", "3.4.0"}, ignition.AllowedIgnitionVersions(ignition.VariantFlatcar))
	for _, v := range ignition.AllowedIgnitionVersions(ignition.VariantFCOS) {
		require.NoError(t, ignition.ValidateIgnitionVersion(ignition.VariantFCOS, v))
		in := joinInput(ignition.VariantFCOS, "v1.34.0")
		in.IgnitionVersion = v
		out, err := ignition.Render(in)
		require.NoError(t, err, v)
		assert.Equal(t, v, out.SpecVersion)
	}
	assert.Nil(t, ignition.AllowedIgnitionVersions("ubuntu"))
}

// fileContent decodes one file of a rendered config.
func fileContent(t testing.TB, data []byte, path string) string {
	t.Helper()
	cfg, _, err := ignconfig.Parse(data)
	require.NoError(t, err)
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			require.NotNil(t, f.Contents.Source, path)
			content, err := decodeDataURL(*f.Contents.Source)
			require.NoError(t, err, path)
			return content
		}
	}
	require.Failf(t, "file not in config", "%s", path)
	return ""
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
