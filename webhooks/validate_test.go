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

package webhooks

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// spec.kubernetes errors are field errors at the field the renderer places them at, under
// spec for an IgnitionConfig and spec.template.spec for a template, through the webhooks' own
// entry points; the rest of the spec is still checked once spec.kubernetes is set aside.
func TestValidateKubernetesPlaces(t *testing.T) {
	fcosSysext := func(s *cabpiv1.IgnitionConfigSpec) {
		s.Variant = cabpiv1.VariantFCOS
		s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}
	}
	sysextWithBinaries := func(s *cabpiv1.IgnitionConfigSpec) {
		s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
			Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/ext"}}
	}
	ftpBinaries := func(s *cabpiv1.IgnitionConfigSpec) {
		s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "ftp://x"}}
	}
	type want struct {
		field string
		// contains is a user-facing property of the cause's message: the bad value or what to do.
		contains string
	}
	cases := []struct {
		name     string
		template bool
		spec     func(*cabpiv1.IgnitionConfigSpec)
		want     []want // nil: accepted
	}{
		{"config: fcos sysext without baseURL", false, fcosSysext,
			[]want{{"spec.kubernetes.sysext.baseURL", "Flatcar"}}},
		{"template: fcos sysext without baseURL", true, fcosSysext,
			[]want{{"spec.template.spec.kubernetes.sysext.baseURL", "Flatcar"}}},
		{"config: sysext with source binaries", false, sysextWithBinaries,
			[]want{{"spec.kubernetes.sysext", "only read with source sysext"}}},
		{"template: sysext with source binaries", true, sysextWithBinaries,
			[]want{{"spec.template.spec.kubernetes.sysext", "only read with source sysext"}}},
		{"config: binaries baseURL ftp", false, ftpBinaries,
			[]want{{"spec.kubernetes.binaries.baseURL", `Invalid value: "ftp://x": `}}},
		{"template: binaries baseURL ftp", true, ftpBinaries,
			[]want{{"spec.template.spec.kubernetes.binaries.baseURL", `Invalid value: "ftp://x": `}}},
		{"template: unknown arch", true, func(s *cabpiv1.IgnitionConfigSpec) {
			s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Arch: "s390x"}
		}, []want{{"spec.template.spec.kubernetes.arch", `Invalid value: "s390x": `}}},
		{"config: a user's file at /opt/bin/kubeadm with binaries", false, func(s *cabpiv1.IgnitionConfigSpec) {
			s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries}
			s.Files = []cabpiv1.File{{Path: "/opt/bin/kubeadm", Content: "x"}}
		}, []want{{"spec.files[0].path", "/opt/bin/kubeadm"}}},
		{"template: a snippet writing the extension link with sysext", true, func(s *cabpiv1.IgnitionConfigSpec) {
			s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, DigestsFrom: digestsFrom}
			s.Butane.Inline = "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n  - path: /etc/extensions/kubernetes.raw\n"
		}, []want{{"spec.template.spec.butane.inline", "/etc/extensions/kubernetes.raw"}}},
		// Set aside, spec.kubernetes leaves the rest to be checked: the file's error is found too.
		{"config: bad baseURL and a bad command", false, func(s *cabpiv1.IgnitionConfigSpec) {
			ftpBinaries(s)
			s.PreKubeadmCommands = []string{"echo 'x"}
		}, []want{{"spec.kubernetes.binaries.baseURL", `Invalid value: "ftp://x": `}, {"spec.preKubeadmCommands[0]", "not a complete shell command"}}},
		{"config: flatcar sysext", false, func(s *cabpiv1.IgnitionConfigSpec) {
			s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{Sysupdate: true}, DigestsFrom: digestsFrom}
		}, nil},
		// The catalogue has no system extension images: their digests are the user's to give.
		{"template: flatcar sysext without digests", true, func(s *cabpiv1.IgnitionConfigSpec) {
			s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}
		}, []want{{"spec.template.spec.kubernetes.digestsFrom", "no SHA-256 is known for kubernetes-v1.34.0-x86-64.raw"}}},
		{"config: http sysext with sysupdate and no digests", false, func(s *cabpiv1.IgnitionConfigSpec) {
			s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext,
				Sysext: &cabpiv1.SysextSource{BaseURL: "http://10.0.0.5/ext", Sysupdate: true}}
		}, []want{{"spec.kubernetes.digestsFrom", "no SHA-256 is known"}, {"spec.kubernetes.sysext.baseURL", "http://"}}},
		{"template: fcos binaries from a mirror", true, func(s *cabpiv1.IgnitionConfigSpec) {
			s.Variant = cabpiv1.VariantFCOS
			s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Arch: cabpiv1.ArchitectureARM64,
				Binaries: &cabpiv1.BinariesSource{BaseURL: "https://mirror.example/release/", Kubectl: true}}
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.template {
				tpl := &cabpiv1.IgnitionConfigTemplate{ObjectMeta: metav1.ObjectMeta{Name: "t"}}
				tc.spec(&tpl.Spec.Template.Spec)
				_, err = (&IgnitionConfigTemplateWebhook{}).ValidateCreate(t.Context(), tpl)
			} else {
				c := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
				tc.spec(&c.Spec)
				_, err = (&IgnitionConfigWebhook{}).ValidateCreate(t.Context(), c)
			}
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			var status *apierrors.StatusError
			require.ErrorAs(t, err, &status)
			require.Equal(t, metav1.StatusReasonInvalid, status.ErrStatus.Reason)
			require.NotNil(t, status.ErrStatus.Details)
			causes := status.ErrStatus.Details.Causes
			require.Len(t, causes, len(tc.want), "%v", causes)
			for i, w := range tc.want {
				assert.Equal(t, w.field, causes[i].Field)
				assert.Equal(t, metav1.CauseTypeFieldValueInvalid, causes[i].Type)
				assert.Contains(t, causes[i].Message, w.contains)
			}
		})
	}
}

// The owner's version is the Kubernetes version: one the source's layout does not have is an
// error on the spec as a whole (no field of the spec is at fault), and the same version is fine
// with source image.
func TestValidateKubernetesOwnerVersion(t *testing.T) {
	for _, tc := range []struct {
		source  cabpiv1.KubernetesSource
		version string
		bad     bool
	}{
		{cabpiv1.KubernetesSourceSysext, "v1.34.0-rc.1", true},
		{cabpiv1.KubernetesSourceBinaries, "v1.34.0+vendor.1", true},
		{cabpiv1.KubernetesSourceBinaries, "v1.35.0-rc.1", false},
		{cabpiv1.KubernetesSourceImage, "v1.34.0+vendor.1", false},
	} {
		t.Run(string(tc.source)+"-"+tc.version, func(t *testing.T) {
			// digestsFrom is not read at admission: its downloads are pinned to a stand-in.
			spec := &cabpiv1.IgnitionConfigSpec{Kubernetes: cabpiv1.KubernetesSpec{Source: tc.source, DigestsFrom: digestsFrom}}
			errs, _ := validateSpec(specCheck{spec: spec, path: field.NewPath("spec"), kubernetesVersion: tc.version})
			if !tc.bad {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1, "%v", errs)
			assert.Equal(t, "spec", errs[0].Field)
			assert.Contains(t, errs[0].Detail, tc.version)
		})
	}
}

// Three independent mistakes in three parts of the spec are refused at once, each at its field
// path: one kubectl apply tells the user all three.
func TestValidateListsEveryMistake(t *testing.T) {
	c := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: threeMistakes()}
	_, err := (&IgnitionConfigWebhook{}).ValidateCreate(t.Context(), c)
	var status *apierrors.StatusError
	require.ErrorAs(t, err, &status)
	causes := status.ErrStatus.Details.Causes
	var fields []string
	for _, cause := range causes {
		fields = append(fields, cause.Field)
	}
	assert.ElementsMatch(t, []string{"spec.butane.inline", "spec.files[0].path", "spec.joinConfiguration.discovery.tlsBootstrapToken"}, fields, "%v", causes)
}

// threeMistakes is a spec with a Butane snippet that does not parse, a file at a path the
// provider owns and a TLS bootstrap token kubeadm refuses.
func threeMistakes() cabpiv1.IgnitionConfigSpec {
	spec := cabpiv1.IgnitionConfigSpec{
		Butane: cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.0.0\nstorage: [\n"},
		Files:  []cabpiv1.File{{Path: "/etc/kubeadm.sh", Content: "x"}},
	}
	spec.JoinConfiguration.Discovery.TLSBootstrapToken = "not-a-token"
	return spec
}

// The bad inputs of issue 28, refused at admission with every finding in the one answer, each
// at its field path; a base URL's credentials are never repeated.
func TestValidateRefusesBadInputs(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{
		Platform: cabpiv1.PlatformAzure,
		NodeName: &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformAWS},
		Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
			Binaries: &cabpiv1.BinariesSource{BaseURL: "https://user:hunter2@mirror.example/release"}},
		Files: []cabpiv1.File{{Path: "/usr/local/bin/tool", Content: "x"}},
		Users: []cabpiv1.User{{Name: "ops", Shell: "/bin/sh:x"}},
		Butane: cabpiv1.ButaneSpec{Inline: "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: /opt/x\n      contents:\n" +
			"        source: https://example.com/x\n        verification:\n          hash: sha256-" + strings.Repeat("z", 64) + "\n"},
	}
	errs, _ := validateSpec(specCheck{spec: spec, path: field.NewPath("spec"), kubernetesVersion: configinput.DefaultKubernetesVersion})
	byField := map[string]*field.Error{}
	for _, e := range errs {
		byField[e.Field] = e
	}
	for _, f := range []string{"spec.nodeName.fromMetadata", "spec.kubernetes.binaries.baseURL", "spec.files[0].path", "spec.users[0].shell", "spec.butane.inline"} {
		assert.Contains(t, byField, f, "%v", errs)
	}
	require.Len(t, errs, 5, "%v", errs)
	assert.NotContains(t, errs.ToAggregate().Error(), "hunter2", "the base URL's credentials are never repeated")
	assert.Equal(t, "/usr/local/bin/tool", byField["spec.files[0].path"].BadValue)
}

// A spec with more problems than are listed gets the first configinput.MaxListedFindings and a count of the
// rest, on the spec.
func TestValidateCapsTheList(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{}
	for i := range configinput.MaxListedFindings + 3 {
		spec.Files = append(spec.Files, cabpiv1.File{Path: fmt.Sprintf("relative/%d", i), Content: "x"})
	}
	errs, _ := validateSpec(specCheck{spec: spec, path: field.NewPath("spec"), kubernetesVersion: configinput.DefaultKubernetesVersion})
	require.Len(t, errs, configinput.MaxListedFindings+1)
	last := errs[configinput.MaxListedFindings]
	assert.Equal(t, "spec", last.Field)
	assert.Contains(t, last.Detail, "and 3 more problems")
}

// The warning that a user's own Kubernetes sysext differs from the version rendered for is
// given only when that version is the owner's, not the stand-in of a config without owner.
func TestValidateForeignSysextWarnedForTheOwnersVersion(t *testing.T) {
	spec := &cabpiv1.IgnitionConfigSpec{Files: []cabpiv1.File{{Path: "/opt/extensions/kubernetes/kubernetes-v1.33.2-x86-64.raw", Content: "x"}}}
	_, warnings := validateSpec(specCheck{spec: spec, path: field.NewPath("spec"), kubernetesVersion: "v1.34.4", ownerVersion: true})
	require.Len(t, warnings, 1, "%v", warnings)
	assert.Contains(t, warnings[0], "spec.files[0].path: ")
	assert.Contains(t, warnings[0], "v1.33.2")
	_, warnings = validateSpec(specCheck{spec: spec, path: field.NewPath("spec"), kubernetesVersion: configinput.DefaultKubernetesVersion})
	assert.Empty(t, warnings)
}

// digestsFrom names a user's digest list, which admission does not read.
var digestsFrom = &cabpiv1.DigestsSource{ConfigMap: &cabpiv1.KeyReference{Name: "mirror-digests", Key: "SHA256SUMS"}}
