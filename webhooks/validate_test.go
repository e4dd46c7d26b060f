package webhooks

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// Butane and a Container Linux Config both set is a field error even where no CRD rule ran
// (the API server's CEL says the same first); the Butane snippet is still checked.
func TestValidateSpecRefusesButaneWithContainerLinuxConfig(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{
		Butane:               cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.0.0\nstorage: [\n"},
		ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{Inline: "systemd: {}\n"},
	}
	errs, _ := validateSpec(specCheck{spec: spec, path: field.NewPath("spec"), kubernetesVersion: configinput.DefaultKubernetesVersion})
	require.Len(t, errs, 2, "%v", errs)
	assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
	assert.Equal(t, "spec.containerLinuxConfig", errs[0].Field)
	assert.Contains(t, errs[0].Detail, "set butane or containerLinuxConfig, not both")
	assert.Equal(t, "spec.butane.inline", errs[1].Field)
	assert.Contains(t, errs[1].Detail, "(line 3)")

	spec.Butane = cabpiv1.ButaneSpec{}
	errs, _ = validateSpec(specCheck{spec: spec, path: field.NewPath("spec"), kubernetesVersion: configinput.DefaultKubernetesVersion})
	assert.Empty(t, errs, "the Container Linux Config alone is fine")
}

// A control-plane spec renders for two roles (init and control-plane join); a snippet's warning
// is said once. (The API server drops repeated warnings too, so only this test sees it.)
func TestValidateSpecSaysEachWarningOnce(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{
		Butane: cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.0.0\nstorage:\n  filez:\n  - path: /etc/motd\n"},
	}
	errs, warnings := validateSpec(specCheck{spec: spec, path: field.NewPath("spec"), controlPlane: true,
		kubernetesVersion: configinput.DefaultKubernetesVersion})
	require.Empty(t, errs)
	require.Len(t, warnings, 1, "%v", warnings)
	assert.Contains(t, warnings[0], "spec.butane.inline: line 4, column 3")
}
