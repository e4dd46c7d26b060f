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

package configinput

import (
	"context"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// Document is an IgnitionConfig or IgnitionConfigTemplate read from YAML: its kind and name, and
// the spec with its field path (spec, or spec.template.spec), where findings are reported.
type Document struct {
	Kind, Name string
	Spec       *cabpiv1.IgnitionConfigSpec
	SpecPath   *field.Path
}

// ReadDocument reads an IgnitionConfig or IgnitionConfigTemplate (strictly: an unknown field is
// an error).
func ReadDocument(doc []byte) (Document, error) {
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := utilyaml.Unmarshal(doc, &meta); err != nil {
		return Document{}, fmt.Errorf("reading the YAML: %w", err)
	}
	switch meta.Kind {
	case "IgnitionConfig":
		c := &cabpiv1.IgnitionConfig{}
		if err := utilyaml.UnmarshalStrict(doc, c); err != nil {
			return Document{}, fmt.Errorf("reading the IgnitionConfig: %w", err)
		}
		return Document{Kind: meta.Kind, Name: c.Name, Spec: &c.Spec, SpecPath: field.NewPath("spec")}, nil
	case "IgnitionConfigTemplate":
		t := &cabpiv1.IgnitionConfigTemplate{}
		if err := utilyaml.UnmarshalStrict(doc, t); err != nil {
			return Document{}, fmt.Errorf("reading the IgnitionConfigTemplate: %w", err)
		}
		return Document{Kind: meta.Kind, Name: t.Name, Spec: &t.Spec.Template.Spec,
			SpecPath: field.NewPath("spec", "template", "spec")}, nil
	}
	return Document{}, fmt.Errorf("kind %q is neither IgnitionConfig nor IgnitionConfigTemplate", meta.Kind)
}

// SpecFromYAML reads the spec of an IgnitionConfig or the template spec of an IgnitionConfigTemplate.
func SpecFromYAML(doc []byte) (*cabpiv1.IgnitionConfigSpec, error) {
	d, err := ReadDocument(doc)
	return d.Spec, err
}

// RenderOffline renders spec for role the way the controller would, with placeholder
// credentials: `cabpi render`, `cabpi convert` and admission preview the same output this way.
// Warnings about placeholders go to warn.
func RenderOffline(ctx context.Context, spec *cabpiv1.IgnitionConfigSpec, role ignition.Role, version string, warn io.Writer) (ignition.Output, error) {
	return RenderOfflineFor(ctx, spec, role, version, Delivery{}, warn)
}

// RenderOfflineFor is RenderOffline for a machine that hands the data over as delivery says
// (`cabpi render` of a generated cluster, which holds the infrastructure machine too).
func RenderOfflineFor(ctx context.Context, spec *cabpiv1.IgnitionConfigSpec, role ignition.Role, version string, delivery Delivery, warn io.Writer) (ignition.Output, error) {
	return RenderOfflineWith(ctx, spec, role, version, delivery, OfflineResolver{Warn: warn})
}

// RenderOfflineWith is RenderOfflineFor with the offline resolver given (cabpi render --digests).
func RenderOfflineWith(ctx context.Context, spec *cabpiv1.IgnitionConfigSpec, role ignition.Role, version string, delivery Delivery, res OfflineResolver) (ignition.Output, error) {
	if !role.Known() {
		return ignition.Output{}, fmt.Errorf("unknown role %q: use worker, init or control-plane", role)
	}
	cluster := Placeholders(spec, role)
	cluster.Delivery = delivery
	in, err := Build(ctx, spec, role, version, cluster, res)
	if err != nil {
		return ignition.Output{}, err
	}
	return ignition.Render(in)
}
