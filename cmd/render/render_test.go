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

package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/golden"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = Main(args, strings.NewReader(""), &out, &errOut)
	return out.String(), errOut.String(), err
}

func TestRenderGolden(t *testing.T) {
	cases := []struct {
		input, role, version string
		butane               bool
	}{
		{"worker-flatcar.yaml", "worker", "v1.34.0", false},
		{"worker-flatcar.yaml", "worker", "v1.34.0", true},
		{"worker-flatcar.yaml", "init", "v1.30.4", false},
		{"controlplane-fcos.yaml", "control-plane", "v1.34.0", false},
		{"controlplane-fcos.yaml", "init", "v1.34.0", true},
		// The examples of docs/: node names from cloud metadata, the cloud providers' Flatcar
		// drop-in, external etcd, file discovery.
		{"docs:node-name-aws.yaml", "worker", "v1.34.0", false},
		{"docs:node-name-aws.yaml", "init", "v1.34.0", false},
		{"docs:node-name-azure.yaml", "worker", "v1.34.0", false},
		{"docs:node-name-openstack.yaml", "worker", "v1.34.0", false},
		{"docs:flatcar-metadata-dropin.yaml", "worker", "v1.34.0", false},
		{"docs:external-etcd.yaml", "init", "v1.34.0", false},
		{"docs:external-etcd.yaml", "control-plane", "v1.34.0", false},
		{"docs:file-discovery-exec.yaml", "worker", "v1.34.0", false},
	}
	for _, tc := range cases {
		file := filepath.Join("testdata", tc.input)
		if doc, ok := strings.CutPrefix(tc.input, "docs:"); ok {
			file = filepath.Join("..", "..", "docs", "examples", doc)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".yaml") + "-" + tc.role + "-" + tc.version
		ext := ".json"
		if tc.butane {
			ext = ".bu"
		}
		t.Run(name+ext, func(t *testing.T) {
			args := []string{"-f", file, "--role", tc.role, "--kubernetes-version", tc.version}
			if tc.butane {
				args = append(args, "--butane")
			}
			out, stderr, err := run(t, args...)
			require.NoError(t, err, stderr)
			require.Contains(t, stderr, "rendered Ignition")
			golden.Assert(t, name+ext, []byte(out))
			if !tc.butane {
				_, rpt, err := ignconfig.Parse([]byte(out))
				require.NoError(t, err, rpt.String())
			}
		})
	}
}

// The Butane view must translate back into the very config it was made from.
func TestButaneViewRoundTrips(t *testing.T) {
	for _, tc := range []struct{ input, role string }{
		{"worker-flatcar.yaml", "worker"},
		{"worker-flatcar.yaml", "init"},
		{"controlplane-fcos.yaml", "control-plane"},
		{"controlplane-fcos.yaml", "init"},
	} {
		t.Run(tc.input+"/"+tc.role, func(t *testing.T) {
			doc, err := os.ReadFile(filepath.Join("testdata", tc.input))
			require.NoError(t, err)
			spec, err := configinput.SpecFromYAML(doc)
			require.NoError(t, err)
			out, err := configinput.RenderOffline(t.Context(), spec, ignition.Role(tc.role), DefaultVersion, &bytes.Buffer{})
			require.NoError(t, err)
			bu, err := ToButane(out.Data, spec.Variant)
			require.NoError(t, err)

			back, rpt, err := butane.TranslateBytes(bu, butanecommon.TranslateBytesOptions{})
			require.NoError(t, err, "%s\n%s", rpt.String(), bu)
			require.Equal(t, meaning(t, out.Data), meaning(t, back))
		})
	}
}

// meaning parses a config, decodes file contents and drops what Ignition treats as absent
// (null, "", {}, []), so two
// configs compare equal exactly when Ignition would act on them the same way.
func meaning(t *testing.T, data []byte) any {
	t.Helper()
	cfg, rpt, err := ignconfig.Parse(data)
	require.NoError(t, err, rpt.String())
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(raw, &v))
	return prune(v)
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		inlineContents(t) // compare decoded contents: Butane gzips large ones, cabpi never does
		out := map[string]any{}
		for k, val := range t {
			if p := prune(val); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		if len(t) == 0 {
			return nil
		}
		for i := range t {
			t[i] = prune(t[i])
		}
		return t
	case string:
		if t == "" {
			return nil
		}
	}
	return v
}

func TestRenderRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
		return p
	}
	cases := []struct {
		name, yaml string
		args       []string
		wantErr    string
	}{
		{
			name:    "invalid butane reports line and column",
			yaml:    "kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n  butane:\n    inline: |\n      variant: flatcar\n      version: 1.0.0\n      storage:\n        files:\n        - path: /x\n          mode: [\n",
			wantErr: "line",
		},
		{
			name:    "wrong variant",
			yaml:    "kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n  variant: fcos\n  butane:\n    inline: |\n      variant: flatcar\n      version: 1.0.0\n",
			wantErr: "variant",
		},
		{
			name:    "butane from a ConfigMap cannot be previewed",
			yaml:    "kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n  butane:\n    contentFrom:\n      configMap: {name: cm, key: k}\n",
			wantErr: "cannot read ConfigMap",
		},
		{
			name:    "invalid container linux config reports its line",
			yaml:    "kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n  containerLinuxConfig:\n    inline: |\n      storage:\n        files:\n          - path: /x\n            mode: rw\n",
			wantErr: "spec.containerLinuxConfig.inline: Invalid value: the Container Linux Config does not transpile: yaml: unmarshal errors: line 4: cannot unmarshal",
		},
		{
			name:    "butane and container linux config",
			yaml:    "kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n  butane:\n    inline: \"variant: flatcar\\nversion: 1.0.0\\n\"\n  containerLinuxConfig:\n    inline: \"systemd: {}\\n\"\n",
			wantErr: "set butane or containerLinuxConfig, not both",
		},
		{
			name:    "container linux config from a Secret cannot be previewed",
			yaml:    "kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n  containerLinuxConfig:\n    contentFrom:\n      secret: {name: s, key: k}\n",
			wantErr: "spec.containerLinuxConfig.contentFrom.secret: rendering offline cannot read Secret",
		},
		{
			name:    "not our kind",
			yaml:    "kind: KubeadmConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1beta2\n",
			wantErr: "neither IgnitionConfig nor IgnitionConfigTemplate",
		},
		{
			name:    "unknown role",
			yaml:    "kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\n",
			args:    []string{"--role", "etcd"},
			wantErr: "--role",
		},
		{
			name:    "unsupported Kubernetes version",
			yaml:    "kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\n",
			args:    []string{"--kubernetes-version", "v1.21.0"},
			wantErr: "1.21",
		},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := write(strings.Repeat("x", i+1)+".yaml", tc.yaml)
			out, _, err := run(t, append([]string{"-f", p}, tc.args...)...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.wantErr)
			require.Empty(t, out, "nothing may be printed for bad input")
		})
	}
}

func TestFileSecretsBecomePlaceholders(t *testing.T) {
	p := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte("kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n  files:\n  - path: /etc/secret.conf\n    contentFrom:\n      secret: {name: creds, key: token}\n"), 0o644))
	out, stderr, err := run(t, "-f", p, "--butane")
	require.NoError(t, err)
	require.Contains(t, stderr, "warning: spec.files[0].contentFrom.secret")
	require.Contains(t, out, "placeholder: Secret creds key token")
}

// --platform feeds the same path as spec.platform: docker renders nothing compressed, a platform
// with a limit reports it, data over it is wrapped and reported with what to do, and the Butane
// view shows what a wrapper carries.
func TestPlatformFlag(t *testing.T) {
	file := filepath.Join("testdata", "worker-flatcar.yaml")

	out, stderr, err := run(t, "-f", file, "--platform", "docker")
	require.NoError(t, err, stderr)
	require.NotContains(t, out, "compression")
	require.Contains(t, stderr, "uncompressed; platform docker, no limit")

	out, stderr, err = run(t, "-f", file, "--platform", "aws", "--role", "init")
	require.NoError(t, err, stderr)
	require.Contains(t, out, `"compression": "gzip"`)
	require.Contains(t, stderr, "compressed where smaller; platform aws, limit 16384")
	require.NotContains(t, stderr, "warning")

	// Over the limit: 60 KiB of text the Butane snippet writes in 300 small files, each too small
	// to gzip on its own.
	var doc strings.Builder
	doc.WriteString("kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n  butane:\n    inline: |\n" +
		"      variant: flatcar\n      version: 1.0.0\n      storage:\n        files:\n")
	for i := range 300 {
		fmt.Fprintf(&doc, "        - path: /etc/cabpi/conf.d/%03d.conf\n          contents:\n            inline: \"[unit-%03d]\\nenabled = true\\nweight = 10\\nowner = a team\\n\"\n", i, i)
	}
	big := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(big, []byte(doc.String()), 0o644))
	out, stderr, err = run(t, "-f", big, "--platform", "aws")
	require.NoError(t, err, stderr)
	require.Contains(t, out, `"replace"`)
	require.Contains(t, stderr, "wrapped gzipped")
	require.NotContains(t, stderr, "warning", "the wrapper fits")
	bu, _, err := run(t, "-f", big, "--platform", "aws", "--butane")
	require.NoError(t, err)
	require.Contains(t, bu, "path: /etc/cabpi/conf.d/299.conf", "the Butane view shows the wrapped config")

	_, stderr, err = run(t, "-f", big, "--platform", "docker")
	require.NoError(t, err, stderr)
	require.NotContains(t, stderr, "warning", "docker has no limit")

	for i := range 300 {
		fmt.Fprintf(&doc, "        - path: /etc/cabpi/more.d/%03d.bin\n          contents:\n            source: data:;base64,%s\n", i,
			base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%x", sha256.Sum256(fmt.Appendf(nil, "%d", i)))))
	}
	require.NoError(t, os.WriteFile(big, []byte(doc.String()), 0o644))
	_, stderr, err = run(t, "-f", big, "--platform", "aws")
	require.NoError(t, err, "over the limit is reported, not refused")
	require.Contains(t, stderr, "warning: the bootstrap data is")
	require.Contains(t, stderr, "16384-byte user-data limit of platform aws")

	_, _, err = run(t, "-f", file, "--platform", "AWS")
	require.ErrorContains(t, err, "--platform")
}

// Butane's warnings go to stderr with the field and the place in the document; the render goes
// on. With strict they fail the render.
func TestButaneWarningsOnStderr(t *testing.T) {
	dir := t.TempDir()
	doc := func(strict bool) string {
		cfg := &cabpiv1.IgnitionConfig{
			TypeMeta:   metav1.TypeMeta{APIVersion: cabpiv1.GroupVersion.String(), Kind: "IgnitionConfig"},
			ObjectMeta: metav1.ObjectMeta{Name: "w"},
			Spec: cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Strict: strict,
				Inline: "variant: flatcar\nversion: 1.0.0\nstorage:\n  filez:\n  - path: /etc/motd\n"}},
		}
		b, err := yaml.Marshal(cfg)
		require.NoError(t, err)
		p := filepath.Join(dir, fmt.Sprintf("strict-%t.yaml", strict))
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	_, stderr, err := run(t, "-f", doc(false))
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "warning: spec.butane: line 4, column 3: unused key filez")

	_, _, err = run(t, "-f", doc(true))
	require.ErrorContains(t, err, "filez")
}

// `cabpi render` of spec.kubernetes shows what Ignition downloads (the release binaries and
// pinned by verification.hash in the staging directory, the extension image), the kubelet's unit for
// /opt/bin, and the bootstrap's step; the Butane view of it translates back to the same config.
func TestRenderKubernetesSources(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, spec, version string
		// digests is the --digests file, "" for none.
		digests string
		// contains are lines of the JSON output; butane, of the Butane view; stderr, of the report.
		contains, butane []string
		stderr           string
	}{
		{
			name:    "binaries",
			spec:    "  kubernetes:\n    source: binaries\n    binaries:\n      kubectl: true\n",
			version: "v1.34.4",
			contains: []string{
				`"path": "/opt/cabpi/kubernetes/v1.34.4/kubeadm"`,
				`"source": "https://dl.k8s.io/release/v1.34.4/bin/linux/amd64/kubeadm"`,
				// The official release's digest, from cabpi's catalogue.
				`"hash": "sha256-b967f1fa0e36621c402d38bb560eb4a943954d5cf5a00e5150842f6f5da73455"`,
				`"path": "/opt/cabpi/kubernetes/v1.34.4/kubelet"`,
				`"path": "/opt/cabpi/kubernetes/v1.34.4/kubectl"`,
				`"name": "kubelet.service"`,
				`ExecStart=/opt/bin/kubelet\n`,
			},
			butane: []string{
				"cabpi_install_binaries v1.34.4 /opt/cabpi/kubernetes/v1.34.4 kubeadm kubelet kubectl\n",
				"source: https://dl.k8s.io/release/v1.34.4/bin/linux/amd64/kubelet\n",
				"hash: sha256-03b8fea715a7ef82eeaf518dee34c72670c57cc7bc40dc1320c04fbf4f15172f\n",
			},
		},
		{
			name:    "sysext",
			spec:    "  kubernetes:\n    source: sysext\n    arch: arm64\n    digestsFrom:\n      configMap: {name: bakery, key: SHA256SUMS}\n",
			version: "v1.34.4",
			digests: strings.Repeat("e", 64) + "  kubernetes-v1.34.4-arm64.raw\n",
			contains: []string{
				`"path": "/opt/extensions/kubernetes/kubernetes-v1.34.4-arm64.raw"`,
				`"source": "https://extensions.flatcar.org/extensions/kubernetes-v1.34.4-arm64.raw"`,
				`"hash": "sha256-` + strings.Repeat("e", 64) + `"`,
				`"path": "/etc/extensions/kubernetes.raw"`,
				`"target": "/opt/extensions/kubernetes/kubernetes-v1.34.4-arm64.raw"`,
				`After=systemd-sysext.service\n`,
			},
			butane: []string{"cabpi_use_sysext v1.34.4\n", "target: /opt/extensions/kubernetes/kubernetes-v1.34.4-arm64.raw\n"},
		},
		{
			name:     "sysext, its digests not given",
			spec:     "  kubernetes:\n    source: sysext\n    digestsFrom:\n      configMap: {name: bakery, key: SHA256SUMS}\n",
			version:  "v1.34.4",
			contains: []string{`"hash": "sha256-` + ignition.StandInDigest + `"`},
			stderr:   "spec.kubernetes.digestsFrom is not read offline",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name+".yaml")
			require.NoError(t, os.WriteFile(p, []byte("kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n"+tc.spec), 0o644))
			args := []string{"-f", p, "--kubernetes-version", tc.version}
			if tc.digests != "" {
				d := filepath.Join(dir, tc.name+".sha256sums")
				require.NoError(t, os.WriteFile(d, []byte(tc.digests), 0o644))
				args = append(args, "--digests", d)
			}
			out, stderr, err := run(t, args...)
			require.NoError(t, err, stderr)
			require.Contains(t, stderr, "rendered Ignition")
			require.Contains(t, stderr, tc.stderr)
			for _, s := range tc.contains {
				require.Contains(t, out, s)
			}
			_, rpt, err := ignconfig.Parse([]byte(out))
			require.NoError(t, err, rpt.String())

			bu, stderr, err := run(t, append(args, "--butane")...)
			require.NoError(t, err, stderr)
			for _, s := range tc.butane {
				require.Contains(t, bu, s)
			}
			back, rpt, err := butane.TranslateBytes([]byte(bu), butanecommon.TranslateBytesOptions{})
			require.NoError(t, err, "%s\n%s", rpt.String(), bu)
			require.Equal(t, meaning(t, []byte(out)), meaning(t, back))
		})
	}

	// Admission's rules hold offline too: the error names the field.
	p := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(p, []byte("kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nspec:\n"+
		"  variant: fcos\n  kubernetes:\n    source: sysext\n"), 0o644))
	out, _, err := run(t, "-f", p)
	require.ErrorContains(t, err, "kubernetes.sysext.baseURL")
	require.Empty(t, out)
}

// A file of several documents (what clusterctl generate cluster writes): --name picks the
// config, and its owner's infrastructure machine template in the same file says how the data
// reaches the machine. On CAPA, data in S3 has no user-data limit, and a Fedora CoreOS config
// behind CAPA's default Ignition 2.3 stub is refused, naming spec.ignition.version.
func TestRenderGeneratedCluster(t *testing.T) {
	cluster := func(variant, awsIgnition string) string {
		return `apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineDeployment
metadata: {name: demo-md-0}
spec:
  clusterName: demo
  template:
    spec:
      clusterName: demo
      bootstrap:
        configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: IgnitionConfigTemplate, name: demo-md-0}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: AWSMachineTemplate, name: demo-md-0}
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: AWSMachineTemplate
metadata: {name: demo-md-0}
spec:
  template:
    spec:
      instanceType: t3.large
` + awsIgnition + `
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha1
kind: IgnitionConfigTemplate
metadata: {name: demo-md-0}
spec: {template: {spec: {variant: ` + variant + `}}}
---
apiVersion: bootstrap.cluster.x-k8s.io/v1alpha1
kind: IgnitionConfig
metadata: {name: demo-control-plane-0}
spec: {variant: ` + variant + `}
`
	}
	write := func(doc string) string {
		f := filepath.Join(t.TempDir(), "cluster.yaml")
		require.NoError(t, os.WriteFile(f, []byte(doc), 0o644))
		return f
	}

	_, _, err := run(t, "-f", write(cluster("flatcar", "")))
	require.ErrorContains(t, err, "the file holds 2 configs (IgnitionConfigTemplate demo-md-0, IgnitionConfig demo-control-plane-0): choose one with --name")
	_, _, err = run(t, "-f", write(cluster("flatcar", "")), "--name", "nothing")
	require.ErrorContains(t, err, `no IgnitionConfig or IgnitionConfigTemplate named "nothing"`)

	// The control-plane config has no owner in the file: no delivery known, no limit.
	_, stderr, err := run(t, "-f", write(cluster("fcos", "")), "--name", "demo-control-plane-0")
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "platform not known, no limit")

	_, _, err = run(t, "-f", write(cluster("fcos", "")), "--name", "demo-md-0")
	require.ErrorContains(t, err, `AWSMachineTemplate demo-md-0 keeps the bootstrap data in S3`)
	require.ErrorContains(t, err, `Set spec.ignition.version to "3.4"`)

	_, stderr, err = run(t, "-f", write(cluster("fcos", "      ignition: {version: \"3.4\"}")), "--name", "demo-md-0")
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "platform aws (AWSMachineTemplate demo-md-0: data in S3, the user data is CAPA's Ignition 3.4 stub), no limit")

	_, stderr, err = run(t, "-f", write(cluster("fcos", "      ignition: {version: \"2.3\", storageType: UnencryptedUserData}")), "--name", "demo-md-0")
	require.NoError(t, err, stderr)
	require.Contains(t, stderr, "platform aws (AWSMachineTemplate demo-md-0), limit 16384")
}

// The three independent mistakes of the renderer's and the webhook's tests, through the command:
// one run names all three at their field paths, as admission would, and prints no config.
func TestRenderListsEveryFinding(t *testing.T) {
	out, _, err := run(t, "-f", filepath.Join("testdata", "three-mistakes.yaml"))
	require.Error(t, err)
	require.Empty(t, out, "nothing may be printed for bad input")
	var refusal *Refusal
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, 3, refusal.Problems)
	var fields []string
	for _, e := range refusal.Errors {
		fields = append(fields, e.Field)
	}
	require.ElementsMatch(t, []string{"spec.template.spec.butane.inline", "spec.template.spec.files[0].path",
		"spec.template.spec.joinConfiguration.discovery.tlsBootstrapToken"}, fields)
	lines := strings.Split(err.Error(), "\n")
	require.Equal(t, "IgnitionConfigTemplate workers does not render: 3 problems", lines[0])
	require.Len(t, lines, 4, "one line per finding: %s", err)
	for i, f := range fields {
		require.True(t, strings.HasPrefix(lines[i+1], "  "+f+": "), "line %d names its field: %q", i+1, lines[i+1])
	}
}

// More findings than admission lists: the same number listed, the rest counted on the spec.
func TestRenderCapsTheFindings(t *testing.T) {
	var files strings.Builder
	for i := range configinput.MaxListedFindings + 3 {
		fmt.Fprintf(&files, "  - {path: relative/%d, content: x}\n", i)
	}
	p := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(p, []byte("kind: IgnitionConfig\napiVersion: bootstrap.cluster.x-k8s.io/v1alpha1\nmetadata: {name: c}\nspec:\n  files:\n"+files.String()), 0o644))
	_, _, err := run(t, "-f", p)
	var refusal *Refusal
	require.ErrorAs(t, err, &refusal)
	require.Equal(t, configinput.MaxListedFindings+3, refusal.Problems)
	require.Len(t, refusal.Errors, configinput.MaxListedFindings+1)
	last := refusal.Errors[configinput.MaxListedFindings]
	require.Equal(t, "spec", last.Field)
	require.Contains(t, last.Detail, "and 3 more problems")
}
