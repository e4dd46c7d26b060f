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

package ignitionapply

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The preset lines written for template and instance units are the ones Ignition writes
// (internal/exec/stages/files/units.go): one per template and state, sorted by
// "template-enabled"/"template-disabled"; other units keep their enabled for ignition-apply.
func TestWithoutInstanceEnables(t *testing.T) {
	cases := map[string]struct {
		units string
		lines []string
	}{
		"no template unit: the config as it is": {
			units: `[{"name":"a.service","enabled":true}]`,
		},
		"instances of one template, one state": {
			units: `[{"name":"b@x.service","enabled":true},{"name":"b@y.service","enabled":true}]`,
			lines: []string{"enable b@.service x y"},
		},
		"one template, both states: two lines": {
			units: `[{"name":"b@x.service","enabled":true},{"name":"b@y.service","enabled":false}]`,
			lines: []string{"disable b@.service y", "enable b@.service x"},
		},
		"templates sorted; plain units and units without enabled left alone": {
			units: `[{"name":"z@1.timer","enabled":true},{"name":"a.service","enabled":true},{"name":"c@2.service"},{"name":"m@3.service","enabled":false}]`,
			lines: []string{"disable m@.service 3", "enable z@.timer 1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			config := []byte(`{"ignition":{"version":"3.3.0"},"systemd":{"units":` + tc.units + `}}`)
			out, lines, err := withoutInstanceEnables(config)
			require.NoError(t, err)
			assert.Equal(t, tc.lines, lines)
			if tc.lines == nil {
				assert.Equal(t, string(config), string(out))
				return
			}
			var cfg struct {
				Systemd struct {
					Units []map[string]any `json:"units"`
				} `json:"systemd"`
			}
			require.NoError(t, json.Unmarshal(out, &cfg))
			for _, u := range cfg.Systemd.Units {
				name := u["name"].(string)
				_, has := u["enabled"]
				assert.Equal(t, name == "a.service", has, "%s: only plain units keep enabled", name)
			}
		})
	}
}
