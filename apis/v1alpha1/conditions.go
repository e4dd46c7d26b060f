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

// Condition types and reasons of IgnitionConfig. The reasons are part of the API: tooling and
// alerts may match on them, so they are never renamed.
const (
	// ReadyCondition summarises DataSecretAvailable and CertificatesAvailable. Cluster API mirrors
	// it into the Machine's BootstrapConfigReady condition.
	ReadyCondition = "Ready"
	// ReadyReason: every summarised condition is True.
	ReadyReason = "Ready"
	// NotReadyReason: at least one summarised condition is False.
	NotReadyReason = "NotReady"
	// ReadyUnknownReason: at least one summarised condition is Unknown.
	ReadyUnknownReason = "ReadyUnknown"

	// PausedCondition is Cluster API's Paused condition (cluster.spec.paused or the
	// cluster.x-k8s.io/paused annotation on the config); reasons Paused / NotPaused.
	PausedCondition = "Paused"

	// DataSecretAvailableCondition is True once the bootstrap data Secret exists.
	DataSecretAvailableCondition = "DataSecretAvailable"

	// DataSecretAvailableReason (True): the Secret exists and status.dataSecretName names it.
	DataSecretAvailableReason = "Available"
	// WaitingForClusterInfrastructureReason (False): Cluster status.initialization.infrastructureProvisioned is not true yet.
	WaitingForClusterInfrastructureReason = "WaitingForClusterInfrastructure"
	// WaitingForControlPlaneInitializedReason (False): a joining node waits for the Cluster's
	// ControlPlaneInitialized condition.
	WaitingForControlPlaneInitializedReason = "WaitingForControlPlaneInitialized"
	// WaitingForControlPlaneVersionReason (False): a join whose Machine's Kubernetes minor is
	// newer than the control plane's waits for the control plane to be upgraded (a kubelet must
	// not be newer than the API server); the message names both versions.
	WaitingForControlPlaneVersionReason = "WaitingForControlPlaneVersion"
	// KubeadmVersionSkewReason (False): a join whose Machine's Kubernetes minor is more than one
	// behind the control plane's, which kubeadm refuses to join; the message names both versions.
	KubeadmVersionSkewReason = "KubeadmVersionSkew"
	// WaitingForInitLockReason (False): another control-plane Machine holds the cluster's kubeadm init lock.
	WaitingForInitLockReason = "WaitingForInitLock"
	// WaitingForControlPlaneEndpointReason (False): Cluster spec.controlPlaneEndpoint is not set.
	WaitingForControlPlaneEndpointReason = "WaitingForControlPlaneEndpoint"
	// WaitingForClusterCAReason (False): the <cluster>-ca Secret does not exist (yet) or holds no certificate.
	WaitingForClusterCAReason = "WaitingForClusterCA"
	// WaitingForKubernetesVersionReason (False): neither the Machine (MachinePool template) nor
	// the Cluster topology names a Kubernetes version.
	WaitingForKubernetesVersionReason = "WaitingForKubernetesVersion"
	// InvalidClusterCertificateReason (False, also on CertificatesAvailable): a cluster
	// certificate Secret (<cluster>-ca, -etcd, -proxy, ...) holds no valid PEM certificate in
	// tls.crt; the message names the Secret. Fix or delete it (a deleted one is generated again
	// when cabpi generates the cluster's certificates).
	InvalidClusterCertificateReason = "InvalidClusterCertificate"
	// ReferenceNotFoundReason (False): a Secret or ConfigMap the spec references (butane.contentFrom,
	// containerLinuxConfig.contentFrom, files[].contentFrom) or one of its keys does not exist; the
	// message names it.
	ReferenceNotFoundReason = "ReferenceNotFound"
	// InvalidButaneReason (False): the butane snippet does not translate (message carries Butane's
	// report with line and column), uses another variant, or has warnings while strict.
	InvalidButaneReason = "InvalidButane"
	// InvalidContainerLinuxConfigReason (False): the containerLinuxConfig does not transpile, says
	// what Ignition 3 cannot (a file on a filesystem Ignition 2 mounted only to write it, an
	// oem:// source, ...), has warnings while strict, or is given for variant fcos; the message
	// carries the line and column in the document.
	InvalidContainerLinuxConfigReason = "InvalidContainerLinuxConfig"
	// OwnedPathConflictReason (False): the snippet (Butane or Container Linux Config) or
	// spec.files writes a path or unit cabpi owns.
	OwnedPathConflictReason = "OwnedPathConflict"
	// UnsupportedKubernetesVersionReason (False): kubeadm config cannot be written for the version
	// (below v1.22 or not a semantic version).
	UnsupportedKubernetesVersionReason = "UnsupportedKubernetesVersion"
	// UnsupportedIgnitionVersionReason (False): spec.ignitionVersion is not emitted for the variant,
	// or is lower than the butane snippet needs.
	UnsupportedIgnitionVersionReason = "UnsupportedIgnitionVersion"
	// KubernetesDigestUnknownReason: a file the node would download and run (a release binary, a
	// system extension image) has no SHA-256 known, in cabpi's catalogue or in
	// spec.kubernetes.digestsFrom; nothing is stored until one is listed there (docs/adr/046).
	KubernetesDigestUnknownReason = "KubernetesDigestUnknown"
	// InvalidConfigReason (False): any other rendering error (e.g. the merged Ignition fails validation).
	InvalidConfigReason = "InvalidConfig"
	// WaitingForInfrastructureMachineReason (False): the owner's infrastructure machine, whose
	// spec says how the data reaches the instance (CAPA's AWSMachine and AWSMachinePool:
	// spec.ignition), does not exist yet or its kind is not installed.
	WaitingForInfrastructureMachineReason = "WaitingForInfrastructureMachine"
	// IncompatibleInfrastructureReason (False): the owner's infrastructure machine would hand
	// the data to the instance in a way the variant cannot boot: CAPA's Ignition 2.x stub in
	// front of data in S3 for Fedora CoreOS, which reads spec 3 only. The message names the
	// field to change (spec.ignition.version). Nothing is stored.
	IncompatibleInfrastructureReason = "IncompatibleInfrastructure"
	// DataTooLargeReason (False): the rendered data is larger than a Secret holds (1 MiB); the
	// message gives both sizes. No join token is created for it.
	DataTooLargeReason = "DataTooLarge"

	// OverPlatformLimitReason (DataSecretAvailable True) says the data was stored but is larger
	// than the platform's user-data limit (spec.platform, or the owner's infrastructure kind),
	// even compressed: the infrastructure provider may refuse it. Nothing is truncated.
	OverPlatformLimitReason = "OverPlatformLimit"

	// RenderedWithWarningsReason (DataSecretAvailable True) says the data was stored, but its
	// documents had warnings (e.g. a Butane key that is not known and was dropped); the message
	// lists them with their line and column, and a warning event says the same. strict makes
	// them errors instead. OverPlatformLimit, when both apply, is the reason, and the message
	// carries both.
	RenderedWithWarningsReason = "RenderedWithWarnings"
	// RerenderFailedReason (DataSecretAvailable True) says the inputs changed before the owner
	// started provisioning but the data could not be rendered again from them (the message says
	// why, e.g. a Butane error or a referenced Secret gone): the data Secret keeps the data
	// rendered before, which still boots. A warning event says the same. Fix the input, or put
	// it back, and the reason goes away.
	RerenderFailedReason = "RerenderFailed"
	// JoinTokenLostReason (False): the join token in the data of a Machine that has already been
	// provisioned was deleted or expired before its node joined (the manager was down past the
	// token's TTL, or the token cleaner removed it): that machine cannot join with the data it
	// booted with. Delete the Machine so that it is replaced. A Machine not provisioned yet gets
	// new data with a fresh token instead.
	JoinTokenLostReason = "JoinTokenLost"
	// BootstrapTokenFailedReason (False): the join token could not be created in the workload
	// cluster (not reachable yet); retried with backoff.
	BootstrapTokenFailedReason = "BootstrapTokenFailed"
	// DataSecretInternalErrorReason (False): writing the Secret failed; retried with backoff.
	DataSecretInternalErrorReason = "InternalError"
	// DataSecretConflictReason (False): a Secret with the data Secret's name exists and is
	// controlled by another object; it is never overwritten. Delete or rename it.
	DataSecretConflictReason = "DataSecretConflict"

	// CertificatesAvailableCondition is True when the certificates a control-plane node needs
	// were found (or generated for the first control-plane node when there is no control-plane provider).
	CertificatesAvailableCondition = "CertificatesAvailable"
	// CertificatesAvailableReason (True): certificates found or generated.
	CertificatesAvailableReason = "Available"
	// CertificatesNotFoundReason (False): a joining control-plane node waits for certificates
	// that the first control-plane node (or the control-plane provider) creates.
	CertificatesNotFoundReason = "NotFound"
	// CertificatesInternalErrorReason (False): looking up or generating certificates failed.
	CertificatesInternalErrorReason = "InternalError"
)

// Reasons of the events cabpi emits besides the condition reasons above (warnings carry those).
const (
	// RerenderedEventReason (Normal): the inputs changed before the owner started provisioning
	// and the data Secret was rendered again in place, with the same join token.
	RerenderedEventReason = "Rerendered"
	// NotRerenderedEventReason: the spec changed after the owner started provisioning; the data
	// is not rendered again (Warning for a Machine: roll out new data through its
	// MachineDeployment; Normal for a MachinePool, whose next join-token rotation renders it).
	NotRerenderedEventReason = "NotRerendered"
	// DataSecretReplacedEventReason (Warning): a data Secret with no controller that the status
	// did not record was found before the owner started provisioning; nothing can have booted
	// from it, and anyone who may create Secrets in the namespace could have put it there, so it
	// was rendered over with this config's data.
	DataSecretReplacedEventReason = "DataSecretReplaced"
)

// Annotations and labels cabpi sets.
const (
	// BootstrapTokenIDAnnotation on the data Secret records the ID (the public half) of the
	// kubeadm bootstrap token embedded in the data, so the controller can refresh it. The token's
	// secret half is never stored outside the data Secret and the workload cluster.
	BootstrapTokenIDAnnotation = "bootstrap.cluster.x-k8s.io/ignition-token-id"
	// BootstrapRoleAnnotation on the data Secret records what kubeadm does with the data: init,
	// control-plane (join --control-plane) or worker (join). Data rendered again before its owner
	// started provisioning keeps its role: kubeadm init data is never turned into a join.
	BootstrapRoleAnnotation = "bootstrap.cluster.x-k8s.io/ignition-role"
)
