package configinput

import (
	"context"
	"fmt"
	"io"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// SpecFromYAML reads the spec of an IgnitionConfig or the template spec of an IgnitionConfigTemplate.
func SpecFromYAML(doc []byte) (*cabpiv1.IgnitionConfigSpec, error) {
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := utilyaml.Unmarshal(doc, &meta); err != nil {
		return nil, fmt.Errorf("reading the YAML: %w", err)
	}
	switch meta.Kind {
	case "IgnitionConfig":
		c := &cabpiv1.IgnitionConfig{}
		if err := utilyaml.UnmarshalStrict(doc, c); err != nil {
			return nil, fmt.Errorf("reading the IgnitionConfig: %w", err)
		}
		return &c.Spec, nil
	case "IgnitionConfigTemplate":
		t := &cabpiv1.IgnitionConfigTemplate{}
		if err := utilyaml.UnmarshalStrict(doc, t); err != nil {
			return nil, fmt.Errorf("reading the IgnitionConfigTemplate: %w", err)
		}
		return &t.Spec.Template.Spec, nil
	}
	return nil, fmt.Errorf("kind %q is neither IgnitionConfig nor IgnitionConfigTemplate", meta.Kind)
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
	if !role.Known() {
		return ignition.Output{}, fmt.Errorf("unknown role %q: use worker, init or control-plane", role)
	}
	cluster := Placeholders(spec, role)
	cluster.Delivery = delivery
	in, err := Build(ctx, spec, role, version, cluster, OfflineResolver{Warn: warn})
	if err != nil {
		return ignition.Output{}, err
	}
	return ignition.Render(in)
}
