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

package normalize

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalize(t *testing.T) {
	cases := map[string]string{
		`{"a":{},"b":[],"c":null,"d":{"e":{}}}`:                   `{}`,
		`{"mode":420,"overwrite":false,"path":""}`:                `{"mode":420,"overwrite":false,"path":""}`,
		`{"files":[{"group":{},"path":"/x"},{}]}`:                 `{"files":[{"path":"/x"},{}]}`,
		`{"n":12345678901234567890,"f":0.5}`:                      `{"f":0.5,"n":12345678901234567890}`,
		`{"ignition":{"version":"3.3.0","proxy":{"noProxy":[]}}}`: `{"ignition":{"version":"3.3.0"}}`,
		// A file with contents gets the default mode; one that only appends or sets the owner
		// keeps none, so Ignition leaves the existing file's mode alone.
		`{"storage":{"files":[{"path":"/a","contents":{"source":"data:,x"}}]}}`:                   `{"storage":{"files":[{"contents":{"source":"data:,x"},"mode":420,"path":"/a"}]}}`,
		`{"storage":{"files":[{"path":"/a","mode":384,"contents":{"source":"data:,x"}}]}}`:        `{"storage":{"files":[{"contents":{"source":"data:,x"},"mode":384,"path":"/a"}]}}`,
		`{"storage":{"files":[{"path":"/a","append":[{"source":"data:,x"}],"contents":{}}]}}`:     `{"storage":{"files":[{"append":[{"source":"data:,x"}],"path":"/a"}]}}`,
		`{"storage":{"files":[{"path":"/a","user":{"name":"core"},"contents":{"source":null}}]}}`: `{"storage":{"files":[{"path":"/a","user":{"name":"core"}}]}}`,
	}
	for in, want := range cases {
		got, err := Config([]byte(in))
		require.NoError(t, err, in)
		assert.JSONEq(t, want, string(got), in)
		assert.Equal(t, want, string(got), "keys sorted, numbers kept exactly")
	}
	_, err := Config([]byte("{"))
	assert.Error(t, err)
}
