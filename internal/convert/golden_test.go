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
	"bytes"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/golden"

	butane "github.com/coreos/butane/config"
	butanecommon "github.com/coreos/butane/config/common"
	ignconfig "github.com/coreos/ignition/v2/config"
	exptypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"
	clcconfig "github.com/flatcar/container-linux-config-transpiler/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootcheck"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// convertFile converts the file at path as `cabpi convert -f path --allow-lossy` does: the
// converted stream, the report (one finding a line, as the command prints it on stderr) and how
// many findings are lossy (the command exits 2 without --allow-lossy when there are any).
func convertFile(t *testing.T, path string) (stream, report string, lossy int) {
	t.Helper()
	input, err := os.ReadFile(path)
	require.NoError(t, err)
	res, err := Convert(input)
	require.NoError(t, err)
	var lines strings.Builder
	for _, f := range res.Findings {
		lines.WriteString(f.String() + "\n")
	}
	return string(res.Output), lines.String(), res.Lossy()
}

// metadata stands in for what coreos-metadata.service writes, which the providers' drop-ins wait
// for and read (EnvironmentFile=): the attributes of each file.
var metadata = map[string]map[string]string{
	"/run/metadata/flatcar": {"COREOS_EC2_HOSTNAME": "ip-10-0-0-1.ec2.internal", "COREOS_OPENSTACK_HOSTNAME": "node-0.example"},
	"/run/metadata/coreos":  {"COREOS_CUSTOM_HOSTNAME": "node-0"},
}

// metadataEnv is what systemd hands the bootstrap script from the environment files unit reads
// (a "-" prefix: the file may be missing; a glob: every file it matches); every file it reads
// must have a stand-in in metadata.
func metadataEnv(t *testing.T, unit bootcheck.Unit) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, file := range unit.Values("Service", "EnvironmentFile") {
		pattern := strings.TrimPrefix(file, "-")
		matched := false
		for _, name := range slices.Sorted(maps.Keys(metadata)) {
			// systemd reads every file a glob matches, in order.
			if ok, err := path.Match(pattern, name); err == nil && ok {
				maps.Copy(env, metadata[name])
				matched = true
			}
		}
		require.True(t, matched, "no stand-in for the environment file %s", file)
	}
	return env
}

// The Cluster API book's examples and the providers' Flatcar flavors convert to the golden
// output with the golden report (cmd/convert tests that a lossy input writes nothing and exits 2
// without --allow-lossy).
// Every converted config renders for each of its roles, as `cabpi render` does, and boots: kubeadm
// runs once, and every file and unit the converted config asks for is on the node.
// (Each is a check of the applied config, kubeadm.service read and verified by the host's systemd
// and the bootstrap script run on bash: docs/adr/029-one-way-to-boot-a-node.md.)
func TestConvertGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, input := range inputs {
		name := strings.TrimSuffix(filepath.Base(input), ".yaml")
		t.Run(name, func(t *testing.T) {
			stdout, stderr, lossy := convertFile(t, input)
			golden.Assert(t, name+".yaml", []byte(stdout))
			golden.Assert(t, name+".stderr", []byte(stderr))
			// A lossy finding is a report line without a severity prefix.
			assert.Equal(t, lossyLine(stderr), lossy > 0, "lossy findings and report lines agree")

			specs := convertedSpecs(t, stdout)
			require.NotEmpty(t, specs)
			for object, spec := range specs {
				for _, role := range Roles(spec) {
					t.Run(fmt.Sprintf("%s/%s", object, role), func(t *testing.T) { bootConverted(t, spec, role) })
				}
			}
		})
	}
}

// lossyLine reports whether the report has a line without a severity prefix.
func lossyLine(report string) bool {
	for line := range strings.SplitSeq(strings.TrimSpace(report), "\n") {
		if line != "" && !strings.HasPrefix(line, "note: ") && !strings.HasPrefix(line, "warning: ") {
			return true
		}
	}
	return false
}

// convertedSpecs reads the converted stream back the way `cabpi render -f` reads a file.
func convertedSpecs(t *testing.T, stream string) map[string]*cabpiv1.IgnitionConfigSpec {
	t.Helper()
	docs, err := splitDocuments([]byte(stream))
	require.NoError(t, err)
	specs := map[string]*cabpiv1.IgnitionConfigSpec{}
	for _, doc := range docs {
		if !bytes.Contains(doc, []byte("\nkind: IgnitionConfig")) {
			continue
		}
		spec, err := configinput.SpecFromYAML(doc)
		require.NoError(t, err, "%s", doc)
		var meta struct {
			Metadata struct{ Name string } `json:"metadata"`
		}
		require.NoError(t, yaml.Unmarshal(doc, &meta))
		specs[meta.Metadata.Name] = spec
	}
	return specs
}

// bootConverted renders spec for role offline, applies it and checks the node it leaves: kubeadm.service
// valid and enabled, the files and units asked for in place, the bootstrap script running kubeadm
// once. A spec with a Kubernetes source (spec.kubernetes, which the sysext flavors become) is
// checked to download it, then checked as if the image carried Kubernetes: the source's step
// installs on the node, which the script runner does not do; the renderer's own tests and the
// real-node suite cover the sources.
func bootConverted(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, role ignition.Role) {
	if spec.Kubernetes.Source != "" && spec.Kubernetes.Source != cabpiv1.KubernetesSourceImage {
		assertKubernetesInstalled(t, spec, role)
		spec = spec.DeepCopy()
		spec.Kubernetes = cabpiv1.KubernetesSpec{}
	}
	out, err := configinput.RenderOffline(t.Context(), spec, role, configinput.DefaultKubernetesVersion, &bytes.Buffer{})
	require.NoError(t, err)
	config, err := ignition.Unwrap(out.Data)
	require.NoError(t, err)
	rendered, rpt, err := ignconfig.Parse(config)
	require.NoError(t, err, rpt.String())

	want := expectations(t, spec)
	root := ignitionapply.ApplyWith(t, out.Data, ignitionapply.Options{IgnoreUnsupported: len(want.disks)+len(want.filesystems) > 0, ImageAccounts: true})
	bootcheck.Verify(t, root, ignition.KubeadmUnitName)
	assert.True(t, bootcheck.Enabled(t, root, ignition.KubeadmUnitName))
	unit := bootcheck.ReadUnit(t, root, ignition.KubeadmUnitName)
	// The files and presets as Ignition wrote them, before the script changes anything.
	presets := readNodeFile(t, root, presetPath)
	for p, f := range want.files {
		got, err := os.Lstat(filepath.Join(root, p))
		if !assert.NoError(t, err, "%s (%s) is on the node", p, f.from) {
			continue
		}
		assert.Equal(t, os.FileMode(f.mode), got.Mode().Perm(), "mode of %s (%s)", p, f.from)
		if f.content != nil {
			assert.Equal(t, *f.content, readNodeFile(t, root, p), "content of %s (%s)", p, f.from)
		}
	}
	for _, p := range want.present {
		_, err := os.Lstat(filepath.Join(root, p))
		assert.NoError(t, err, "%s is on the node", p)
	}

	runFiles := map[string]string{}
	for file, attributes := range metadata {
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(attributes)) {
			b.WriteString(k + "=" + attributes[k] + "\n")
		}
		runFiles[file] = b.String()
	}
	rep := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/opt/bin", RunFiles: runFiles, Env: metadataEnv(t, unit)})
	require.Equal(t, 0, rep.ExitCode, rep.Output)
	require.Len(t, rep.KubeadmCalls, 1, "kubeadm runs once")
	assert.True(t, rep.SentinelExists)

	for _, u := range want.enabled {
		// A template unit's line lists its instances after it (Ignition's preset format).
		assert.Regexp(t, "(?m)^enable "+regexp.QuoteMeta(u)+"( .*)?$", presets, "%s is enabled", u)
	}
	// Disks and filesystems cannot be applied to a directory: they are in the config as asked.
	for _, d := range want.disks {
		assert.True(t, hasDisk(rendered, d), "disk %s is in the rendered config", d)
	}
	for _, fs := range want.filesystems {
		assert.True(t, hasFilesystem(rendered, fs), "filesystem on %s is in the rendered config", fs)
	}
}

const presetPath = "/etc/systemd/system-preset/20-ignition.preset"

// readNodeFile reads the file at path on the node whose root is root.
func readNodeFile(t *testing.T, root, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	require.NoError(t, err, path)
	return string(data)
}

// assertKubernetesInstalled checks that the rendered config downloads the Kubernetes system
// extension of spec.kubernetes and links it where systemd-sysext reads it, once (the converted
// Container Linux Config no longer writes them).
func assertKubernetesInstalled(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, role ignition.Role) {
	t.Helper()
	require.Equal(t, cabpiv1.KubernetesSourceSysext, spec.Kubernetes.Source, "the conversion maps only the sysext flavors")
	out, err := configinput.RenderOffline(t.Context(), spec, role, configinput.DefaultKubernetesVersion, &bytes.Buffer{})
	require.NoError(t, err)
	config, err := ignition.Unwrap(out.Data)
	require.NoError(t, err)
	rendered, rpt, err := ignconfig.Parse(config)
	require.NoError(t, err, rpt.String())

	arch := spec.Kubernetes.Arch
	if arch == "" {
		arch = cabpiv1.ArchitectureAMD64
	}
	base := cabpiv1.DefaultSysextBaseURL
	if spec.Kubernetes.Sysext != nil && spec.Kubernetes.Sysext.BaseURL != "" {
		base = spec.Kubernetes.Sysext.BaseURL
	}
	name := ignition.SysextImageName(configinput.DefaultKubernetesVersion, arch)
	image := path.Join("/opt/extensions/kubernetes", name)
	var sources []string
	for _, f := range rendered.Storage.Files {
		if f.Path == image {
			sources = append(sources, ptr.Deref(f.Contents.Source, ""))
		}
	}
	assert.Equal(t, []string{strings.TrimRight(base, "/") + "/" + name}, sources, "the image is downloaded once, from the base URL")
	var targets []string
	for _, l := range rendered.Storage.Links {
		if l.Path == "/etc/extensions/kubernetes.raw" {
			targets = append(targets, ptr.Deref(l.Target, ""))
		}
	}
	assert.Equal(t, []string{image}, targets, "the extension is linked once, to the image")
}

type wantFile struct {
	from    string // what asks for it
	mode    int
	content *string
}

// expected is what a converted spec asks the node to have.
type expected struct {
	files       map[string]wantFile
	present     []string // unit files and drop-ins
	enabled     []string
	disks       []string
	filesystems []string
}

// expectations derives from the spec itself what must be on the node: spec.files, and what the
// Butane document or the Container Linux Config declares (translated with Butane and the CLC
// transpiler, independently of the renderer).
func expectations(t *testing.T, spec *cabpiv1.IgnitionConfigSpec) expected {
	t.Helper()
	want := expected{files: map[string]wantFile{}}
	for i, f := range spec.Files {
		mode := configinput.DefaultFileMode
		if f.Permissions != "" {
			m, err := configinput.ParseMode(f.Permissions)
			require.NoError(t, err)
			mode = m
		}
		w := wantFile{from: fmt.Sprintf("spec.files[%d]", i), mode: mode}
		if f.ContentFrom == nil && f.Encoding == "" && !f.Append {
			w.content = ptr.To(f.Content)
		}
		want.files[f.Path] = w
	}
	if doc := spec.Butane.Inline; doc != "" {
		data, rpt, err := butane.TranslateBytes([]byte(doc), butanecommon.TranslateBytesOptions{})
		require.NoError(t, err, rpt.String())
		cfg, rpt, err := ignconfig.Parse(data)
		require.NoError(t, err, rpt.String())
		for _, f := range cfg.Storage.Files {
			w := wantFile{from: "spec.butane", mode: ptr.Deref(f.Mode, 0o644)}
			want.files[f.Path] = w
		}
		for _, u := range cfg.Systemd.Units {
			if u.Contents != nil {
				want.present = append(want.present, path.Join("/etc/systemd/system", u.Name))
			}
			if ptr.Deref(u.Enabled, false) {
				want.enabled = append(want.enabled, u.Name)
			}
		}
		for _, d := range cfg.Storage.Disks {
			want.disks = append(want.disks, d.Device)
		}
		for _, fs := range cfg.Storage.Filesystems {
			want.filesystems = append(want.filesystems, fs.Device)
		}
	}
	if doc := spec.ContainerLinuxConfig.Inline; doc != "" {
		parsed, ast, rpt := clcconfig.Parse([]byte(doc))
		require.False(t, rpt.IsFatal(), rpt.String())
		cfg, rpt := clcconfig.Convert(parsed, "", ast)
		require.False(t, rpt.IsFatal(), rpt.String())
		for _, f := range cfg.Storage.Files {
			want.files[f.Path] = wantFile{from: "spec.containerLinuxConfig", mode: ptr.Deref(f.Mode, 0o644)}
		}
		for _, u := range cfg.Systemd.Units {
			if u.Contents != "" {
				want.present = append(want.present, path.Join("/etc/systemd/system", u.Name))
			}
			for _, d := range u.Dropins {
				want.present = append(want.present, path.Join("/etc/systemd/system", u.Name+".d", d.Name))
			}
			if u.Enable || ptr.Deref(u.Enabled, false) {
				want.enabled = append(want.enabled, u.Name)
			}
		}
		for _, d := range cfg.Storage.Disks {
			want.disks = append(want.disks, d.Device)
		}
		for _, fs := range cfg.Storage.Filesystems {
			if fs.Mount != nil {
				want.filesystems = append(want.filesystems, fs.Mount.Device)
			}
		}
	}
	return want
}

func hasDisk(cfg exptypes.Config, device string) bool {
	for _, d := range cfg.Storage.Disks {
		if d.Device == device {
			return true
		}
	}
	return false
}

func hasFilesystem(cfg exptypes.Config, device string) bool {
	for _, fs := range cfg.Storage.Filesystems {
		if fs.Device == device {
			return true
		}
	}
	return false
}
