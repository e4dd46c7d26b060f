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
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
)

// +kubebuilder:webhook:path=/mutate-bootstrap-cluster-x-k8s-io-v1alpha1-ignitionconfig,mutating=true,failurePolicy=fail,matchPolicy=Equivalent,sideEffects=None,groups=bootstrap.cluster.x-k8s.io,resources=ignitionconfigs,verbs=create;update,versions=v1alpha1,name=default.ignitionconfig.bootstrap.cluster.x-k8s.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-bootstrap-cluster-x-k8s-io-v1alpha1-ignitionconfig,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,sideEffects=None,groups=bootstrap.cluster.x-k8s.io,resources=ignitionconfigs,verbs=create;update,versions=v1alpha1,name=validation.ignitionconfig.bootstrap.cluster.x-k8s.io,admissionReviewVersions=v1

// SetupIgnitionConfigWebhookWithManager registers the defaulting and validating webhooks of
// IgnitionConfig with the manager's webhook server. The owner Machine or MachinePool is read
// with the manager's API reader (uncached, get only).
func SetupIgnitionConfigWebhookWithManager(mgr ctrl.Manager) error {
	w := &IgnitionConfigWebhook{Reader: mgr.GetAPIReader()}
	return ctrl.NewWebhookManagedBy(mgr, &cabpiv1.IgnitionConfig{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// IgnitionConfigWebhook defaults and validates IgnitionConfigs.
//
// Defaulting sets spec.variant to flatcar when empty and each file's permissions to "0644" (the
// mode the renderer uses when none is given), so the stored object says what is rendered.
//
// Validation (see validateSpec) rejects what the controller would fail to render, with the
// renderer's own checks and messages. What the schema can say is in the CRD instead (enums,
// patterns, lengths, "exactly one of" rules in CEL); the webhook repeats none of it except the
// file permissions, which it parses the way the renderer does.
//
// When the IgnitionConfig is created with an owner reference to a Machine or MachinePool that
// exists, the owner's Kubernetes version is known: a version kubeadm configuration cannot be
// written for is rejected on metadata.ownerReferences[i], and the spec is rendered for that
// version and, when the Machine or the config carries the cluster.x-k8s.io/control-plane label,
// as a control-plane node (so files at certificate paths are rejected too).
//
// In-place changes (Cluster API contract): every spec field may be changed at any time, and each
// update is validated exactly like a create. Before status.initialization.dataSecretCreated is
// true the controller renders the changed spec; once it is true, the data is rendered again in
// place only while the owner has not started provisioning (docs/adr/015), and after that never,
// so a change then has no effect on the Machine. An update of a config whose data exists is
// accepted with a warning saying which applies. Roll out new bootstrap data by changing the
// MachineDeployment's template instead. An update that leaves the spec as it is (labels, annotations, owner references,
// finalizers) is not validated, so objects stored before a stricter version of these checks
// keep working; the owner's Kubernetes version is only checked on create, since the owner
// reference of a Machine is added by Cluster API after the config exists.
//
// Cluster API's in-place updates (feature gate InPlaceUpdates) change the spec with the
// annotation clusterv1.UpdateInProgressAnnotation on the config: such an update may change only
// what the in-place update extension applies to the node (inplace.ChangedOutsideInPlace: the
// Kubernetes source's baseURL); any other field it changes is refused (Forbidden) at that
// field. The new spec is validated as any other.
type IgnitionConfigWebhook struct {
	// Reader reads the owner Machine or MachinePool; nil skips the owner's checks.
	Reader client.Reader
}

var (
	_ admission.Defaulter[*cabpiv1.IgnitionConfig] = &IgnitionConfigWebhook{}
	_ admission.Validator[*cabpiv1.IgnitionConfig] = &IgnitionConfigWebhook{}
)

// Default implements admission.Defaulter.
func (w *IgnitionConfigWebhook) Default(_ context.Context, c *cabpiv1.IgnitionConfig) error {
	defaultSpec(&c.Spec)
	return nil
}

// defaultSpec fills in what the renderer would assume.
func defaultSpec(spec *cabpiv1.IgnitionConfigSpec) {
	if spec.Variant == "" {
		spec.Variant = cabpiv1.VariantFlatcar
	}
	for i := range spec.Files {
		if spec.Files[i].Permissions == "" {
			spec.Files[i].Permissions = fmt.Sprintf("%04o", configinput.DefaultFileMode)
		}
	}
}

// ValidateCreate implements admission.Validator.
func (w *IgnitionConfigWebhook) ValidateCreate(ctx context.Context, c *cabpiv1.IgnitionConfig) (admission.Warnings, error) {
	owner := w.owner(ctx, c)
	errs := owner.errs
	specErrs, warnings := validateSpec(specCheck{
		spec:              &c.Spec,
		path:              field.NewPath("spec"),
		controlPlane:      owner.controlPlane || isControlPlane(c.Labels),
		kubernetesVersion: owner.version,
		ownerVersion:      owner.versionKnown,
	})
	errs = append(errs, specErrs...)
	return warnings, invalid(cabpiv1.GroupVersion.WithKind("IgnitionConfig").GroupKind(), c.Name, errs)
}

// ValidateUpdate implements admission.Validator.
func (w *IgnitionConfigWebhook) ValidateUpdate(ctx context.Context, oldObj, newObj *cabpiv1.IgnitionConfig) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(oldObj.Spec, newObj.Spec) {
		return nil, nil
	}
	owner := w.owner(ctx, newObj)
	var warnings admission.Warnings
	var errs field.ErrorList
	if inPlaceUpdate(newObj) {
		// The change is the update extension's to apply to the node, not a change of the data:
		// no warning that it is not rendered again.
		errs = outsideInPlace(oldObj.Spec, newObj.Spec)
	} else if created := oldObj.Status.Initialization.DataSecretCreated; created != nil && *created {
		warnings = append(warnings, changeAfterDataWarning(newObj.Name, owner))
	}
	specErrs, renderWarnings := validateSpec(specCheck{
		spec:              &newObj.Spec,
		path:              field.NewPath("spec"),
		controlPlane:      owner.controlPlane || isControlPlane(newObj.Labels),
		kubernetesVersion: owner.version,
		ownerVersion:      owner.versionKnown,
	})
	errs = append(errs, specErrs...)
	warnings = append(warnings, renderWarnings...)
	return warnings, invalid(cabpiv1.GroupVersion.WithKind("IgnitionConfig").GroupKind(), newObj.Name, errs)
}

// inPlaceUpdate says whether c is being updated in place by Cluster API (feature gate
// InPlaceUpdates): its MachineSet controller applies the new spec together with the
// UpdateInProgress annotation, then calls the update extension, then removes the annotation.
func inPlaceUpdate(c *cabpiv1.IgnitionConfig) bool {
	_, ok := c.Annotations[clusterv1.UpdateInProgressAnnotation]
	return ok
}

// outsideInPlace refuses each change an in-place update cannot apply (inplace.ChangedOutsideInPlace),
// at its field. cabpi's update extension tells Cluster API the same before it decides to update
// in place, so this refuses only a spec changed by hand during an update, or by another
// extension.
func outsideInPlace(oldSpec, newSpec cabpiv1.IgnitionConfigSpec) field.ErrorList {
	var errs field.ErrorList
	for _, p := range inplace.ChangedOutsideInPlace(oldSpec, newSpec) {
		errs = append(errs, field.Forbidden(p, "the IgnitionConfig is being updated in place (annotation "+
			clusterv1.UpdateInProgressAnnotation+"), and the in-place update extension handles only the Kubernetes version "+
			"and the source's baseURL (spec.kubernetes.sysext.baseURL or spec.kubernetes.binaries.baseURL, the source staying "+
			"the same); Cluster API rolls out other changes by replacing the Machine"))
	}
	return errs
}

// changeAfterDataWarning says what a spec change does once the data Secret exists. While the
// owner has not started provisioning, the data is rendered again in place (docs/adr/015). After
// that, a Machine's data is never rendered again (it may have booted with it); a MachinePool's
// is rendered again from the current spec at each join-token rotation, for the instances
// created after it. Without a known owner, nothing renders it.
func changeAfterDataWarning(name string, owner ownerInfo) string {
	switch {
	case owner.kind != "" && !owner.provisioningStarted:
		return fmt.Sprintf("the bootstrap data Secret of IgnitionConfig %s already exists; its %s has not started provisioning, "+
			"so the data is rendered again in place from this spec (a bad spec leaves the current data as it is)", name, owner.kind)
	case owner.kind == "MachinePool":
		return fmt.Sprintf("the bootstrap data Secret of IgnitionConfig %s already exists: this spec change reaches the MachinePool's "+
			"instances created after its next join-token rotation, which renders the data again from the current spec; "+
			"instances created before keep the data they booted with", name)
	}
	return fmt.Sprintf("the bootstrap data Secret of IgnitionConfig %s already exists and is not rendered again: "+
		"this spec change has no effect on the Machine; change the MachineDeployment's template to roll out new data", name)
}

// ValidateDelete implements admission.Validator.
func (w *IgnitionConfigWebhook) ValidateDelete(context.Context, *cabpiv1.IgnitionConfig) (admission.Warnings, error) {
	return nil, nil
}

// ownerInfo is what the owner of a config says about it.
type ownerInfo struct {
	// version is the Kubernetes version to render for: the owner's when known and supported,
	// else configinput.DefaultKubernetesVersion.
	version string
	// versionKnown says version is the owner's.
	versionKnown bool
	// controlPlane is true when the owner Machine has the control-plane label.
	controlPlane bool
	// kind is the owner's, "Machine" or "MachinePool"; "" when no owner was read.
	kind string
	// provisioningStarted is true once the owner's infrastructure may have booted from the
	// data (the controller's line, docs/adr/015): a providerID, or infrastructure provisioned.
	provisioningStarted bool
	// errs reports an owner whose Kubernetes version is not supported.
	errs field.ErrorList
}

// owner reads the first owner Machine or MachinePool of c that exists and has a version. Read
// errors are not admission errors: the version is then unknown, as for a config without owner.
func (w *IgnitionConfigWebhook) owner(ctx context.Context, c *cabpiv1.IgnitionConfig) ownerInfo {
	info := ownerInfo{version: configinput.DefaultKubernetesVersion}
	if w.Reader == nil {
		return info
	}
	log := ctrl.LoggerFrom(ctx)
	for i, ref := range c.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || gv.Group != clusterv1.GroupVersion.Group {
			continue
		}
		key := types.NamespacedName{Namespace: c.Namespace, Name: ref.Name}
		var obj client.Object
		var version func() string
		var provisioningStarted func() bool
		switch ref.Kind {
		case "Machine":
			m := &clusterv1.Machine{}
			obj, version = m, func() string { return m.Spec.Version }
			provisioningStarted = func() bool { return configinput.MachineProvisioningStarted(m) }
		case "MachinePool":
			mp := &clusterv1.MachinePool{}
			obj, version = mp, func() string { return mp.Spec.Template.Spec.Version }
			provisioningStarted = func() bool { return configinput.MachinePoolProvisioningStarted(mp) }
		default:
			continue
		}
		if err := w.Reader.Get(ctx, key, obj); err != nil {
			log.V(4).Info("Owner not readable, its Kubernetes version is unknown", "kind", ref.Kind, "name", ref.Name, "error", err.Error())
			continue
		}
		if ref.UID != "" && obj.GetUID() != ref.UID {
			continue
		}
		if ref.Kind == "Machine" {
			info.controlPlane = isControlPlane(obj.GetLabels())
		}
		info.kind, info.provisioningStarted = ref.Kind, provisioningStarted()
		v := version()
		if v == "" {
			continue
		}
		if err := ignition.ValidateKubernetesVersion(v); err != nil {
			info.errs = append(info.errs, field.Invalid(field.NewPath("metadata", "ownerReferences").Index(i), ref.Kind+" "+ref.Name,
				fmt.Sprintf("the bootstrap data of %s %s cannot be rendered: %s", ref.Kind, ref.Name, message(err))))
			return info
		}
		info.version, info.versionKnown = v, true
		return info
	}
	return info
}

// isControlPlane reports whether labels mark a control-plane Machine (or its config).
func isControlPlane(labels map[string]string) bool {
	_, ok := labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

// invalid is nil for no errors, else the API's Invalid error with all of them.
func invalid(gk schema.GroupKind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(gk, name, errs)
}
