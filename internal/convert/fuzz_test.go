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
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// fuzzConvertTimeout bounds one Convert (it renders every converted spec for each of its roles).
const fuzzConvertTimeout = 20 * time.Second

// convertBounded runs Convert, failing the test if it panics (the fuzzing engine reports that)
// or does not return in time.
func convertBounded(t *testing.T, input []byte) (*Result, error) {
	t.Helper()
	type result struct {
		res *Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := Convert(input)
		done <- result{res, err}
	}()
	select {
	case r := <-done:
		return r.res, r.err
	case <-time.After(fuzzConvertTimeout):
		require.FailNow(t, "Convert did not return", "after %s", fuzzConvertTimeout)
		return nil, nil
	}
}

// FuzzConvert feeds YAML streams (seeded with the golden inputs: the CAPI book's examples and
// the cloud providers' Flatcar flavors) to Convert. Invariants:
//   - Convert never panics and returns in time;
//   - what it converts renders (Convert checks that itself; an error is fine, a wrong success is
//     not): every converted object in the output reads back, strictly, as the object converted;
//   - converting the output again converts nothing and changes nothing: the output has no
//     KubeadmConfig left, and pass-through documents are written as they were read.
func FuzzConvert(f *testing.F) {
	seeds, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	require.NoError(f, err)
	for _, p := range seeds {
		b, err := os.ReadFile(p)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(config("  format: ignition\n  files:\n  - {path: /etc/a, content: x, encoding: base64}\n")))
	f.Add([]byte("kind: ConfigMap\napiVersion: v1\n---\n" + config("  joinConfiguration: {nodeRegistration: {name: '{{ ds.meta_data.hostname }}'}}\n")))

	f.Fuzz(func(t *testing.T, input []byte) {
		res, err := convertBounded(t, input)
		if err != nil {
			return
		}
		docs, err := splitDocuments(res.Output)
		require.NoError(t, err, "the output is not a YAML stream")
		inputDocs, err := splitDocuments(input)
		require.NoError(t, err)
		require.Len(t, docs, len(inputDocs), "the output has a document for each document of the input")
		converted := 0
		for i, doc := range docs {
			var meta struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			require.NoError(t, yaml.Unmarshal(inputDocs[i], &meta))
			group, _, _ := strings.Cut(meta.APIVersion, "/")
			if group != kubeadmGroup || (meta.Kind != "KubeadmConfig" && meta.Kind != "KubeadmConfigTemplate") {
				require.Equal(t, strings.TrimSuffix(string(inputDocs[i]), "\n"), strings.TrimSuffix(string(doc), "\n"),
					"document %d is not converted, so it is written as it was read", i+1)
				continue
			}
			require.Less(t, converted, len(res.Converted))
			want := res.Converted[converted].Object
			converted++
			got := reflect.New(reflect.TypeOf(want).Elem()).Interface()
			require.NoError(t, yaml.UnmarshalStrict(doc, got), "converted document %d does not read back:\n%s", i+1, doc)
			require.Equal(t, want, got, "converted document %d reads back different:\n%s", i+1, doc)
		}
		require.Equal(t, len(res.Converted), converted)

		again, err := convertBounded(t, res.Output)
		require.NoError(t, err, "the output does not convert again:\n%s", res.Output)
		require.Empty(t, again.Converted, "the output still has objects to convert:\n%s", res.Output)
		require.Equal(t, string(res.Output), string(again.Output), "converting the output again changed it")
	})
}
