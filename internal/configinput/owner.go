package configinput

import (
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// The line after which delivered data never changes (docs/adr/015): the owner's infrastructure
// may have booted from it. The controller draws it and the webhook warns by it, from these two.
//
// MachineProvisioningStarted: the Cluster API contract's signals, spec.providerID or
// status.initialization.infrastructureProvisioned.
func MachineProvisioningStarted(m *clusterv1.Machine) bool {
	return m.Spec.ProviderID != "" || ptr.Deref(m.Status.Initialization.InfrastructureProvisioned, false)
}

// MachinePoolProvisioningStarted: spec.providerIDList or
// status.initialization.infrastructureProvisioned.
func MachinePoolProvisioningStarted(mp *clusterv1.MachinePool) bool {
	return len(mp.Spec.ProviderIDList) > 0 || ptr.Deref(mp.Status.Initialization.InfrastructureProvisioned, false)
}
