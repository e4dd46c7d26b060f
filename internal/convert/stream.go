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
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// kubeadmGroup is the API group of CABPK's and cabpi's kinds alike.
const kubeadmGroup = "bootstrap.cluster.x-k8s.io"

// Converted is one object the command converted.
type Converted struct {
	// Source is "Kind namespace/name" of the object in the input, Target of the converted one.
	Source, Target string
	// Object is the converted *IgnitionConfig or *IgnitionConfigTemplate, with its TypeMeta.
	Object client.Object
	// Spec is the converted spec (the template's spec for a template).
	Spec *cabpiv1.IgnitionConfigSpec
}

// Result is what Convert made of a stream.
type Result struct {
	// Output is the converted stream: converted objects and the other documents, in input order.
	Output []byte
	// Findings are what could not be converted, notes and rendering warnings, in input order.
	Findings []Finding
	// Converted are the converted objects, in input order.
	Converted []Converted
}

// Lossy counts the lossy findings.
func (r *Result) Lossy() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Lossy {
			n++
		}
	}
	return n
}

// Convert converts every KubeadmConfig and KubeadmConfigTemplate of a YAML stream and passes the
// other documents through unchanged. An error means the input is not readable or a converted
// config does not render; findings are not errors.
func Convert(input []byte) (*Result, error) {
	docs, err := splitDocuments(input)
	if err != nil {
		return nil, err
	}
	res := &Result{}
	var out [][]byte
	var passed [][]byte
	names := map[string]string{} // "Kind/name" of each converted source -> its new kind
	for i, doc := range docs {
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("document %d: not YAML: %w", i+1, err)
		}
		group, version, _ := strings.Cut(meta.APIVersion, "/")
		if group != kubeadmGroup || (meta.Kind != "KubeadmConfig" && meta.Kind != "KubeadmConfigTemplate") {
			out = append(out, doc)
			passed = append(passed, doc)
			res.Findings = append(res.Findings, passThroughNotes(meta.APIVersion, meta.Kind, doc)...)
			continue
		}
		conv, fs, err := convertDocument(version, meta.Kind, doc)
		if err != nil {
			return nil, fmt.Errorf("document %d (%s): %w", i+1, meta.Kind, err)
		}
		warnings, err := renderWarnings(conv)
		if err != nil {
			return nil, err
		}
		res.Findings = append(res.Findings, fs...)
		res.Findings = append(res.Findings, warnings...)
		res.Converted = append(res.Converted, conv)
		data, err := yaml.Marshal(conv.Object)
		if err != nil {
			return nil, fmt.Errorf("document %d: writing the converted %s: %w", i+1, meta.Kind, err)
		}
		out = append(out, data)
		names[meta.Kind+"/"+conv.Object.GetName()] = conv.Object.GetObjectKind().GroupVersionKind().Kind
	}
	for _, doc := range passed {
		res.Findings = append(res.Findings, referenceNotes(doc, names)...)
	}
	res.Output = joinDocuments(out)
	return res, nil
}

// splitDocuments returns the documents of a YAML stream as they are written, without the "---"
// separators; documents with nothing but blanks are dropped, documents with only comments kept.
func splitDocuments(input []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(input)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading the YAML stream: %w", err)
		}
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		docs = append(docs, doc)
	}
}

func joinDocuments(docs [][]byte) []byte {
	var b bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(d)
		if !bytes.HasSuffix(d, []byte("\n")) {
			b.WriteByte('\n')
		}
	}
	return b.Bytes()
}

// describe names an object in findings: "Kind namespace/name", or "Kind name" without a namespace.
func describe(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}
