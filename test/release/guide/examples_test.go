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

package guide_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// examples are the YAML files of docs/examples, as the guide names them.
func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "docs", "examples", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	out := make([]string, len(files))
	for i, f := range files {
		out[i] = rel(f)
	}
	return out
}

// allBlocks are the blocks of every guide page.
func allBlocks(t *testing.T) []block {
	t.Helper()
	var out []block
	for _, page := range guidePages(t) {
		out = append(out, mustParse(t, page)...)
	}
	return out
}

// TestExamplesAdmitted applies every example to the API server with cabpi's admission webhooks:
// each is admitted, and an example that gets admission warnings has them shown in the guide
// (<!-- admission: PATH -->), exactly as kubectl prints them.
func TestExamplesAdmitted(t *testing.T) {
	shown := map[string]block{}
	for _, b := range allBlocks(t) {
		if b.marker == "admission" {
			shown[b.arg] = b
		}
	}
	for _, example := range examples(t) {
		t.Run(filepath.Base(example), func(t *testing.T) {
			ns := env.CreateNamespace(t, "example").Name
			transcript, warned := apply(t, example, ns)
			b, isShown := shown[example]
			if !isShown {
				require.False(t, warned, "%s is admitted with warnings the guide does not show "+
					"(add a text block marked <!-- admission: %s -->):\n%s", example, example, transcript)
				return
			}
			missing := matchOutput(b.body, transcript)
			require.Empty(t, missing, "%s: what kubectl prints for %s differs from the guide; missing %q in:\n%s", b, example, missing, transcript)
			// matchOutput lets the transcript have lines the guide leaves out: a new warning
			// would go unseen, so the guide shows as many as kubectl prints.
			require.Equal(t, warningLines(transcript), warningLines(b.body),
				"%s: kubectl prints a different number of warnings for %s than the guide shows:\n%s", b, example, transcript)
		})
	}
	for path, b := range shown {
		require.FileExists(t, filepath.Join(repoRoot, path), "%s: <!-- admission: %s -->", b, path)
	}
}

// apply creates every object of the example in ns and returns what kubectl would print: each
// admission warning as "Warning: ...", then "<kind>.<group>/<name> created".
func apply(t *testing.T, example, ns string) (transcript string, warned bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, example))
	require.NoError(t, err)
	c, warnings, err := env.ClientWithWarnings()
	require.NoError(t, err)

	var lines []string
	objs := decodeAll(t, data)
	require.NotEmpty(t, objs, example)
	for _, o := range objs {
		o.SetNamespace(ns)
		require.NoError(t, c.Create(t.Context(), o), "%s: %s %s is not admitted", example, o.GetKind(), o.GetName())
		for _, w := range warnings.Take() {
			lines = append(lines, "Warning: "+w)
			warned = true
		}
		gvk := o.GroupVersionKind()
		lines = append(lines, fmt.Sprintf("%s.%s/%s created", strings.ToLower(gvk.Kind), gvk.Group, o.GetName()))
	}
	return strings.Join(lines, "\n") + "\n", warned
}

func decodeAll(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, yaml.Unmarshal(doc, &m))
		if len(m) > 0 {
			out = append(out, &unstructured.Unstructured{Object: m})
		}
	}
}

// TestEveryExampleIsRun: each example is used by a command the guide runs (cabpi render at
// least), so none can stop rendering unnoticed.
func TestEveryExampleIsRun(t *testing.T) {
	var run strings.Builder
	for _, b := range allBlocks(t) {
		if b.marker == "test" {
			run.WriteString(b.body)
		}
	}
	for _, example := range examples(t) {
		require.Contains(t, run.String(), example, "no runnable block of docs/guide uses %s", example)
	}
}

// TestShownYAMLIsAnExample: every YAML block of the guide is an excerpt of the example it names.
func TestShownYAMLIsAnExample(t *testing.T) {
	n := 0
	for _, b := range allBlocks(t) {
		if b.marker != "example" {
			continue
		}
		n++
		data, err := os.ReadFile(filepath.Join(repoRoot, b.arg))
		require.NoError(t, err, "%s: <!-- example: %s -->", b, b.arg)
		require.True(t, isExcerpt(b.body, string(data)), "%s: the YAML shown is not in %s:\n%s", b, b.arg, b.body)
	}
	require.NotZero(t, n)
}

// warningLines counts the lines of text that are admission warnings as kubectl prints them.
func warningLines(text string) int {
	n := 0
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(squeeze(l), "Warning: ") {
			n++
		}
	}
	return n
}
