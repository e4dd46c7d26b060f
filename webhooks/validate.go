package webhooks

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// maxRenderErrors bounds the errors collected by rendering (one render per error found), so a
// config with hundreds of bad files costs a bounded amount of work.
const maxRenderErrors = 25

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
}

// validateSpec checks a spec with the renderer's own checks and returns every error found.
//
// Field checks come first and are all reported: the variant, the pinned Ignition version
// (ignition.ValidateIgnitionVersion), file permissions (configinput.ParseMode) and file paths
// written twice once cleaned (the CRD's list-map key only catches identical strings). Then the
// spec is rendered the way `cabpi render` does, with placeholder credentials, for the node role
// it will have: that finds an invalid inline Butane snippet or Container Linux Config (with its
// line and column) and
// what only a whole render sees (files at paths the provider owns, a snippet writing a file of
// spec.files, a pin lower than the snippet needs, kubeadm configuration that cannot be written, a
// pre- or post-kubeadm command that is not a complete shell command, paths that clash once the
// snippet is merged). The renderer stops at its first error, so each error found is set aside
// (the file or command replaced by a placeholder, the snippet dropped, ...) and the
// render repeated, until it succeeds or nothing more can be set aside.
//
// Content in Secrets and ConfigMaps is not read: a Butane document or Container Linux Config from
// contentFrom is checked by the controller when it renders, and a file's Secret content is a
// placeholder here. Butane and a Container Linux Config both set is an error (the CRD's rule,
// applied again through configinput.CheckDocuments for objects validated without the API
// server).
//
// The render's warnings (a key Butane does not know and drops, ...) are returned as admission
// warnings, which kubectl prints: the config is admitted, but the user hears of them.
func validateSpec(chk specCheck) (field.ErrorList, admission.Warnings) {
	p := chk.path
	spec := chk.spec
	variant := configinput.Variant(spec)
	if err := ignition.ValidateIgnitionVersion(variant, ""); err != nil {
		return field.ErrorList{field.NotSupported(p.Child("variant"), spec.Variant,
			[]cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS})}, nil
	}

	var errs field.ErrorList
	// work is what is rendered: the spec with every error found so far set aside.
	work := spec.DeepCopy()
	work.Variant = variant

	if err := ignition.ValidateIgnitionVersion(variant, spec.IgnitionVersion); err != nil {
		errs = append(errs, field.Invalid(p.Child("ignitionVersion"), spec.IgnitionVersion, message(err)))
		work.IgnitionVersion = ""
	}

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
		setAsideDocument(work, ierr.Place.Part)
	}

	seen := map[string]int{}
	for i, f := range spec.Files {
		fp := p.Child("files").Index(i)
		if f.Permissions != "" {
			if _, err := configinput.ParseMode(f.Permissions); err != nil {
				errs = append(errs, field.Invalid(fp.Child("permissions"), f.Permissions, err.Error()))
				work.Files[i].Permissions = ""
			}
		}
		clean := path.Clean(f.Path)
		if j, dup := seen[clean]; dup {
			errs = append(errs, field.Invalid(fp.Child("path"), f.Path,
				fmt.Sprintf("path %s is also written by %s", f.Path, p.Child("files").Index(j))))
			work.Files[i] = placeholderFile(i)
			continue
		}
		seen[clean] = i
	}

	roles := []ignition.Role{ignition.RoleWorkerJoin}
	if chk.controlPlane {
		roles = []ignition.Role{ignition.RoleInit, ignition.RoleControlPlaneJoin}
	}
	var warnings admission.Warnings
	for _, role := range roles {
		roleErrs, roleWarnings := renderErrors(spec, work.DeepCopy(), role, chk.kubernetesVersion, p)
		for _, e := range roleErrs {
			if !hasError(errs, e) {
				errs = append(errs, e)
			}
		}
		for _, w := range roleWarnings {
			if !slices.Contains(warnings, w) {
				warnings = append(warnings, w)
			}
		}
	}
	return errs, warnings
}

// warningText is a render warning as an admission warning: the field path of the document it
// is in, then where in the document and what.
func warningText(w ignition.Warning, p *field.Path) string {
	at := specPath(p, w.Place)
	w.Place = ignition.Place{} // the field path says it
	return at.String() + ": " + w.String()
}

// renderErrors renders work for role until it renders, setting aside what each error blames.
// spec is the user's spec, for the values in the errors.
func renderErrors(spec, work *cabpiv1.IgnitionConfigSpec, role ignition.Role, version string, p *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	for len(errs) < maxRenderErrors {
		out, err := configinput.RenderOffline(context.Background(), work, role, version, nil)
		if err == nil {
			// What renders must also fit in the data Secret (placeholders are as long as what
			// they stand for, but for certificates, which only control-plane nodes have).
			if msg := configinput.DataTooLarge(out.Size.Bytes); msg != "" {
				errs = append(errs, field.Invalid(p, field.OmitValueType{}, msg))
			}
			warnings := make([]string, 0, len(out.Warnings))
			for _, w := range out.Warnings {
				warnings = append(warnings, warningText(w, p))
			}
			return errs, warnings
		}
		var ierr *ignition.Error
		if !errors.As(err, &ierr) {
			return append(errs, field.InternalError(p, fmt.Errorf("rendering the %s configuration: %w", role, err))), nil
		}
		e, setAside := blame(ierr, spec, work, p)
		errs = append(errs, e)
		if !setAside {
			return errs, nil
		}
	}
	return errs, nil
}

// placeholderCommand stands in for a command whose error was reported.
const placeholderCommand = "true"

// specPath is the field of the user's spec that a place of the renderer's input comes from.
// Only inline documents are rendered at admission, so a document's place is its inline field.
// A place no field of the spec is at fault for (the merged configuration, the role, the
// Kubernetes version of the owner) is the spec as a whole.
func specPath(p *field.Path, at ignition.Place) *field.Path {
	switch at.Part {
	case ignition.PartButane, ignition.PartContainerLinuxConfig:
		return documentPath(p, at.Part).Child("inline")
	case ignition.PartVariant:
		return p.Child("variant")
	case ignition.PartIgnitionVersion:
		return p.Child("ignitionVersion")
	case ignition.PartClusterConfiguration:
		return p.Child("clusterConfiguration", at.Names()...)
	case ignition.PartInitConfiguration:
		return p.Child("initConfiguration", at.Names()...)
	case ignition.PartJoinConfiguration:
		return p.Child("joinConfiguration", at.Names()...)
	case ignition.PartNodeName:
		return p.Child("nodeName", at.Names()...)
	case ignition.PartKubernetes:
		return p.Child("kubernetes", at.Names()...)
	case ignition.PartFile:
		fp := p.Child("files").Index(at.Index)
		switch at.Member() {
		case ignition.FileMode:
			return fp.Child("permissions")
		case ignition.FileOwner:
			return fp.Child("owner")
		case ignition.FileContent:
			return fp.Child("content")
		case ignition.FileAppend:
			return fp.Child("append")
		}
		// The path, or the file as a whole (where its content comes from, among others).
		return fp.Child("path")
	case ignition.PartPreKubeadmCommand:
		return p.Child("preKubeadmCommands").Index(at.Index)
	case ignition.PartPostKubeadmCommand:
		return p.Child("postKubeadmCommands").Index(at.Index)
	}
	return p
}

// documentPath is the spec's section of a provisioning document: butane or containerLinuxConfig.
func documentPath(p *field.Path, part ignition.Part) *field.Path {
	if part == ignition.PartContainerLinuxConfig {
		return p.Child("containerLinuxConfig")
	}
	return p.Child("butane")
}

// blame turns a render error into a field error on the user's spec and sets aside, in work,
// what it blames so the next render can look further. It reports false when nothing could be
// set aside (the same error would come back). Values are echoed only where they cannot be
// secret: a document, a kubeadm section, a file's content or a command may carry credentials.
func blame(ierr *ignition.Error, spec, work *cabpiv1.IgnitionConfigSpec, p *field.Path) (*field.Error, bool) {
	msg := message(ierr)
	at := ierr.Place
	fp := specPath(p, at)
	switch at.Part {
	case ignition.PartButane, ignition.PartContainerLinuxConfig:
		// The document is invalid, or conflicts with the rest of the spec (spec.files, the
		// certificates of a control-plane node): either way it is set aside.
		setAsideDocument(work, at.Part)
		return field.Invalid(fp, field.OmitValueType{}, msg), true
	case ignition.PartIgnitionVersion:
		work.IgnitionVersion = ""
		return field.Invalid(fp, spec.IgnitionVersion, msg), true
	// A field inside a section (a token, the discovery file, the node name option): the error
	// names that field and the whole section is set aside, but for a worker's controlPlane,
	// which is all that is wrong with its join configuration.
	case ignition.PartClusterConfiguration:
		work.ClusterConfiguration = kubeadmv1.ClusterConfiguration{}
		return field.Invalid(fp, field.OmitValueType{}, msg), true
	case ignition.PartInitConfiguration:
		work.InitConfiguration = kubeadmv1.InitConfiguration{}
		return field.Invalid(fp, field.OmitValueType{}, msg), true
	case ignition.PartJoinConfiguration:
		if len(at.Path) == 1 && at.Member() == ignition.JoinControlPlane {
			work.JoinConfiguration.ControlPlane = nil
		} else {
			work.JoinConfiguration = kubeadmv1.JoinConfiguration{}
		}
		return field.Invalid(fp, field.OmitValueType{}, msg), true
	case ignition.PartNodeName:
		work.NodeName = nil
		return field.Invalid(fp, field.OmitValueType{}, msg), true
	case ignition.PartKubernetes:
		work.Kubernetes = cabpiv1.KubernetesSpec{}
		return field.Invalid(fp, kubernetesValue(spec.Kubernetes, at), msg), true
	case ignition.PartFile:
		i := at.Index
		if i >= len(spec.Files) || i >= len(work.Files) {
			break
		}
		f := spec.Files[i]
		work.Files[i] = placeholderFile(i)
		switch at.Member() {
		case ignition.FileMode:
			return field.Invalid(fp, f.Permissions, msg), true
		case ignition.FileOwner:
			return field.Invalid(fp, f.Owner, msg), true
		case ignition.FileContent:
			return field.Invalid(fp, field.OmitValueType{}, msg), true
		case ignition.FileAppend:
			return field.Invalid(fp, f.Append, msg), true
		}
		return field.Invalid(fp, f.Path, msg), true
	case ignition.PartPreKubeadmCommand, ignition.PartPostKubeadmCommand:
		specCommands, workCommands := spec.PreKubeadmCommands, work.PreKubeadmCommands
		if at.Part == ignition.PartPostKubeadmCommand {
			specCommands, workCommands = spec.PostKubeadmCommands, work.PostKubeadmCommands
		}
		if at.Index >= len(specCommands) || at.Index >= len(workCommands) {
			break
		}
		workCommands[at.Index] = placeholderCommand
		return field.Invalid(fp, field.OmitValueType{}, msg), true
	}
	// The merged configuration, the variant or anything else: blame the spec as a whole.
	return field.Invalid(p, field.OmitValueType{}, msg), false
}

// setAsideDocument drops the provisioning document of part from work.
func setAsideDocument(work *cabpiv1.IgnitionConfigSpec, part ignition.Part) {
	if part == ignition.PartContainerLinuxConfig {
		work.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{}
		return
	}
	work.Butane = cabpiv1.ButaneSpec{}
}

// placeholderFile stands in for a user file whose error was reported, at a path nothing else
// writes, so the indexes of the other files stay the same.
func placeholderFile(i int) cabpiv1.File {
	return cabpiv1.File{Path: fmt.Sprintf("/run/cabpi-admission/placeholder-%d", i), Content: "placeholder"}
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

// kubernetesValue is the value of spec.kubernetes at the place, for the error: none of it is
// secret.
func kubernetesValue(k cabpiv1.KubernetesSpec, at ignition.Place) any {
	switch {
	case slices.Equal(at.Path, []ignition.Member{ignition.KubernetesSource}):
		return k.Source
	case slices.Equal(at.Path, []ignition.Member{ignition.KubernetesArch}):
		return k.Arch
	case slices.Equal(at.Path, []ignition.Member{ignition.KubernetesSysext, ignition.KubernetesBaseURL}) && k.Sysext != nil:
		return k.Sysext.BaseURL
	case slices.Equal(at.Path, []ignition.Member{ignition.KubernetesBinaries, ignition.KubernetesBaseURL}) && k.Binaries != nil:
		return k.Binaries.BaseURL
	}
	return field.OmitValueType{}
}
