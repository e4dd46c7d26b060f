package webhooks

import (
	"context"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

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
// repeated for objects validated without the API server).
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
	// The CRD's rule says the same, first; this keeps validateSpec whole on its own (and
	// configinput refuses it when rendering). The Butane snippet is still checked.
	if spec.Butane != (cabpiv1.ButaneSpec{}) && spec.ContainerLinuxConfig != (cabpiv1.ContainerLinuxConfigSpec{}) {
		errs = append(errs, field.Forbidden(p.Child("containerLinuxConfig"), "set butane or containerLinuxConfig, not both"))
		work.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{}
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
	at := p.Child(w.Field)
	if w.Field == "butane" || w.Field == "containerLinuxConfig" {
		at = at.Child("inline") // only inline documents are rendered at admission
	}
	w.Field = at.String()
	return w.String()
}

// renderErrors renders work for role until it renders, setting aside what each error blames.
// spec is the user's spec, for the values in the errors.
func renderErrors(spec, work *cabpiv1.IgnitionConfigSpec, role ignition.Role, version string, p *field.Path) (field.ErrorList, []string) {
	var errs field.ErrorList
	for len(errs) < maxRenderErrors {
		in, err := configinput.Offline(context.Background(), work, role, version, configinput.OfflineResolver{})
		var out ignition.Output
		if err == nil {
			out, err = ignition.Render(in)
		}
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

// filesField matches the renderer's field of a user file: "files[3]" or "files[3].permissions".
var filesField = regexp.MustCompile(`^files\[(\d+)\](?:\.([a-zA-Z]+))?$`)

// commandsField matches the renderer's field of a command: "preKubeadmCommands[3]".
var commandsField = regexp.MustCompile(`^(preKubeadmCommands|postKubeadmCommands)\[(\d+)\]$`)

// placeholderCommand stands in for a command whose error was reported.
const placeholderCommand = "true"

// blame turns a render error into a field error on the user's spec and sets aside, in work,
// what it blames so the next render can look further. It reports false when nothing could be
// set aside (the same error would come back).
func blame(ierr *ignition.Error, spec, work *cabpiv1.IgnitionConfigSpec, p *field.Path) (*field.Error, bool) {
	msg := message(ierr)
	switch ierr.Field {
	case "butane":
		// The snippet is invalid, or conflicts with the rest of the spec (spec.files, the
		// certificates of a control-plane node): either way it is set aside.
		work.Butane = cabpiv1.ButaneSpec{}
		return field.Invalid(p.Child("butane", "inline"), field.OmitValueType{}, msg), true
	case "containerLinuxConfig":
		// Likewise the Container Linux Config (only inline documents are rendered here).
		work.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{}
		return field.Invalid(p.Child("containerLinuxConfig", "inline"), field.OmitValueType{}, msg), true
	case "ignitionVersion":
		work.IgnitionVersion = ""
		return field.Invalid(p.Child("ignitionVersion"), spec.IgnitionVersion, msg), true
	case "clusterConfiguration":
		work.ClusterConfiguration = kubeadmv1.ClusterConfiguration{}
		return field.Invalid(p.Child("clusterConfiguration"), field.OmitValueType{}, msg), true
	case "initConfiguration":
		work.InitConfiguration = kubeadmv1.InitConfiguration{}
		return field.Invalid(p.Child("initConfiguration"), field.OmitValueType{}, msg), true
	case "joinConfiguration":
		work.JoinConfiguration = kubeadmv1.JoinConfiguration{}
		return field.Invalid(p.Child("joinConfiguration"), field.OmitValueType{}, msg), true
	case "joinConfiguration.controlPlane":
		work.JoinConfiguration.ControlPlane = nil
		return field.Invalid(p.Child("joinConfiguration", "controlPlane"), field.OmitValueType{}, msg), true
	}
	// A field inside a section (a token, the discovery file, the node name option): the error
	// names that field and the whole section is set aside. The value is never echoed: it may
	// be a credential.
	if section, _, nested := strings.Cut(ierr.Field, "."); nested || section == "nodeName" {
		setAside := map[string]func(){
			"joinConfiguration":    func() { work.JoinConfiguration = kubeadmv1.JoinConfiguration{} },
			"initConfiguration":    func() { work.InitConfiguration = kubeadmv1.InitConfiguration{} },
			"clusterConfiguration": func() { work.ClusterConfiguration = kubeadmv1.ClusterConfiguration{} },
			"nodeName":             func() { work.NodeName = nil },
		}[section]
		if setAside != nil {
			setAside()
			fp := p
			for _, part := range strings.Split(ierr.Field, ".") {
				fp = fp.Child(part)
			}
			return field.Invalid(fp, field.OmitValueType{}, msg), true
		}
	}
	if m := filesField.FindStringSubmatch(ierr.Field); m != nil {
		i, err := strconv.Atoi(m[1])
		if err == nil && i < len(spec.Files) && i < len(work.Files) {
			fp := p.Child("files").Index(i)
			f := spec.Files[i]
			work.Files[i] = placeholderFile(i)
			switch m[2] {
			case "permissions":
				return field.Invalid(fp.Child("permissions"), f.Permissions, msg), true
			case "owner":
				return field.Invalid(fp.Child("owner"), f.Owner, msg), true
			case "content":
				// A file's content may be secret: never echoed.
				return field.Invalid(fp.Child("content"), field.OmitValueType{}, msg), true
			case "append":
				return field.Invalid(fp.Child("append"), f.Append, msg), true
			default:
				return field.Invalid(fp.Child("path"), f.Path, msg), true
			}
		}
	}
	if m := commandsField.FindStringSubmatch(ierr.Field); m != nil {
		i, err := strconv.Atoi(m[2])
		specCommands, workCommands := spec.PreKubeadmCommands, work.PreKubeadmCommands
		if m[1] == "postKubeadmCommands" {
			specCommands, workCommands = spec.PostKubeadmCommands, work.PostKubeadmCommands
		}
		if err == nil && i < len(specCommands) && i < len(workCommands) {
			workCommands[i] = placeholderCommand
			// Commands carry registry passwords and tokens in practice: never echoed.
			return field.Invalid(p.Child(m[1]).Index(i), field.OmitValueType{}, msg), true
		}
	}
	// The merged configuration, the variant or anything else: blame the spec as a whole.
	return field.Invalid(p, field.OmitValueType{}, msg), false
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
