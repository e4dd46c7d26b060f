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
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"sigs.k8s.io/cluster-api/util/topology"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// +kubebuilder:webhook:path=/validate-bootstrap-cluster-x-k8s-io-v1alpha1-ignitionconfigtemplate,mutating=false,failurePolicy=fail,matchPolicy=Equivalent,sideEffects=None,groups=bootstrap.cluster.x-k8s.io,resources=ignitionconfigtemplates,verbs=create;update,versions=v1alpha1,name=validation.ignitionconfigtemplate.bootstrap.cluster.x-k8s.io,admissionReviewVersions=v1

// SetupIgnitionConfigTemplateWebhookWithManager registers the validating webhook of
// IgnitionConfigTemplate with the manager's webhook server.
func SetupIgnitionConfigTemplateWebhookWithManager(mgr ctrl.Manager) error {
	return ctrl.NewWebhookManagedBy(mgr, &cabpiv1.IgnitionConfigTemplate{}).
		WithValidator(&IgnitionConfigTemplateWebhook{}).
		Complete()
}

// IgnitionConfigTemplateWebhook validates IgnitionConfigTemplates.
//
// spec.template.spec is validated like an IgnitionConfig's spec (errors under
// spec.template.spec; rendered as a worker, or as a control-plane node when
// spec.template.metadata.labels has cluster.x-k8s.io/control-plane; the Kubernetes version is
// not known) and spec.template.metadata like Cluster API's template metadata.
//
// spec.template.spec is immutable: Machines created from a template must get what it said, and
// a MachineDeployment rolls out new bootstrap data by pointing at a new template. A change is
// rejected with a diff of the old and new spec (the values of content, inline, token,
// authProvider and exec fields are redacted). The exception is Cluster API's topology
// controller, which server-side-applies a changed template as a dry-run, with the
// topology.cluster.x-k8s.io/dry-run annotation, to compute the template it will create: such a
// request is validated but not held to immutability (nothing is stored). Updates that leave
// spec.template.spec and spec.template.metadata as they are (metadata.labels, annotations,
// owner references) are always accepted.
type IgnitionConfigTemplateWebhook struct{}

var _ admission.Validator[*cabpiv1.IgnitionConfigTemplate] = &IgnitionConfigTemplateWebhook{}

// ValidateCreate implements admission.Validator.
func (w *IgnitionConfigTemplateWebhook) ValidateCreate(_ context.Context, t *cabpiv1.IgnitionConfigTemplate) (admission.Warnings, error) {
	errs, warnings := validateTemplate(t)
	return warnings, invalid(cabpiv1.GroupVersion.WithKind("IgnitionConfigTemplate").GroupKind(), t.Name, errs)
}

// ValidateUpdate implements admission.Validator.
func (w *IgnitionConfigTemplateWebhook) ValidateUpdate(ctx context.Context, oldObj, newObj *cabpiv1.IgnitionConfigTemplate) (admission.Warnings, error) {
	if equality.Semantic.DeepEqual(oldObj.Spec, newObj.Spec) {
		return nil, nil
	}
	req, err := admission.RequestFromContext(ctx)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("expected an admission request in the context: %v", err))
	}
	var errs field.ErrorList
	oldSpec, newSpec := &oldObj.Spec.Template.Spec, &newObj.Spec.Template.Spec
	if !topology.IsDryRunRequest(req, newObj) && !equality.Semantic.DeepEqual(oldSpec, newSpec) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "spec"),
			"IgnitionConfigTemplate spec.template.spec is immutable: create a new IgnitionConfigTemplate and reference it instead. Diff (-old +new):\n"+
				specDiff(oldSpec, newSpec)))
	}
	templateErrs, warnings := validateTemplate(newObj)
	errs = append(errs, templateErrs...)
	return warnings, invalid(cabpiv1.GroupVersion.WithKind("IgnitionConfigTemplate").GroupKind(), newObj.Name, errs)
}

// ValidateDelete implements admission.Validator.
func (w *IgnitionConfigTemplateWebhook) ValidateDelete(context.Context, *cabpiv1.IgnitionConfigTemplate) (admission.Warnings, error) {
	return nil, nil
}

func validateTemplate(t *cabpiv1.IgnitionConfigTemplate) (field.ErrorList, admission.Warnings) {
	tp := field.NewPath("spec", "template")
	errs := t.Spec.Template.ObjectMeta.Validate(tp.Child("metadata"))
	specErrs, warnings := validateSpec(specCheck{
		spec:              &t.Spec.Template.Spec,
		path:              tp.Child("spec"),
		controlPlane:      isControlPlane(t.Spec.Template.ObjectMeta.Labels),
		kubernetesVersion: configinput.DefaultKubernetesVersion,
	})
	return append(errs, specErrs...), warnings
}
