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

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
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
	// PlatformAWS is Amazon EC2 (CAPA): 16 KiB of user data where the data is the user data
	// (spec.ignition.storageType UnencryptedUserData); none where CAPA keeps it in S3
	// (ClusterObjectStore, its default for an AWSMachine) and the user data is its stub (ADR 028).
	PlatformAWS Platform = "aws"
	// PlatformAzure is Azure customData (CAPZ): 65,535 bytes.
	PlatformAzure Platform = "azure"
	// PlatformGCP is a GCP metadata value (CAPG): 256 KiB.
	PlatformGCP Platform = "gcp"
	// PlatformHetzner is Hetzner Cloud or bare metal (CAPH): 32 KiB.
	PlatformHetzner Platform = "hetzner"
	// PlatformOpenStack is Nova user data (CAPO): 65,535 characters once base64-encoded, 49,149 bytes.
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
// Until the owner starts provisioning (no spec.providerID, infrastructure not provisioned), a
// change to the spec or to anything it references renders the data again in place, with the
// same join token (status.dataInputsHash). After that the data is never changed (Cluster API
// contract, in-place changes): change a MachineDeployment's template to roll out new data.
// +kubebuilder:validation:XValidation:rule="!(has(self.butane) && has(self.containerLinuxConfig))",message="set butane or containerLinuxConfig, not both"
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
	// user-data limit the data is checked against (aws 16 KiB, hetzner 32 KiB, openstack 49,149
	// bytes, azure 65,535 bytes, vsphere 64 KiB, gcp 256 KiB) and whether the data may be
	// compressed: file contents are gzipped where that is shorter, and data over the limit is
	// wrapped in a config carrying it gzipped (Ignition 3.1.0 and later). Nothing is ever cut; data
	// still over the limit is reported on the DataSecretAvailable condition. docker (CAPD) has no
	// limit and keeps everything uncompressed, because CAPD does not decompress. When unset, the
	// controller derives the platform from the kind of the owner's spec.infrastructureRef
	// (AWSMachine, AzureMachine, GCPMachine, HCloudMachine, OpenStackMachine, VSphereMachine,
	// DockerMachine, ...); for a kind it does not know it applies no limit and compresses. The
	// limit also follows how that infrastructure machine stores the data: an AWSMachine keeping it
	// in S3 (spec.ignition.storageType ClusterObjectStore, CAPA's default) gives the instance
	// CAPA's stub, so no limit applies to the data; only UnencryptedUserData is held to the 16 KiB.
	// +optional
	Platform Platform `json:"platform,omitempty"`

	// clusterConfiguration is the kubeadm ClusterConfiguration for the node running kubeadm init,
	// in Cluster API's KubeadmConfig form (copy it from a KubeadmConfig as is).
	// +optional
	ClusterConfiguration kubeadmv1.ClusterConfiguration `json:"clusterConfiguration,omitempty,omitzero"`

	// initConfiguration is the kubeadm InitConfiguration for the node running kubeadm init.
	// +optional
	InitConfiguration kubeadmv1.InitConfiguration `json:"initConfiguration,omitempty,omitzero"`

	// joinConfiguration is the kubeadm JoinConfiguration for nodes that join (workers and
	// additional control-plane nodes). Discovery is filled in by the controller.
	// +optional
	JoinConfiguration kubeadmv1.JoinConfiguration `json:"joinConfiguration,omitempty,omitzero"`

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

	// containerLinuxConfig is the provisioning part in the legacy Container Linux Config form
	// (what CABPK's ignition.containerLinuxConfig.additionalConfig takes), for configs carried
	// over from CABPK. It is transpiled to Ignition 2.3 with Flatcar's
	// container-linux-config-transpiler, translated to the output's 3.x version, and merged as a
	// butane snippet is, under the same rules (owned paths, error locations). Set butane or
	// containerLinuxConfig, not both. New configs should use butane.
	// +optional
	ContainerLinuxConfig ContainerLinuxConfigSpec `json:"containerLinuxConfig,omitempty,omitzero"`

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

	// users are created on the node by Ignition (passwd.users), as KubeadmConfig's users are by
	// cloud-init. A user's password hash may come from a Secret (passwordHashFrom, like
	// KubeadmConfig's passwdFrom), so it is not kept in the spec.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	Users []User `json:"users,omitempty"`

	// kubernetes says where the node's kubeadm and kubelet come from. The version is always the
	// owner's: the Machine's spec.version, the MachinePool template's, or the Cluster topology's
	// when the owner has none. Changing only that version (a MachineDeployment's spec.version,
	// a Cluster's spec.topology.version) rolls out nodes with the new kubeadm and kubelet; no
	// template names the version. Unset, the image must carry them (source image).
	// +optional
	Kubernetes KubernetesSpec `json:"kubernetes,omitempty,omitzero"`

	// verbosity is kubeadm's --v for init and join (KubeadmConfig's verbosity).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	Verbosity *int32 `json:"verbosity,omitempty"`
}

// KubernetesSource is where kubeadm, the kubelet and the kubelet's unit come from.
// +kubebuilder:validation:Enum=image;sysext;binaries
type KubernetesSource string

const (
	// KubernetesSourceImage: the image carries them (in /usr/bin or /opt/bin, with the kubelet's
	// unit); nothing is installed. Today's images built with Kubernetes in them, and the default.
	KubernetesSourceImage KubernetesSource = "image"
	// KubernetesSourceSysext: the Kubernetes system extension image for the version and
	// architecture is downloaded by Ignition and merged into /usr by systemd-sysext before
	// kubeadm.service runs (Flatcar's way; the extension carries the kubelet's unit).
	KubernetesSourceSysext KubernetesSource = "sysext"
	// KubernetesSourceBinaries: kubeadm and kubelet (and kubectl if asked) of the release layout
	// are downloaded by Ignition, each checked against its pinned SHA-256 (digestsFrom, cabpi's
	// catalogue) before anything runs it, and installed into /opt/bin; cabpi writes the
	// kubelet's unit and kubeadm's drop-in for it.
	KubernetesSourceBinaries KubernetesSource = "binaries"
)

// Architecture is a node's CPU architecture, as Kubernetes releases name it.
// +kubebuilder:validation:Enum=amd64;arm64
type Architecture string

const (
	// ArchitectureAMD64 is x86-64 (the sysext bakery's "x86-64").
	ArchitectureAMD64 Architecture = "amd64"
	// ArchitectureARM64 is 64-bit ARM (the sysext bakery's "arm64").
	ArchitectureARM64 Architecture = "arm64"
)

// Default download locations of the sources.
const (
	// DefaultSysextBaseURL is the Flatcar sysext bakery, which serves
	// kubernetes-<version>-<x86-64|arm64>.raw and, for systemd-sysupdate,
	// kubernetes/kubernetes-<minor>.conf and noop.conf.
	DefaultSysextBaseURL = "https://extensions.flatcar.org/extensions"
	// DefaultBinariesBaseURL is the Kubernetes release layout:
	// <version>/bin/linux/<arch>/<binary>.
	DefaultBinariesBaseURL = "https://dl.k8s.io/release"
)

// KubernetesSpec says where kubeadm and the kubelet come from, at the owner's version.
//
// Valid combinations: image for both variants; sysext from the default bakery for flatcar only
// (its images are built for Flatcar), sysext from a baseURL of your own for both variants;
// binaries for both variants. amd64 and arm64 for all of them. Admission refuses the rest, and a
// version the layout does not have (build metadata such as v1.34.0+vendor.1; pre-releases for
// sysext). The admission webhook checks these (the renderer's rules), naming the field.
type KubernetesSpec struct {
	// source is image (default: the image has them), sysext or binaries.
	// +optional
	Source KubernetesSource `json:"source,omitempty"`

	// arch is the node's architecture: amd64 (default) or arm64.
	// +optional
	Arch Architecture `json:"arch,omitempty"`

	// sysext configures source sysext.
	// +optional
	Sysext *SysextSource `json:"sysext,omitempty"`

	// binaries configures source binaries.
	// +optional
	Binaries *BinariesSource `json:"binaries,omitempty"`

	// digestsFrom names a Secret or ConfigMap key that lists the SHA-256 of the files the node
	// downloads, as sha256sum prints them when run in the mirror's root
	// ("<hex>  v1.34.2/bin/linux/amd64/kubelet", "<hex>  kubernetes-v1.34.2-x86-64.raw"; the
	// sysext bakery's SHA256SUMS has this form). Each download is pinned to its digest: Ignition
	// checks it before anything runs it, and so does an in-place update. cabpi knows the
	// digests of the official release binaries; list those of your own builds and of the
	// system extension images here. A digest listed here wins over cabpi's for the same path.
	// A version whose binaries or image have no digest known is not rendered
	// (KubernetesDigestUnknown).
	// +optional
	DigestsFrom *DigestsSource `json:"digestsFrom,omitempty"`
}

// DigestsSource names exactly one Secret or ConfigMap key holding a digest list.
// +kubebuilder:validation:XValidation:rule="has(self.secret) != has(self.configMap)",message="set exactly one of secret or configMap"
type DigestsSource struct {
	// secret is a key of a Secret in the config's namespace.
	// +optional
	Secret *KeyReference `json:"secret,omitempty"`
	// configMap is a key of a ConfigMap in the config's namespace.
	// +optional
	ConfigMap *KeyReference `json:"configMap,omitempty"`
}

// SysextSource is where the Kubernetes system extension comes from.
type SysextSource struct {
	// baseURL serves kubernetes-<version>-<x86-64|arm64>.raw (and, with sysupdate,
	// kubernetes/kubernetes-<minor>.conf and noop.conf), as the Flatcar sysext bakery does. Set
	// it to a mirror of that layout for air-gapped nodes. Default
	// https://extensions.flatcar.org/extensions. The image is checked against a digest you give
	// (spec.kubernetes.digestsFrom), never against the mirror's own list. An http:// URL is
	// refused with sysupdate unless the transfer file and noop.conf are pinned there too.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	BaseURL string `json:"baseURL,omitempty"`

	// sysupdate also installs the bakery's systemd-sysupdate configuration for the version's
	// minor and enables systemd-sysupdate.timer, which stages newer patch releases of that minor
	// and flags /run/reboot-required (for kured). Off by default: Cluster API owns the version,
	// and a node updated behind its back runs a version its Machine does not say.
	// +optional
	Sysupdate bool `json:"sysupdate,omitempty"`
}

// BinariesSource is where the release binaries come from.
type BinariesSource struct {
	// baseURL serves the Kubernetes release layout:
	// <baseURL>/<version>/bin/linux/<arch>/{kubeadm,kubelet,kubectl}. Set it to a mirror of that
	// layout for air-gapped nodes. Default https://dl.k8s.io/release. What it serves is checked
	// against digests that do not come from it (digestsFrom, cabpi's catalogue); http:// is
	// accepted because every download is pinned.
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	BaseURL string `json:"baseURL,omitempty"`

	// kubectl also installs kubectl.
	// +optional
	Kubectl bool `json:"kubectl,omitempty"`
}

// User is a user Ignition creates (passwd.users), with KubeadmConfig's field names where Ignition
// has the same notion. Sudo rules are files (spec.files under /etc/sudoers.d/).
// +kubebuilder:validation:XValidation:rule="!(has(self.passwordHash) && has(self.passwordHashFrom))",message="set either passwordHash or passwordHashFrom, not both"
type User struct {
	// name is the user's login name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z_][a-z0-9_.-]*[$]?$`
	Name string `json:"name"`

	// gecos is the user's comment field.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Gecos string `json:"gecos,omitempty"`

	// homeDir is the user's home directory (default /home/<name>).
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^/`
	HomeDir string `json:"homeDir,omitempty"`

	// shell is the user's login shell.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^/`
	Shell string `json:"shell,omitempty"`

	// primaryGroup is the user's primary group (default: a group named like the user).
	// +optional
	// +kubebuilder:validation:MaxLength=32
	PrimaryGroup string `json:"primaryGroup,omitempty"`

	// groups are supplementary groups the user is added to (they must exist on the node).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=32
	Groups []string `json:"groups,omitempty"`

	// passwordHash is the user's password hash as crypt(3) writes it ("$6$..."). Prefer
	// passwordHashFrom: a spec is readable by anyone who can read the config.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	PasswordHash string `json:"passwordHash,omitempty"`

	// passwordHashFrom reads the password hash from a Secret key in the config's namespace
	// (KubeadmConfig's passwdFrom).
	// +optional
	PasswordHashFrom *FileSource `json:"passwordHashFrom,omitempty"`

	// sshAuthorizedKeys are added to the user's authorized keys.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:MaxLength=10240
	SSHAuthorizedKeys []string `json:"sshAuthorizedKeys,omitempty"`
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

// ContainerLinuxConfigSpec is a legacy Container Linux Config document (YAML), inline or from a
// key of a Secret or ConfigMap in the config's namespace.
// +kubebuilder:validation:XValidation:rule="!(has(self.inline) && has(self.contentFrom))",message="set either inline or contentFrom, not both"
type ContainerLinuxConfigSpec struct {
	// inline is the Container Linux Config document (YAML).
	// +optional
	// +kubebuilder:validation:MaxLength=1048576
	Inline string `json:"inline,omitempty"`

	// contentFrom reads the document from a Secret or ConfigMap key.
	// +optional
	ContentFrom *ButaneSource `json:"contentFrom,omitempty"`

	// strict makes transpiler and translation warnings errors (CABPK's containerLinuxConfig.strict).
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

// FileEncoding is how a file's content is encoded in the spec (KubeadmConfig's encodings).
// +kubebuilder:validation:Enum=base64;gzip;gzip+base64
type FileEncoding string

const (
	// FileEncodingBase64: the content is base64; the node gets the decoded bytes.
	FileEncodingBase64 FileEncoding = "base64"
	// FileEncodingGzip: the content is gzip data; the node gets it decompressed. Only with
	// contentFrom (a Secret holds bytes; a spec string cannot hold gzip).
	FileEncodingGzip FileEncoding = "gzip"
	// FileEncodingGzipBase64: the content is base64 of gzip data; the node gets it decoded and
	// decompressed.
	FileEncodingGzipBase64 FileEncoding = "gzip+base64"
)

// File is a file written by Ignition before kubeadm runs. Field names and meanings follow
// KubeadmConfig's files so they can be copied over. How the data is carried to the node is the
// provider's choice (compressed only where spec.platform allows); encoding only says how the
// content here is to be read.
// +kubebuilder:validation:XValidation:rule="has(self.content) != has(self.contentFrom)",message="set exactly one of content or contentFrom"
// +kubebuilder:validation:XValidation:rule="!has(self.encoding) || self.encoding != 'gzip' || has(self.contentFrom)",message="encoding gzip needs contentFrom: inline content cannot hold gzip bytes; use gzip+base64"
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

	// encoding says how content (or the Secret key's value) is encoded: base64, gzip or
	// gzip+base64. The node gets the decoded bytes. Empty means plain text.
	// +optional
	Encoding FileEncoding `json:"encoding,omitempty"`

	// append adds the content to the end of the file instead of replacing it (Ignition's
	// append), for files the OS image already has.
	// +optional
	Append bool `json:"append,omitempty"`
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

	// dataInputsHash is a hash of every input that shaped the data in the data Secret: the spec,
	// the referenced Secret and ConfigMap keys, the cluster CA, the control-plane endpoint and
	// the Kubernetes version. While the owner has not started provisioning (no
	// spec.providerID, infrastructure not provisioned), a change of any of them renders the
	// data again in place; after that the data is never changed.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	DataInputsHash string `json:"dataInputsHash,omitempty"`

	// dataSpecHash is a hash of the spec less what a Cluster API in-place update changes (the
	// Kubernetes source's baseURL): the spec the data in the data Secret was rendered from or,
	// once the owner started provisioning, the spec last reported not to be rendered (for data
	// delivered before this field was recorded: the spec when it was first recorded). A later
	// spec that differs from it only in those fields was applied to the node by the in-place
	// update extension: it is neither rendered again nor reported.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	DataSpecHash string `json:"dataSpecHash,omitempty"`
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
