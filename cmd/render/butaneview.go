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
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/vincent-petithory/dataurl"
	"sigs.k8s.io/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// butaneVersions maps the Ignition spec version of a rendered config to the Butane version of
// the variant that emits it (the lowest, where several do).
var butaneVersions = map[cabpiv1.Variant]map[string]string{
	cabpiv1.VariantFlatcar: {"3.3.0": "1.0.0", "3.4.0": "1.1.0"},
	cabpiv1.VariantFCOS: {"3.0.0": "1.0.0", "3.1.0": "1.1.0", "3.2.0": "1.2.0", "3.3.0": "1.4.0",
		"3.4.0": "1.5.0", "3.5.0": "1.6.0", "3.6.0": "1.7.0"},
}

// ToButane expresses a rendered Ignition config as a Butane document of the variant: the base
// cabpi generates and the user's snippet, merged, in the form users write. Butane translates it
// back into the same Ignition (tested). Text contents become `inline`; binary stays a data URL.
func ToButane(ignitionJSON []byte, variant cabpiv1.Variant) ([]byte, error) {
	var cfg map[string]any
	if err := json.Unmarshal(ignitionJSON, &cfg); err != nil {
		return nil, fmt.Errorf("reading the rendered config: %w", err)
	}
	ign, _ := cfg["ignition"].(map[string]any)
	specVersion, _ := ign["version"].(string)
	version, ok := butaneVersions[variant][specVersion]
	if !ok {
		return nil, fmt.Errorf("no Butane %s version emits Ignition %q", variant, specVersion)
	}
	delete(ign, "version")
	if len(ign) == 0 {
		delete(cfg, "ignition")
	}
	doc, ok := toButaneValue(cfg).(map[string]any)
	if !ok {
		return nil, fmt.Errorf("rendered config is not an object")
	}
	doc["variant"] = string(variant)
	doc["version"] = version
	return yaml.Marshal(doc)
}

// toButaneValue renames Ignition's camelCase keys to Butane's snake_case ones and inlines
// text contents.
func toButaneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			out[snakeCase(k)] = toButaneValue(val)
		}
		inlineContents(out)
		return out
	case []any:
		for i := range t {
			t[i] = toButaneValue(t[i])
		}
		return t
	}
	return v
}

// inlineContents turns {source: data:..., compression: gzip?} into {inline: text} when the
// decoded data is text.
func inlineContents(m map[string]any) {
	src, ok := m["source"].(string)
	if !ok || !strings.HasPrefix(src, "data:") {
		return
	}
	u, err := dataurl.DecodeString(src)
	if err != nil {
		return
	}
	data := u.Data
	if m["compression"] == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return
		}
		if data, err = io.ReadAll(zr); err != nil {
			return
		}
	}
	if !utf8.Valid(data) {
		return
	}
	delete(m, "source")
	delete(m, "compression")
	m["inline"] = string(data)
}

// snakeCase maps Ignition JSON keys to Butane YAML keys: sshAuthorizedKeys → ssh_authorized_keys,
// sizeMiB → size_mib.
func snakeCase(k string) string {
	k = strings.ReplaceAll(k, "MiB", "Mib")
	var b strings.Builder
	for i, r := range k {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
