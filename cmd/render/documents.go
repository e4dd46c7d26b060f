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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// configKinds are the kinds `cabpi render` renders.
var configKinds = []string{"IgnitionConfig", "IgnitionConfigTemplate"}

// selection is what `cabpi render` found in its -f file: the config document to render and,
// when the file also holds the config's owner and the owner's infrastructure machine (as the
// output of `clusterctl generate cluster` does), how that machine hands the data over.
type selection struct {
	config   []byte
	delivery configinput.Delivery
}

// selectConfig picks the config named name (any, when the file holds one) from the documents in
// data, and follows its owner (a Machine, MachineDeployment or MachinePool whose bootstrap
// configRef names it) to the owner's infrastructure machine or machine template in the same file.
func selectConfig(data []byte, name string) (selection, error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return selection{}, err
	}
	if len(docs) == 1 && name == "" {
		// One document: whatever it is, SpecFromYAML reads it (and says what it is not).
		return selection{config: data}, nil
	}
	var configs []*unstructured.Unstructured
	for _, d := range docs {
		if slices.Contains(configKinds, d.GetKind()) && (name == "" || d.GetName() == name) {
			configs = append(configs, d)
		}
	}
	switch {
	case len(configs) == 0 && name != "":
		return selection{}, fmt.Errorf("no IgnitionConfig or IgnitionConfigTemplate named %q in the file", name)
	case len(configs) == 0:
		return selection{}, errors.New("no IgnitionConfig or IgnitionConfigTemplate in the file")
	case len(configs) > 1:
		names := make([]string, len(configs))
		for i, c := range configs {
			names[i] = c.GetKind() + " " + c.GetName()
		}
		return selection{}, fmt.Errorf("the file holds %d configs (%s): choose one with --name", len(configs), strings.Join(names, ", "))
	}
	config := configs[0]
	raw, err := yaml.Marshal(config.Object)
	if err != nil {
		return selection{}, fmt.Errorf("reading %s %s: %w", config.GetKind(), config.GetName(), err)
	}
	sel := selection{config: raw}
	infra := infrastructureOf(docs, config)
	if infra != nil {
		if sel.delivery, err = configinput.DeliveryOf(infra); err != nil {
			return selection{}, err
		}
	}
	return sel, nil
}

// infrastructureOf finds the infrastructure machine (template) of config's owner among docs, nil
// when the file does not hold both.
func infrastructureOf(docs []*unstructured.Unstructured, config *unstructured.Unstructured) *unstructured.Unstructured {
	// Where each owner kind keeps its bootstrap configRef and infrastructureRef.
	owners := map[string][]string{
		"Machine":           {"spec"},
		"MachineDeployment": {"spec", "template", "spec"},
		"MachineSet":        {"spec", "template", "spec"},
		"MachinePool":       {"spec", "template", "spec"},
	}
	for _, d := range docs {
		path, ok := owners[d.GetKind()]
		if !ok {
			continue
		}
		ref, _, _ := unstructured.NestedStringMap(d.Object, append(slices.Clone(path), "bootstrap", "configRef")...)
		if ref["kind"] != config.GetKind() || ref["name"] != config.GetName() {
			continue
		}
		infra, _, _ := unstructured.NestedStringMap(d.Object, append(slices.Clone(path), "infrastructureRef")...)
		for _, m := range docs {
			if m.GetKind() == infra["kind"] && m.GetName() == infra["name"] {
				return m
			}
		}
	}
	return nil
}

// splitDocuments reads every YAML document of data (empty ones skipped).
func splitDocuments(data []byte) ([]*unstructured.Unstructured, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []*unstructured.Unstructured
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading YAML document %d: %w", i+1, err)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			return nil, fmt.Errorf("reading YAML document %d: %w", i+1, err)
		}
		if len(obj) > 0 {
			docs = append(docs, &unstructured.Unstructured{Object: obj})
		}
	}
}
