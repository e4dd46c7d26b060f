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

package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// IgnitionConfigTemplateSpec holds the template of the IgnitionConfigs created for a set of Machines.
type IgnitionConfigTemplateSpec struct {
	// template is cloned into one IgnitionConfig per Machine.
	// +required
	Template IgnitionConfigTemplateResource `json:"template"`
}

// IgnitionConfigTemplateResource is the object cloned for each Machine.
type IgnitionConfigTemplateResource struct {
	// metadata is copied to the cloned IgnitionConfig.
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`

	// spec is the IgnitionConfig spec.
	// +optional
	Spec IgnitionConfigSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ignitionconfigtemplates,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:printcolumn:name="Variant",type="string",JSONPath=".spec.template.spec.variant",description="OS variant"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"

// IgnitionConfigTemplate is the template MachineDeployments, MachinePools and ClusterClasses
// reference in bootstrap.configRef.
type IgnitionConfigTemplate struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of IgnitionConfigTemplate.
	// +optional
	Spec IgnitionConfigTemplateSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// IgnitionConfigTemplateList contains a list of IgnitionConfigTemplate.
type IgnitionConfigTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of IgnitionConfigTemplates.
	Items []IgnitionConfigTemplate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&IgnitionConfigTemplate{}, &IgnitionConfigTemplateList{})
}
