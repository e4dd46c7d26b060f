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
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// specCheck is one validation of an IgnitionConfigSpec.
type specCheck struct {
	spec *cabpiv1.IgnitionConfigSpec
	// path is the spec's field path: spec, or spec.template.spec for a template.
	path *field.Path
	// controlPlane renders the spec as a control-plane node (init and control-plane join, with
	// the cluster certificates) instead of a worker.
	controlPlane bool
	// kubernetesVersion is the version the spec is rendered for: the owner's when it is known
	// and supported, else configinput.DefaultKubernetesVersion.
	kubernetesVersion string
	// ownerVersion says kubernetesVersion is the owner's, not the stand-in.
	ownerVersion bool
}

// validateSpec checks a spec with the renderer's own checks and returns every error found.
//
// The variant comes first: nothing else can be checked without it. Then the spec is rendered
// the way `cabpi render` does, with placeholder credentials, once for each node role it will
// have; the render reports every problem it finds in one Report (ignition.Findings), each at
// its place, which Place.FieldPath turns into the spec's field path: an invalid inline Butane
// snippet or Container Linux Config (with its line and column), files at paths the provider
// owns, a snippet writing a file of spec.files, a pin lower than the snippet needs, kubeadm
// configuration that cannot be written, a pre- or post-kubeadm command that is not a complete
// shell command, permissions that do not parse, paths written twice, ... What only the merged
// configuration shows (paths that clash once the snippet is merged) is found once the parts
// are clean. The errors listed are capped (configinput.MaxListedFindings), the rest counted.
//
// Content in Secrets and ConfigMaps is not read: a Butane document or Container Linux Config from
// contentFrom is checked by the controller when it renders, and a file's Secret content is a
// placeholder here. Butane and a Container Linux Config both set is an error (the CRD's rule,
// applied again through configinput.CheckDocuments for objects validated without the API
// server).
//
// The render's warnings (a key Butane does not know and drops, ...) are returned as admission
// warnings, which kubectl prints: the config is admitted, but the user hears of them.
// ownerVersion says the Kubernetes version is the owner's: without it, a warning that the spec
// brings another Kubernetes version than the one rendered for would be about a stand-in.
func validateSpec(chk specCheck) (field.ErrorList, admission.Warnings) {
	p := chk.path
	spec := chk.spec
	variant := configinput.Variant(spec)
	if err := ignition.ValidateIgnitionVersion(variant, ""); err != nil {
		return field.ErrorList{field.NotSupported(p.Child("variant"), spec.Variant,
			[]cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS})}, nil
	}

	var errs field.ErrorList
	// work is what is rendered: the spec, less what admission cannot read.
	work := spec.DeepCopy()
	work.Variant = variant
	// An inline snippet is checked by the render below (one Butane translation per role, not
	// one more up front: a 1 MiB snippet takes most of a second to translate).
	if spec.Butane.ContentFrom != nil {
		work.Butane = cabpiv1.ButaneSpec{}
	}
	if spec.ContainerLinuxConfig.ContentFrom != nil {
		work.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{}
	}
	// One provisioning document: the CRD's rule says the same, first; this keeps validateSpec
	// whole on its own. The document refused is set aside, so the other is still checked.
	if err := configinput.CheckDocuments(spec); err != nil {
		var ierr *ignition.Error
		if !errors.As(err, &ierr) {
			return append(errs, field.InternalError(p, fmt.Errorf("checking the documents: %w", err))), nil
		}
		errs = append(errs, field.Forbidden(documentPath(p, ierr.Place.Part), ierr.Detail()))
		work.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{}
	}

	roles := []ignition.Role{ignition.RoleWorkerJoin}
	if chk.controlPlane {
		roles = []ignition.Role{ignition.RoleInit, ignition.RoleControlPlaneJoin}
	}
	var warnings admission.Warnings
	for _, role := range roles {
		roleErrs, roleWarnings := renderErrors(work, role, chk.kubernetesVersion, p)
		for _, e := range roleErrs {
			if !hasError(errs, e) {
				errs = append(errs, e)
			}
		}
		for _, w := range roleWarnings {
			if w.Kind == ignition.WarnKubernetesVersionMismatch && !chk.ownerVersion {
				continue
			}
			if text := warningText(w, p); !slices.Contains(warnings, text) {
				warnings = append(warnings, text)
			}
		}
	}
	return configinput.CapFieldErrors(errs, p), warnings
}

// warningText is a render warning as an admission warning: the field path of the document it
// is in, then where in the document and what.
func warningText(w ignition.Warning, p *field.Path) string {
	at := w.Place.FieldPath(p)
	w.Place = ignition.Place{} // the field path says it
	return at.String() + ": " + w.String()
}

// renderErrors renders work once for role and turns every finding of the render into a field
// error at its field path, with the warnings.
func renderErrors(work *cabpiv1.IgnitionConfigSpec, role ignition.Role, version string, p *field.Path) (field.ErrorList, []ignition.Warning) {
	out, err := configinput.RenderOffline(context.Background(), work, role, version, nil)
	if err == nil {
		// What renders must also fit in the data Secret (placeholders are as long as what
		// they stand for, but for certificates, which only control-plane nodes have).
		var errs field.ErrorList
		if msg := configinput.DataTooLarge(out.Size.Bytes); msg != "" {
			errs = append(errs, field.Invalid(p, field.OmitValueType{}, msg))
		}
		return errs, out.Warnings
	}
	errs := configinput.FieldErrors(err, p)
	if len(errs) == 0 {
		return field.ErrorList{field.InternalError(p, fmt.Errorf("rendering the %s configuration: %w", role, err))}, nil
	}
	var rep *ignition.Report
	if errors.As(err, &rep) {
		return errs, rep.Warnings
	}
	return errs, nil
}

// documentPath is the spec's section of a provisioning document: butane or containerLinuxConfig.
func documentPath(p *field.Path, part ignition.Part) *field.Path {
	if part == ignition.PartContainerLinuxConfig {
		return p.Child("containerLinuxConfig")
	}
	return p.Child("butane")
}

// message is the renderer's message of err, with the location inside the Butane document or
// Container Linux Config when the renderer knows it. The field is left out: the field error carries the path.
func message(err error) string {
	var ierr *ignition.Error
	if !errors.As(err, &ierr) {
		return err.Error()
	}
	return ierr.Detail()
}

// hasError reports whether errs has an error of the same type, field and detail as e.
func hasError(errs field.ErrorList, e *field.Error) bool {
	for _, x := range errs {
		if x.Type == e.Type && x.Field == e.Field && x.Detail == e.Detail {
			return true
		}
	}
	return false
}
