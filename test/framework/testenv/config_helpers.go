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
