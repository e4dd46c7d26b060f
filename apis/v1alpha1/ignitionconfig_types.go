package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
)

// Variant is the operating system family the Ignition is rendered for. It selects the Butane
// variant the user's snippet must be written in and the Ignition spec versions that may be emitted.
// +kubebuilder:validation:Enum=flatcar;fcos
type Variant string

const (
	// VariantFlatcar is Flatcar Container Linux (Butane variant "flatcar").
	VariantFlatcar Variant = "flatcar"
	// VariantFCOS is Fedora CoreOS (Butane variant "fcos").
	VariantFCOS Variant = "fcos"
)

// Platform is the infrastructure that hands the bootstrap data to the machine.
// +kubebuilder:validation:Enum=aws;azure;gcp;hetzner;openstack;vsphere;docker
type Platform string

const (
	// PlatformAWS is Amazon EC2 (CAPA): 16 KiB of user data.
	PlatformAWS Platform = "aws"
	// PlatformAzure is Azure customData (CAPZ): 64 KiB.
	PlatformAzure Platform = "azure"
	// PlatformGCP is a GCP metadata value (CAPG): 256 KiB.
	PlatformGCP Platform = "gcp"
	// PlatformHetzner is Hetzner Cloud or bare metal (CAPH): 32 KiB.
	PlatformHetzner Platform = "hetzner"
	// PlatformOpenStack is Nova user data (CAPO): 64 KiB once base64-encoded, 48 KiB raw.
	PlatformOpenStack Platform = "openstack"
	// PlatformVSphere is a vSphere guestinfo value (CAPV): 64 KiB.
	PlatformVSphere Platform = "vsphere"
	// PlatformDocker is Cluster API's Docker provider (CAPD): no limit, and nothing compressed,
	// because CAPD does not decompress.
	PlatformDocker Platform = "docker"
)

// DataSecretFormat is the value of the data Secret's "format" key.
const DataSecretFormat = "ignition"

// IgnitionConfigSpec is the desired bootstrap data of one Machine (or MachinePool).
//
// Fields are "immutable in effect" once status.initialization.dataSecretCreated is true: the
// controller does not re-render the data of a Machine that already has it (Cluster API contract,
// in-place changes). Change a MachineDeployment's template to roll out new data.
type IgnitionConfigSpec struct {
	// variant is the OS family: flatcar (default) or fcos. The butane snippet must use the same variant.
	// +optional
	// +kubebuilder:default=flatcar
	Variant Variant `json:"variant,omitempty"`

	// ignitionVersion pins the Ignition spec version of the rendered config, e.g. "3.4.0".
	// When empty, the lowest 3.x version that carries the config for the variant is emitted:
	// the variant's floor (flatcar 3.3.0, fcos 3.0.0) raised to the version the butane snippet
	// translates to. A pinned version lower than the snippet needs is an error.
	// +optional
	// +kubebuilder:validation:Pattern=`^3\.[0-9]+\.[0-9]+$`
	IgnitionVersion string `json:"ignitionVersion,omitempty"`

	// platform names the infrastructure that hands the data to the machine. It sets the
	// user-data limit the data is checked against (aws 16 KiB, hetzner 32 KiB, openstack 48 KiB
	// raw, azure and vsphere 64 KiB, gcp 256 KiB) and whether the data may be compressed: file
	// contents are gzipped where that is shorter, and data over the limit is wrapped in a config
	// carrying it gzipped (Ignition 3.1.0 and later). Nothing is ever cut; data still over the
	// limit is reported on the DataSecretAvailable condition. docker (CAPD) has no limit and keeps
	// everything uncompressed, because CAPD does not decompress. When unset, the controller
	// derives the platform from the kind of the owner's spec.infrastructureRef (AWSMachine,
	// AzureMachine, GCPMachine, HCloudMachine, OpenStackMachine, VSphereMachine, DockerMachine,
	// ...); for a kind it does not know it applies no limit and compresses.
	// +optional
	Platform Platform `json:"platform,omitempty"`

	// clusterConfiguration is the kubeadm ClusterConfiguration for the node running kubeadm init,
	// in Cluster API's KubeadmConfig form (copy it from a KubeadmConfig as is).
	// +optional
	ClusterConfiguration bootstrapv1.ClusterConfiguration `json:"clusterConfiguration,omitempty,omitzero"`

	// initConfiguration is the kubeadm InitConfiguration for the node running kubeadm init.
	// +optional
	InitConfiguration bootstrapv1.InitConfiguration `json:"initConfiguration,omitempty,omitzero"`

	// joinConfiguration is the kubeadm JoinConfiguration for nodes that join (workers and
	// additional control-plane nodes). Discovery is filled in by the controller.
	// +optional
	JoinConfiguration bootstrapv1.JoinConfiguration `json:"joinConfiguration,omitempty,omitzero"`

	// nodeName names the node, and optionally sets its provider ID, from the platform's metadata
	// service at first boot, instead of nodeRegistration.name. kubeadm.service then waits for the
	// variant's metadata service (Flatcar coreos-metadata.service, Fedora CoreOS afterburn.service)
	// and only the named attributes are substituted into the kubeadm configuration.
	// +optional
	NodeName *NodeNameSource `json:"nodeName,omitempty"`

	// butane is the provisioning part: a Butane document of the same variant, translated and
	// merged into the generated Ignition. It may not write the paths and units cabpi owns
	// (/etc/kubeadm.yml, /etc/kubeadm.sh, kubeadm.service, the bootstrap sentinel).
	// +optional
	Butane ButaneSpec `json:"butane,omitempty,omitzero"`

	// files are written to the node before kubeadm runs.
	// +optional
	// +listType=map
	// +listMapKey=path
	// +kubebuilder:validation:MaxItems=200
	Files []File `json:"files,omitempty"`

	// preKubeadmCommands run before kubeadm, in order, in the bootstrap script (bash, set -euo pipefail).
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=10240
	PreKubeadmCommands []string `json:"preKubeadmCommands,omitempty"`

	// postKubeadmCommands run after kubeadm succeeded and the bootstrap sentinel was written.
	// +optional
	// +kubebuilder:validation:MaxItems=1000
	// +kubebuilder:validation:items:MaxLength=10240
	PostKubeadmCommands []string `json:"postKubeadmCommands,omitempty"`
}

// MetadataPlatform is a platform whose metadata service can name the node.
// +kubebuilder:validation:Enum=aws;azure;openstack
type MetadataPlatform string

const (
	// MetadataPlatformAWS: the node name is the instance's private DNS name
	// (COREOS_EC2_HOSTNAME / AFTERBURN_AWS_HOSTNAME); the provider ID is
	// aws:///<availability zone>/<instance id>.
	MetadataPlatformAWS MetadataPlatform = "aws"
	// MetadataPlatformAzure: the node name is the VM name, which Azure gives the machine as its
	// hostname (the metadata service has no hostname attribute); no provider ID.
	MetadataPlatformAzure MetadataPlatform = "azure"
	// MetadataPlatformOpenStack: the node name is the instance's hostname
	// (COREOS_OPENSTACK_HOSTNAME / AFTERBURN_OPENSTACK_HOSTNAME); the provider ID is
	// openstack:///<instance uuid>.
	MetadataPlatformOpenStack MetadataPlatform = "openstack"
)

// NodeNameSource says where the node's name comes from.
// +kubebuilder:validation:XValidation:rule="!(self.fromMetadata == 'azure' && has(self.providerID) && self.providerID)",message="Azure's provider ID names the VM's subscription and resource group, which its metadata service does not give; leave providerID unset"
type NodeNameSource struct {
	// fromMetadata is the platform whose metadata service names the node: aws, azure or openstack.
	// +required
	FromMetadata MetadataPlatform `json:"fromMetadata"`

	// providerID also sets the kubelet's provider ID from the instance's metadata, in the form
	// the platform's infrastructure provider puts on the Machine (aws, openstack).
	// +optional
	ProviderID bool `json:"providerID,omitempty"`
}

// ButaneSpec is the user's Butane document, inline or from a key of a Secret or ConfigMap in the
// config's namespace.
// +kubebuilder:validation:XValidation:rule="!(has(self.inline) && has(self.contentFrom))",message="set either inline or contentFrom, not both"
type ButaneSpec struct {
	// inline is the Butane document (YAML).
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	Inline string `json:"inline,omitempty"`

	// contentFrom reads the Butane document from a Secret or ConfigMap key.
	// +optional
	ContentFrom *ButaneSource `json:"contentFrom,omitempty"`

	// strict makes Butane warnings errors (like butane --strict).
	// +optional
	Strict bool `json:"strict,omitempty"`
}

// ButaneSource names exactly one Secret or ConfigMap key.
// +kubebuilder:validation:XValidation:rule="has(self.secret) != has(self.configMap)",message="set exactly one of secret or configMap"
type ButaneSource struct {
	// secret is a key of a Secret in the config's namespace.
	// +optional
	Secret *KeyReference `json:"secret,omitempty"`
	// configMap is a key of a ConfigMap in the config's namespace.
	// +optional
	ConfigMap *KeyReference `json:"configMap,omitempty"`
}

// KeyReference names a key of an object in the config's namespace.
type KeyReference struct {
	// name of the object.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// key in the object's data.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Key string `json:"key"`
}

// File is a file written by Ignition before kubeadm runs. Field names follow KubeadmConfig's
// files so they can be copied over (encoding and append are not supported: Ignition writes
// files whole, and the provider picks the encoding, compressing only where spec.platform allows).
// +kubebuilder:validation:XValidation:rule="has(self.content) != has(self.contentFrom)",message="set exactly one of content or contentFrom"
type File struct {
	// path is the absolute path of the file on the node.
	// +required
	// +kubebuilder:validation:MinLength=2
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^/`
	Path string `json:"path"`

	// owner is "user:group" (names or ids), default root:root.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[^:]+(:[^:]+)?$`
	Owner string `json:"owner,omitempty"`

	// permissions is the octal mode, e.g. "0644" (default "0644").
	// +optional
	// +kubebuilder:validation:Pattern=`^0?[0-7]{3,4}$`
	Permissions string `json:"permissions,omitempty"`

	// content is the file content.
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	Content string `json:"content,omitempty"`

	// contentFrom reads the content from a Secret key in the config's namespace.
	// +optional
	ContentFrom *FileSource `json:"contentFrom,omitempty"`
}

// FileSource is where a file's content comes from.
type FileSource struct {
	// secret is a key of a Secret in the config's namespace.
	// +required
	Secret KeyReference `json:"secret"`
}

// IgnitionConfigStatus is the observed state of an IgnitionConfig.
// +kubebuilder:validation:MinProperties=1
type IgnitionConfigStatus struct {
	// conditions: Ready (summary), DataSecretAvailable, CertificatesAvailable, Paused.
	// Reasons are listed with the condition constants in conditions.go and are stable.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// initialization provides observations of the IgnitionConfig initialization process.
	// NOTE: Fields in this struct are part of the Cluster API contract.
	// +optional
	Initialization IgnitionConfigInitializationStatus `json:"initialization,omitempty,omitzero"`

	// dataSecretName is the name of the Secret that stores the rendered Ignition.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	DataSecretName string `json:"dataSecretName,omitempty"`

	// observedGeneration is the latest generation observed by the controller.
	// +optional
	// +kubebuilder:validation:Minimum=1
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// IgnitionConfigInitializationStatus provides observations of the initialization process.
// +kubebuilder:validation:MinProperties=1
type IgnitionConfigInitializationStatus struct {
	// dataSecretCreated is true when the Machine's bootstrap data Secret is created.
	// NOTE: this field is part of the Cluster API contract.
	// +optional
	DataSecretCreated *bool `json:"dataSecretCreated,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:path=ignitionconfigs,scope=Namespaced,categories=cluster-api
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Cluster",type="string",JSONPath=".metadata.labels['cluster\\.x-k8s\\.io/cluster-name']",description="Cluster"
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Ready condition"
// +kubebuilder:printcolumn:name="Data secret created",type="string",JSONPath=`.status.initialization.dataSecretCreated`,description="Bootstrap data Secret is created"
// +kubebuilder:printcolumn:name="Secret",type="string",JSONPath=`.status.dataSecretName`,description="Bootstrap data Secret"
// +kubebuilder:printcolumn:name="Reason",type="string",JSONPath=`.status.conditions[?(@.type=="DataSecretAvailable")].reason`,description="Why the data is (not) available",priority=10
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description="Time since creation"

// IgnitionConfig is the bootstrap configuration of one Machine: kubeadm plus a Butane snippet,
// rendered into Ignition 3.x and stored in a Secret named like the config.
type IgnitionConfig struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of IgnitionConfig.
	// +optional
	Spec IgnitionConfigSpec `json:"spec,omitempty,omitzero"`
	// status is the observed state of IgnitionConfig.
	// +optional
	Status IgnitionConfigStatus `json:"status,omitempty,omitzero"`
}

// GetConditions returns the conditions (v1beta2 style) of the config.
func (c *IgnitionConfig) GetConditions() []metav1.Condition { return c.Status.Conditions }

// SetConditions sets the conditions of the config.
func (c *IgnitionConfig) SetConditions(conditions []metav1.Condition) {
	c.Status.Conditions = conditions
}

// +kubebuilder:object:root=true

// IgnitionConfigList contains a list of IgnitionConfig.
type IgnitionConfigList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// items is the list of IgnitionConfigs.
	Items []IgnitionConfig `json:"items"`
}

func init() {
	SchemeBuilder.Register(&IgnitionConfig{}, &IgnitionConfigList{})
}
