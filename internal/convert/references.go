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
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// passThroughNotes notes the documents passed through that carry a kubeadm config the command
// leaves alone: KubeadmControlPlane's Machines are bootstrapped by its own KubeadmConfigs.
func passThroughNotes(apiVersion, kind string, doc []byte) []Finding {
	if !strings.HasPrefix(apiVersion, "controlplane.cluster.x-k8s.io/") || (kind != "KubeadmControlPlane" && kind != "KubeadmControlPlaneTemplate") {
		return nil
	}
	var meta struct {
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = yaml.Unmarshal(doc, &meta) // it parsed as YAML already; a malformed metadata only blurs the name
	path := "spec.kubeadmConfigSpec"
	if kind == "KubeadmControlPlaneTemplate" {
		path = "spec.template.spec.kubeadmConfigSpec"
	}
	return []Finding{{Severity: Note, Object: describe(kind, meta.Metadata.Namespace, meta.Metadata.Name), Path: path,
		Message: "passed through unchanged: KubeadmControlPlane bootstraps its Machines with its own KubeadmConfigs (CABPK); " +
			"cabpi has no control-plane provider (docs/adr/005). To run control-plane Machines with cabpi, " +
			"put this spec in a KubeadmConfig and convert that (docs/adr/016)"}}
}

// referenceNotes notes every reference in a passed-through document to a converted object: it
// still names the KubeadmConfig(Template), which the converted stream no longer has.
func referenceNotes(doc []byte, converted map[string]string) []Finding {
	var obj map[string]any
	if err := yaml.Unmarshal(doc, &obj); err != nil || obj == nil {
		return nil
	}
	var meta struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = yaml.Unmarshal(doc, &meta)
	var out []Finding
	walk(obj, "", func(path string, m map[string]any) {
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		target, ok := converted[kind+"/"+name]
		if !ok || path == "" {
			return
		}
		out = append(out, Finding{Severity: Note, Object: describe(meta.Kind, meta.Metadata.Namespace, meta.Metadata.Name), Path: path,
			Message: fmt.Sprintf("still names %s %s, which is converted to %s %s: set kind: %s and the group version bootstrap.cluster.x-k8s.io/v1alpha1 (apiGroup bootstrap.cluster.x-k8s.io)", kind, name, target, name, target)})
	})
	return out
}

// walk calls fn for every mapping under v with its field path.
func walk(v any, path string, fn func(string, map[string]any)) {
	switch t := v.(type) {
	case map[string]any:
		fn(path, t)
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := k
			if path != "" {
				p = path + "." + k
			}
			walk(t[k], p, fn)
		}
	case []any:
		for i, item := range t {
			walk(item, fmt.Sprintf("%s[%d]", path, i), fn)
		}
	}
}
