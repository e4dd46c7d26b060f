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
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vincent-petithory/dataurl"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootcheck"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// textLines is n lines of configuration-like text, which gzip shrinks well.
func textLines(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "setting-%d: the value of setting %d, as a configuration file has it\n", i, i)
	}
	return b.Bytes()
}

// randomBytes is n bytes that do not compress, the same on every call.
func randomBytes(n int) []byte {
	r := rand.New(rand.NewPCG(12, 34))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// smallFiles are n distinct small text files: each too small for gzip to pay on its own, the
// config holding them all compresses well.
func smallFiles(n int) []ignition.File {
	files := make([]ignition.File, n)
	for i := range files {
		files[i] = ignition.File{Path: fmt.Sprintf("/etc/cabpi/conf.d/%02d.conf", i), Mode: 0o640,
			Content: fmt.Appendf(nil, "[section]\nname = file %d\nenabled = true\n", i)}
	}
	return files
}

// contentsEntry is a file's contents as the rendered data has them (after the wrapper).
type contentsEntry struct {
	Source      string  `json:"source"`
	Compression *string `json:"compression"`
}

func fileEntry(t *testing.T, data []byte, path string) contentsEntry {
	t.Helper()
	config, err := ignition.Unwrap(data)
	require.NoError(t, err)
	var cfg struct {
		Storage struct {
			Files []struct {
				Path     string        `json:"path"`
				Contents contentsEntry `json:"contents"`
			} `json:"files"`
		} `json:"storage"`
	}
	require.NoError(t, json.Unmarshal(config, &cfg))
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			return f.Contents
		}
	}
	require.Failf(t, "file not in config", "%s", path)
	return contentsEntry{}
}

// Each file is encoded the cheapest valid way: text percent-escaped while that is shortest,
// binary in base64, larger text gzipped where compression is allowed, never gzipped otherwise.
// The content always reads back as it was.
func TestFileEncoding(t *testing.T) {
	const path = "/etc/cabpi/data"
	cases := []struct {
		name     string
		content  []byte
		compress bool
		prefix   string
		gzip     bool
	}{
		{"short text", []byte("hello\n"), false, "data:,", false},
		{"short text, compression allowed", []byte("hello\n"), true, "data:,", false},
		{"empty", nil, true, "data:,", false},
		{"binary", randomBytes(2048), false, "data:;base64,", false},
		{"binary, compression allowed", randomBytes(2048), true, "data:;base64,", false},
		{"large text", textLines(100), false, "data:;base64,", false}, // its spaces cost 3 bytes escaped
		{"large text without spaces", bytes.ReplaceAll(textLines(100), []byte(" "), []byte("_")), false, "data:,", false},
		{"large text, compression allowed", textLines(100), true, "data:;base64,", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
			in.Compress = tc.compress
			in.Files = []ignition.File{{Path: path, Content: tc.content, Mode: 0o600}}
			out, err := ignition.Render(in)
			require.NoError(t, err)
			entry := fileEntry(t, out.Data, path)
			assert.True(t, strings.HasPrefix(entry.Source, tc.prefix), "%.60s", entry.Source)
			if tc.gzip {
				require.NotNil(t, entry.Compression)
				assert.Equal(t, "gzip", *entry.Compression)
			} else {
				assert.Nil(t, entry.Compression)
			}

			// Never longer than the forms it was chosen from (dataurl.Escape escapes more
			// than the renderer has to, so it bounds the percent-escaped form).
			cost := len(entry.Source)
			if entry.Compression != nil {
				cost += len(`,"compression":"gzip"`)
			}
			assert.LessOrEqual(t, cost, len("data:,"+dataurl.Escape(tc.content)))
			assert.LessOrEqual(t, cost, len("data:;base64,"+base64.StdEncoding.EncodeToString(tc.content)))
			if tc.compress {
				assert.LessOrEqual(t, cost, len("data:;base64,"+base64.StdEncoding.EncodeToString(gzipped(tc.content)))+len(`,"compression":"gzip"`))
			}

			files, err := ignition.ReadFiles(out.Data)
			require.NoError(t, err)
			assert.Equal(t, string(tc.content), string(files[path]))
		})
	}
}

// Percent-escaping keeps the characters data URLs allow unescaped and that scripts and YAML are
// full of, and escapes those a URL or JSON parser would read otherwise.
func TestPercentEscaping(t *testing.T) {
	const path = "/etc/cabpi/env"
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.Files = []ignition.File{{Path: path, Content: []byte("a=/b:c,d;e@f+g$h?i&j#k%l<m>\"n'o\n")}}
	out, err := ignition.Render(in)
	require.NoError(t, err)
	assert.Equal(t, "data:,a=/b:c,d;e@f+g$h%3Fi%26j%23k%25l%3Cm%3E%22n'o%0A", fileEntry(t, out.Data, path).Source)
	assert.Equal(t, "a=/b:c,d;e@f+g$h?i&j#k%l<m>\"n'o\n", fileContent(t, out.Data, path))
}

// Without compression, nothing in the output is compressed or wrapped, whatever the input and
// however far over the limit: that is what CAPD gets (docs/adr/011).
func TestCompressOffNeverCompresses(t *testing.T) {
	inputs := goldenCases()
	large := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	large.Files = append(smallFiles(40), ignition.File{Path: "/etc/cabpi/large", Content: textLines(200)})
	large.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/cabpi/snippet-large\n      contents:\n        inline: |\n" +
		indent(string(textLines(100)), "          ")
	inputs["large text in files and snippet"] = large
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			in.Compress, in.SizeLimit = false, 100
			out, err := ignition.Render(in)
			require.NoError(t, err)
			assert.NotContains(t, string(out.Data), "compression")
			assert.False(t, out.Size.Wrapped)
			assert.False(t, out.Size.Compressed)
			assert.Equal(t, out.Size.Bytes, out.Size.UnwrappedBytes)
			assert.True(t, out.Size.OverLimit(), "reported over the limit, never cut")

			// The same input with compression allowed compresses what pays.
			if name == "large text in files and snippet" {
				in.Compress, in.SizeLimit = true, 0
				compressed, err := ignition.Render(in)
				require.NoError(t, err)
				assert.Equal(t, "gzip", *fileEntry(t, compressed.Data, "/etc/cabpi/large").Compression)
				assert.Equal(t, "gzip", *fileEntry(t, compressed.Data, "/etc/cabpi/snippet-large").Compression, "Butane compresses the snippet's files")
				assert.Less(t, compressed.Size.Bytes, out.Size.Bytes)
			}
		})
	}
}

func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n"+prefix) + "\n"
}

// A config over the limit becomes a wrapper at the same spec version carrying it gzipped, only
// where compression is allowed, the spec version has compressed config references (3.1.0 and
// later) and the wrapper is smaller; what cannot be made to fit is reported, never cut.
func TestWrapper(t *testing.T) {
	withFiles := func(variant cabpiv1.Variant, pin string, files []ignition.File) ignition.Input {
		in := joinInput(variant, "v1.34.0")
		in.IgnitionVersion, in.Files, in.Compress = pin, files, true
		return in
	}
	cases := []struct {
		name     string
		in       ignition.Input
		limit    int
		wrapped  bool
		over     bool
		compress bool
	}{
		{"under the limit", withFiles(cabpiv1.VariantFlatcar, "", smallFiles(40)), 1 << 20, false, false, true},
		{"no limit", withFiles(cabpiv1.VariantFlatcar, "", smallFiles(40)), 0, false, false, true},
		{"over the limit at 3.3.0", withFiles(cabpiv1.VariantFlatcar, "", smallFiles(40)), 4096, true, false, true},
		{"over the limit at 3.4.0", withFiles(cabpiv1.VariantFlatcar, "3.4.0", smallFiles(40)), 4096, true, false, true},
		{"over the limit at 3.1.0", withFiles(cabpiv1.VariantFCOS, "3.1.0", smallFiles(40)), 4096, true, false, true},
		{"over the limit at 3.2.0", withFiles(cabpiv1.VariantFCOS, "3.2.0", smallFiles(40)), 4096, true, false, true},
		{"over the limit at 3.5.0", withFiles(cabpiv1.VariantFCOS, "3.5.0", smallFiles(40)), 4096, true, false, true},
		{"over the limit at 3.6.0", withFiles(cabpiv1.VariantFCOS, "3.6.0", smallFiles(40)), 4096, true, false, true},
		{"over the limit at 3.0.0: no compressed config reference", withFiles(cabpiv1.VariantFCOS, "", smallFiles(40)), 4096, false, true, true},
		{"over the limit even wrapped", withFiles(cabpiv1.VariantFlatcar, "", smallFiles(40)), 600, true, true, true},
		// Random bytes cost as much gzipped and base64-encoded again as they did base64-encoded
		// once: the blob must outweigh what the rest of the config gains in a wrapper.
		{"wrapper not smaller", withFiles(cabpiv1.VariantFlatcar, "", []ignition.File{{Path: "/opt/blob", Content: randomBytes(80 << 10)}}), 16 << 10, false, true, true},
		{"compression not allowed", withFiles(cabpiv1.VariantFlatcar, "", smallFiles(40)), 4096, false, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Compress, in.SizeLimit = tc.compress, tc.limit
			out, err := ignition.Render(in)
			require.NoError(t, err)
			in.SizeLimit = 0
			whole, err := ignition.Render(in)
			require.NoError(t, err)

			assert.Equal(t, tc.wrapped, out.Size.Wrapped)
			assert.Equal(t, tc.over, out.Size.OverLimit())
			assert.Equal(t, tc.limit, out.Size.Limit)
			assert.Equal(t, len(out.Data), out.Size.Bytes)
			assert.Equal(t, len(gzipped(out.Data)), out.Size.GzipBytes)
			assert.Equal(t, len(whole.Data), out.Size.UnwrappedBytes)
			assert.Equal(t, whole.SpecVersion, out.SpecVersion)
			assert.Equal(t, out.SpecVersion, specVersion(t, out.Data), "the wrapper has the config's version")
			_, rpt, err := ignconfig.Parse(out.Data)
			require.NoError(t, err, rpt.String())
			assert.Empty(t, rpt.Entries)

			config, err := ignition.Unwrap(out.Data)
			require.NoError(t, err)
			assert.Equal(t, string(whole.Data), string(config), "the wrapper carries the whole config")
			if !tc.wrapped {
				assert.Equal(t, string(whole.Data), string(out.Data))
				return
			}
			assert.Less(t, out.Size.Bytes, out.Size.UnwrappedBytes)
			var wrapper struct {
				Ignition struct {
					Version string
					Config  struct {
						Replace struct{ Source, Compression string }
					}
				}
				Storage, Systemd, Passwd any
			}
			require.NoError(t, json.Unmarshal(out.Data, &wrapper))
			assert.Equal(t, "gzip", wrapper.Ignition.Config.Replace.Compression)
			assert.True(t, strings.HasPrefix(wrapper.Ignition.Config.Replace.Source, "data:;base64,"))
			assert.Nil(t, wrapper.Storage, "the wrapper writes nothing itself")
			assert.Nil(t, wrapper.Systemd)
		})
	}
}

// Compressed output is as deterministic as the rest: the same input gives the same bytes.
func TestCompressedRenderIsDeterministic(t *testing.T) {
	for name, in := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			in.Files = append(in.Files, ignition.File{Path: "/etc/cabpi/large", Content: textLines(50)})
			in.Compress, in.SizeLimit = true, 1500
			first, err := ignition.Render(in)
			require.NoError(t, err)
			assert.Contains(t, string(first.Data), "gzip")
			for range 3 {
				again, err := ignition.Render(in)
				require.NoError(t, err)
				require.Equal(t, string(first.Data), string(again.Data))
				require.Equal(t, first.Size, again.Size)
			}
		})
	}
}

// The real Ignition engine writes gzip-encoded files, and follows a wrapper, to the very
// contents and modes of the uncompressed config.
func TestCompressedFormsApplyWithIgnition(t *testing.T) {
	gzipFiles := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	gzipFiles.Files = []ignition.File{
		{Path: "/etc/cabpi/large", Content: textLines(100), Mode: 0o640},
		{Path: "/opt/cabpi/blob", Content: randomBytes(1024), Mode: 0o600},
		{Path: "/etc/cabpi/small", Content: []byte("small\n"), Mode: 0o644},
	}
	wrapped := goldenCases()["controlplane-flatcar-snippet-v1.31.0"]
	wrapped.Files = append(wrapped.Files, smallFiles(20)...)
	cases := map[string]struct {
		in      ignition.Input
		limit   int
		wrapped bool
	}{
		"gzip-encoded files":   {gzipFiles, 0, false},
		"wrapped with snippet": {wrapped, 2048, true},
		"wrapped worker fcos": {func() ignition.Input {
			in := joinInput(cabpiv1.VariantFCOS, "v1.34.0")
			in.IgnitionVersion, in.Files = "3.1.0", smallFiles(20)
			return in
		}(), 1024, true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := tc.in
			in.Compress, in.SizeLimit = true, tc.limit
			out, err := ignition.Render(in)
			require.NoError(t, err)
			require.Equal(t, tc.wrapped, out.Size.Wrapped)
			if name == "gzip-encoded files" {
				require.Equal(t, "gzip", *fileEntry(t, out.Data, "/etc/cabpi/large").Compression)
			}
			root := ignitionapply.Apply(t, out.Data)

			in.Compress, in.SizeLimit = false, 0
			plain, err := ignition.Render(in)
			require.NoError(t, err)
			cfg, _, err := ignconfig.Parse(plain.Data)
			require.NoError(t, err)
			want, err := ignition.ReadFiles(plain.Data)
			require.NoError(t, err)
			for _, f := range cfg.Storage.Files {
				require.NotNil(t, f.Mode, f.Path)
				assert.Equal(t, string(want[f.Path]), readFile(t, root, f.Path, os.FileMode(*f.Mode)), f.Path)
			}
			assert.True(t, ignitionapply.UnitEnabled(t, root, ignition.KubeadmUnitName))
			unit := readFile(t, root, "/etc/systemd/system/kubeadm.service", 0o644)
			assert.Contains(t, unit, "ExecStart=/bin/bash /etc/kubeadm.sh")
			for _, u := range cfg.Systemd.Units {
				for _, d := range u.Dropins {
					assert.FileExists(t, filepath.Join(root, "etc/systemd/system", u.Name+".d", d.Name))
				}
			}
		})
	}
}

// A wrapped config is applied like the config it carries: kubeadm.service and the snippet's unit
// and drop-in are valid and enabled, the snippet's file is in place, kubeadm runs once with its
// configuration and the sentinel follows.
func TestBootWrapped(t *testing.T) {
	for _, variant := range []cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS} {
		for role, input := range map[string]func(cabpiv1.Variant, string) ignition.Input{"init": initInput, "worker": joinInput} {
			t.Run(string(variant)+"/"+role, func(t *testing.T) {
				in := input(variant, "v1.34.0")
				in.Butane = bootSnippets[variant]
				in.Compress, in.SizeLimit = true, 1024
				out, err := ignition.Render(in)
				require.NoError(t, err)
				require.True(t, out.Size.Wrapped)

				root, u := appliedNode(t, out.Data, "cabpi-boot-extra.service")
				assert.Contains(t, u.Values("Service", "Environment"), `"CABPI_BOOT_DROPIN=from drop-in"`)
				assert.Equal(t, "hello", readFile(t, root, "/etc/cabpi-boot/hello.conf", 0o640))
				rep := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/usr/bin"})
				require.Equal(t, 0, rep.ExitCode, rep.Output)
				require.Len(t, rep.KubeadmCalls, 1)
				assertKubeadmCall(t, role, rep.KubeadmCalls[0])
				assert.True(t, rep.SentinelExists)
				assert.NoFileExists(t, filepath.Join(root, ignition.KubeadmConfigPath))
			})
		}
	}
}

// ReadFiles reads what a node's files hold: plain, gzip-encoded, appended to, behind a wrapper;
// it leaves out what is fetched at boot and refuses what it cannot decode.
func TestReadFiles(t *testing.T) {
	in := joinInput(cabpiv1.VariantFlatcar, "v1.34.0")
	in.Files = []ignition.File{{Path: "/etc/cabpi/large", Content: textLines(100)}, {Path: "/opt/blob", Content: randomBytes(64)}}
	in.Butane = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /etc/cabpi/appended\n      contents:\n        inline: \"first\\n\"\n" +
		"      append:\n        - inline: \"second\\n\"\n    - path: /etc/cabpi/remote\n      contents:\n        source: https://example.com/remote\n"
	want := map[string]string{
		"/etc/cabpi/large":    string(textLines(100)),
		"/opt/blob":           string(randomBytes(64)),
		"/etc/cabpi/appended": "first\nsecond\n",
	}
	for _, compress := range []bool{false, true} {
		for _, limit := range []int{0, 1024} {
			t.Run(fmt.Sprintf("compress=%v limit=%d", compress, limit), func(t *testing.T) {
				in.Compress, in.SizeLimit = compress, limit
				out, err := ignition.Render(in)
				require.NoError(t, err)
				assert.Equal(t, compress && limit > 0, out.Size.Wrapped)
				files, err := ignition.ReadFiles(out.Data)
				require.NoError(t, err)
				for p, content := range want {
					assert.Equal(t, content, string(files[p]), p)
				}
				assert.Contains(t, string(files[ignition.KubeadmConfigPath]), "kind: JoinConfiguration")
				assert.NotContains(t, files, "/etc/cabpi/remote", "fetched at boot")
			})
		}
	}

	for name, data := range map[string]string{
		"remote wrapper":      `{"ignition":{"version":"3.3.0","config":{"replace":{"source":"https://example.com/x.ign"}}}}`,
		"unknown compression": `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,x","compression":"xz"}}]}}`,
		"not gzip":            `{"ignition":{"version":"3.3.0"},"storage":{"files":[{"path":"/x","contents":{"source":"data:,x","compression":"gzip"}}]}}`,
		"not JSON":            `{`,
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ignition.ReadFiles([]byte(data))
			assert.Error(t, err)
		})
	}
}

// gzipped is data gzipped the way the renderer weighs it: best compression, no header fields.
func gzipped(data []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	_, _ = zw.Write(data)
	_ = zw.Close()
	return b.Bytes()
}
