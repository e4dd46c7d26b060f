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
