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
	if !role.Known() {
		return ignition.Output{}, fmt.Errorf("unknown role %q: use worker, init or control-plane", role)
	}
	in, err := Offline(ctx, spec, role, version, OfflineResolver{Warn: warn})
	if err != nil {
		return ignition.Output{}, err
	}
	return ignition.Render(in)
}
