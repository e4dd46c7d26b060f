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

package testenv

// References to cabpi's bootstrap configs, as Machines and their templates carry them.

import (
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// IgnitionConfigRef references the IgnitionConfig name (for Machine.spec.bootstrap.configRef).
func IgnitionConfigRef(name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: cabpiv1.GroupVersion.Group,
		Kind:     "IgnitionConfig",
		Name:     name,
	}
}

// IgnitionConfigTemplateRef references the IgnitionConfigTemplate name.
func IgnitionConfigTemplateRef(name string) clusterv1.ContractVersionedObjectReference {
	return clusterv1.ContractVersionedObjectReference{
		APIGroup: cabpiv1.GroupVersion.Group,
		Kind:     "IgnitionConfigTemplate",
		Name:     name,
	}
}
