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

// Flavor is the kind of node image an NspawnMachine boots (test/framework/nodeimage).
// +kubebuilder:validation:Enum=flatcar;fcos;flatcar-stock;fcos-stock
type Flavor string

const (
	// FlavorFlatcar boots the flatcar-like image with kubeadm and kubelet at the suite's version:
	// kubeadm and kubelet in /opt/bin, /etc mounted noexec before kubeadm.service can run,
	// coreos-metadata.service writing /run/metadata/flatcar.
	FlavorFlatcar Flavor = "flatcar"
	// FlavorFCOS boots the fcos-like image with kubeadm and kubelet at the suite's version: in
	// /usr/bin (as a sysext or a layered image puts them), afterburn.service writing
	// /run/metadata/afterburn.
	FlavorFCOS Flavor = "fcos"
	// FlavorFlatcarStock boots the flatcar-like image as Flatcar ships: no Kubernetes in it
	// (the bootstrap data brings it, at the Machine's version), systemd-sysext.service enabled,
	// and Flatcar's reload of the units extensions bring.
	FlavorFlatcarStock Flavor = "flatcar-stock"
	// FlavorFCOSStock boots the fcos-like image as Fedora CoreOS ships: no Kubernetes in it.
	FlavorFCOSStock Flavor = "fcos-stock"
)

// Stock reports whether the flavor has no Kubernetes of its own: the bootstrap data brings it,
// at the Machine's version.
func (f Flavor) Stock() bool { return f == FlavorFlatcarStock || f == FlavorFCOSStock }

// Condition reasons of the Ready condition (the contract's failure reporting: CAPI mirrors an
// InfraMachine's Ready condition into the Machine's InfrastructureReady).
const (
	// ReadyCondition is the one condition of each kind.
	ReadyCondition = "Ready"
	// BootstrapSucceededCondition (NspawnMachine) is True once the node wrote Cluster API's
	// bootstrap sentinel (/run/cluster-api/bootstrap-success.complete), as CAPD reports
	// BootstrapExecSucceeded; it stays True across reboots (/run is emptied on each boot).
	BootstrapSucceededCondition = "BootstrapSucceeded"
	// SentinelFoundReason: the sentinel is on the node.
	SentinelFoundReason = "SentinelFound"
	// WaitingForSentinelReason: the node runs, the sentinel is not there yet.
	WaitingForSentinelReason = "WaitingForSentinel"

	// WaitingForClusterInfrastructureReason: the Cluster's infrastructure is not provisioned.
	WaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"
	// WaitingForBootstrapDataReason: the Machine has no bootstrap data Secret yet.
	WaitingForBootstrapDataReason = "WaitingForBootstrapData"
	// BootstrapDataInvalidReason: the data Secret has no value, is not in format ignition, or
	// ignition-apply refused it. Terminal for this machine: replace it.
	BootstrapDataInvalidReason = "BootstrapDataInvalid"
	// UnsupportedKubernetesVersionReason: the Machine's version is not the one the node images
	// carry. Terminal for this machine.
	UnsupportedKubernetesVersionReason = "UnsupportedKubernetesVersion"
	// ProvisioningFailedReason: the root could not be made (image, mount); retried.
	ProvisioningFailedReason = "ProvisioningFailed"
	// BootHeldReason: the instance exists (root, Ignition, provider ID) but is not booted yet,
	// as spec.bootHeld asks.
	BootHeldReason = "BootHeld"
	// PoweredOffReason: the instance exists but is not running.
	PoweredOffReason = "PoweredOff"
	// RunningReason: the instance is running.
	RunningReason = "Running"
	// ProvisionedReason: an NspawnCluster's endpoint is set.
	ProvisionedReason = "Provisioned"
	// LoadBalancerFailedReason: the load balancer could not listen on the bridge; retried.
	LoadBalancerFailedReason = "LoadBalancerFailed"
	// WaitingForControlPlaneEndpointReason: an NspawnCluster has no endpoint yet.
	WaitingForControlPlaneEndpointReason = "WaitingForControlPlaneEndpoint"
)

// ClusterFinalizer lets an NspawnCluster's load balancer be stopped before the object goes.
const ClusterFinalizer = "nspawncluster.infrastructure.cluster.x-k8s.io"

// MachineFinalizer lets an NspawnMachine's instance be powered off and removed before the
// object goes.
const MachineFinalizer = "nspawnmachine.infrastructure.cluster.x-k8s.io"

// MachinePoolFinalizer lets an NspawnMachinePool's instances be powered off and removed before
// the object goes.
const MachinePoolFinalizer = "nspawnmachinepool.infrastructure.cluster.x-k8s.io"

// NspawnClusterSpec is the cluster's infrastructure: where its API server is.
type NspawnClusterSpec struct {
	// ControlPlaneEndpoint is the workload API server: set by the suite when it runs the control
	// plane itself, by the provider (its load balancer) with loadBalancer.
	// +optional
	ControlPlaneEndpoint clusterv1.APIEndpoint `json:"controlPlaneEndpoint,omitempty,omitzero"`
	// LoadBalancer runs a TCP load balancer on the suite's bridge in front of the cluster's
	// control-plane Machines (port 6443 of each node), as CAPD runs haproxy, and makes it the
	// control-plane endpoint.
	// +optional
	LoadBalancer bool `json:"loadBalancer,omitempty"`
}

// ClusterInitializationStatus is the contract's initialization status.
type ClusterInitializationStatus struct {
	// Provisioned is true once the cluster infrastructure is there.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// NspawnClusterStatus is what the provider observed.
type NspawnClusterStatus struct {
	// +optional
	Initialization ClusterInitializationStatus `json:"initialization,omitempty,omitzero"`
	// LoadBalancerBackends are the control-plane nodes the load balancer sends connections to.
	// +optional
	// +listType=atomic
	LoadBalancerBackends []string `json:"loadBalancerBackends,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NspawnCluster is the infrastructure of a real-node test cluster.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:resource:categories=cluster-api
type NspawnCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NspawnClusterSpec   `json:"spec,omitempty"`
	Status NspawnClusterStatus `json:"status,omitempty"`
}

// NspawnClusterList is a list of NspawnClusters.
// +kubebuilder:object:root=true
type NspawnClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NspawnCluster `json:"items"`
}

// NspawnMachineSpec is one instance.
type NspawnMachineSpec struct {
	// ProviderID is set by the provider once the instance exists: openstack:///<instance UUID>,
	// what the instance's metadata makes the node report.
	// +optional
	ProviderID string `json:"providerID,omitempty"`
	// Flavor is the node image.
	Flavor Flavor `json:"flavor"`
	// BootHeld creates the instance (root, Ignition applied, provider ID) without booting it
	// while true, as a cloud instance that is slow to start: a test acts in between.
	// +optional
	BootHeld bool `json:"bootHeld,omitempty"`
}

// MachineInitializationStatus is the contract's initialization status.
type MachineInitializationStatus struct {
	// Provisioned is true once the instance exists with the bootstrap data applied.
	// +optional
	Provisioned *bool `json:"provisioned,omitempty"`
}

// NspawnMachineStatus is what the provider observed.
type NspawnMachineStatus struct {
	// +optional
	Initialization MachineInitializationStatus `json:"initialization,omitempty,omitzero"`
	// Addresses of the instance on the suite's bridge.
	// +optional
	// +listType=atomic
	Addresses []clusterv1.MachineAddress `json:"addresses,omitempty"`
	// InstanceUUID is the instance's UUID in its metadata.
	// +optional
	InstanceUUID string `json:"instanceUUID,omitempty"`
	// BootTime is when the instance was last booted (a figure for the suite's timings).
	// +optional
	BootTime *metav1.Time `json:"bootTime,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NspawnMachine is one systemd-nspawn instance of a Machine.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:resource:categories=cluster-api
// +kubebuilder:printcolumn:name="Provider ID",type=string,JSONPath=".spec.providerID"
// +kubebuilder:printcolumn:name="Provisioned",type=boolean,JSONPath=".status.initialization.provisioned"
type NspawnMachine struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NspawnMachineSpec   `json:"spec,omitempty"`
	Status NspawnMachineStatus `json:"status,omitempty"`
}

// NspawnMachineList is a list of NspawnMachines.
// +kubebuilder:object:root=true
type NspawnMachineList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NspawnMachine `json:"items"`
}

// NspawnMachineTemplateResource is what a MachineSet clones.
type NspawnMachineTemplateResource struct {
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	Spec       NspawnMachineSpec    `json:"spec"`
}

// NspawnMachineTemplateSpec holds the template.
type NspawnMachineTemplateSpec struct {
	Template NspawnMachineTemplateResource `json:"template"`
}

// NspawnMachineTemplate is the template of NspawnMachines for MachineDeployments and
// MachineSets.
// +kubebuilder:object:root=true
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:resource:categories=cluster-api
type NspawnMachineTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec NspawnMachineTemplateSpec `json:"spec,omitempty"`
}

// NspawnMachineTemplateList is a list of NspawnMachineTemplates.
// +kubebuilder:object:root=true
type NspawnMachineTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NspawnMachineTemplate `json:"items"`
}

// NspawnClusterTemplateResource is what a ClusterClass's topology makes NspawnClusters of.
type NspawnClusterTemplateResource struct {
	// +optional
	ObjectMeta clusterv1.ObjectMeta `json:"metadata,omitempty,omitzero"`
	Spec       NspawnClusterSpec    `json:"spec"`
}

// NspawnClusterTemplateSpec holds the template.
type NspawnClusterTemplateSpec struct {
	Template NspawnClusterTemplateResource `json:"template"`
}

// NspawnClusterTemplate is the infrastructure template of a ClusterClass.
// +kubebuilder:object:root=true
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:resource:categories=cluster-api
type NspawnClusterTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec NspawnClusterTemplateSpec `json:"spec,omitempty"`
}

// NspawnClusterTemplateList is a list of NspawnClusterTemplates.
// +kubebuilder:object:root=true
type NspawnClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NspawnClusterTemplate `json:"items"`
}

// NspawnMachinePoolSpec is a pool of instances, one per replica of its MachinePool.
type NspawnMachinePoolSpec struct {
	// Flavor is the node image of every instance.
	Flavor Flavor `json:"flavor"`
	// ProviderIDList are the provider IDs of the pool's instances, set by the provider.
	// +optional
	// +listType=atomic
	ProviderIDList []string `json:"providerIDList,omitempty"`
}

// NspawnMachinePoolStatus is what the provider observed.
type NspawnMachinePoolStatus struct {
	// +optional
	Initialization MachineInitializationStatus `json:"initialization,omitempty,omitzero"`
	// Replicas is the number of instances.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Instances are the pool's instances (their names are the nodes' hostnames).
	// +optional
	// +listType=atomic
	Instances []string `json:"instances,omitempty"`
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NspawnMachinePool runs a MachinePool's replicas as systemd-nspawn instances, each created from
// the pool's bootstrap data as it is when the instance is created.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:metadata:labels="cluster.x-k8s.io/v1beta2=v1alpha1"
// +kubebuilder:resource:categories=cluster-api
type NspawnMachinePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NspawnMachinePoolSpec   `json:"spec,omitempty"`
	Status NspawnMachinePoolStatus `json:"status,omitempty"`
}

// NspawnMachinePoolList is a list of NspawnMachinePools.
// +kubebuilder:object:root=true
type NspawnMachinePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NspawnMachinePool `json:"items"`
}

// GetConditions and SetConditions let Cluster API's conditions helpers work on the kind.
func (p *NspawnMachinePool) GetConditions() []metav1.Condition   { return p.Status.Conditions }
func (p *NspawnMachinePool) SetConditions(cs []metav1.Condition) { p.Status.Conditions = cs }

func init() {
	SchemeBuilder.Register(&NspawnMachinePool{}, &NspawnMachinePoolList{})
	SchemeBuilder.Register(&NspawnCluster{}, &NspawnClusterList{},
		&NspawnMachine{}, &NspawnMachineList{},
		&NspawnMachineTemplate{}, &NspawnMachineTemplateList{},
		&NspawnClusterTemplate{}, &NspawnClusterTemplateList{})
}

// GetConditions and SetConditions let Cluster API's conditions helpers work on the kinds.
func (c *NspawnCluster) GetConditions() []metav1.Condition   { return c.Status.Conditions }
func (c *NspawnCluster) SetConditions(cs []metav1.Condition) { c.Status.Conditions = cs }
func (m *NspawnMachine) GetConditions() []metav1.Condition   { return m.Status.Conditions }
func (m *NspawnMachine) SetConditions(cs []metav1.Condition) { m.Status.Conditions = cs }
