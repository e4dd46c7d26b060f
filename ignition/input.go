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

// Package ignition renders the bootstrap data of one node: kubeadm (the bootstrap part) plus the
// user's Butane or legacy Container Linux Config (the provisioning part), merged into one
// Ignition 3.x config.
//
// The renderer is pure: typed inputs in, Ignition JSON bytes out. It has no client, no clock and
// no randomness, so identical inputs give identical bytes; callers resolve every reference
// (Secrets, ConfigMaps, tokens, certificates) before calling Render.
package ignition

import (
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types/upstream"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// Role is what kubeadm does on the node.
type Role string

const (
	// RoleInit runs kubeadm init: the first control-plane node of a cluster.
	RoleInit Role = "init"
	// RoleControlPlaneJoin runs kubeadm join --control-plane.
	RoleControlPlaneJoin Role = "control-plane"
	// RoleWorkerJoin runs kubeadm join (worker Machines and MachinePools).
	RoleWorkerJoin Role = "worker"
)

// Known reports whether r is one of the roles above.
func (r Role) Known() bool {
	switch r {
	case RoleInit, RoleControlPlaneJoin, RoleWorkerJoin:
		return true
	}
	return false
}

// Paths and units the provider owns. A user snippet or spec file that writes one of them is rejected.
const (
	KubeadmConfigPath = "/etc/kubeadm.yml"
	KubeadmScriptPath = "/etc/kubeadm.sh"
	KubeadmUnitName   = "kubeadm.service"
	SentinelPath      = "/run/cluster-api/bootstrap-success.complete"
)

// UninitializedTaint is added to worker nodes at creation (Cluster API contract); Cluster API
// removes it once it has synced the Machine's labels to the Node.
const (
	UninitializedTaintKey    = "node.cluster.x-k8s.io/uninitialized"
	UninitializedTaintEffect = "NoSchedule"
)

// Input is everything Render needs. All content is resolved: no references.
type Input struct {
	// Variant selects the Butane variant the snippet must use and the Ignition versions allowed.
	Variant cabpiv1.Variant
	// IgnitionVersion pins the output spec version ("3.4.0"); empty picks the lowest that carries the config.
	IgnitionVersion string
	// Role selects kubeadm init, join --control-plane or join.
	Role Role
	// KubernetesVersion ("v1.34.0") selects the kubeadm API version (v1beta3 < 1.31 <= v1beta4)
	// and, with a Kubernetes source other than the image, the kubeadm and kubelet installed.
	KubernetesVersion string
	// Kubernetes says where kubeadm and the kubelet come from (spec.kubernetes): the image
	// (zero value), the Kubernetes system extension, or the release binaries.
	Kubernetes cabpiv1.KubernetesSpec
	// KubernetesDigests are the digests the source's downloads are pinned to: the user's
	// (spec.kubernetes.digestsFrom) over cabpi's catalogue (KubernetesPins).
	KubernetesDigests KubernetesDigests

	// ClusterConfiguration and InitConfiguration are used for RoleInit, already defaulted from the Cluster.
	ClusterConfiguration *kubeadmv1.ClusterConfiguration
	InitConfiguration    *kubeadmv1.InitConfiguration
	// ClusterData carries what kubeadm's ClusterConfiguration takes from the Cluster and Machine
	// (cluster name, Kubernetes version, pod/service subnets, DNS domain), passed as is to
	// kubeadm/pkg/types.MarshalClusterConfigurationForVersion. Init only; may be nil.
	ClusterData *upstream.AdditionalData
	// JoinConfiguration is used for the join roles, with discovery (token, CA hashes, endpoint) filled in.
	JoinConfiguration *kubeadmv1.JoinConfiguration

	// Certificates are written for control-plane roles (keys 0600, certificates 0644).
	Certificates []File
	// Files are the user's files (spec.files), content resolved.
	Files []File
	// PreKubeadmCommands and PostKubeadmCommands run around kubeadm in /etc/kubeadm.sh.
	PreKubeadmCommands  []string
	PostKubeadmCommands []string
	// Verbosity, when set, is kubeadm's --v.
	Verbosity *int32
	// Users are created by Ignition (passwd.users), password hashes resolved.
	Users []User

	// NodeName, when set, names the node (and optionally sets its provider ID) from the
	// platform's metadata service at first boot, instead of nodeRegistration.name.
	NodeName *NodeNameFromMetadata

	// Butane is the user's Butane document (YAML), empty for none.
	Butane string
	// ButaneStrict makes Butane warnings errors.
	ButaneStrict bool

	// ContainerLinuxConfig is the user's legacy Container Linux Config document (YAML), empty
	// for none; flatcar only. It is transpiled to Ignition 2.3, translated to 3.x and merged as
	// a Butane snippet is. At most one of Butane and ContainerLinuxConfig is set.
	ContainerLinuxConfig string
	// ContainerLinuxConfigStrict makes the transpiler's and the translation's warnings errors.
	ContainerLinuxConfigStrict bool

	// Compress allows gzip: each file's contents are gzipped where that is shorter (the
	// snippet's too, by Butane), and a config over SizeLimit becomes a wrapper carrying it
	// gzipped (spec 3.1.0 and later). Off, nothing is compressed, as the platforms whose
	// readers do not decompress (CAPD) need.
	Compress bool
	// SizeLimit is the platform's user-data limit in raw bytes, 0 for none. It is only
	// compared with: the data is never cut, and over the limit Output.Size says so.
	SizeLimit int

	// Findings are what the caller's own rules found wrong with the input while building it
	// (configinput: a permission that does not parse, a platform that cannot read what the
	// spec asks for), the part at fault set aside. Render reports them first in its one
	// Report, so every consumer hears of every problem at once. They are not part of what is
	// rendered (nor of configinput.InputsHash): an input with findings never renders.
	Findings []*Error `json:"-"`
}

// File is a resolved file.
type File struct {
	Path    string
	Content []byte
	// Mode is the octal mode, e.g. 0o644; zero means 0o644.
	Mode int
	// Owner is "user:group", "user" or empty (root).
	Owner string
	// Append adds Content to the end of the file (created if missing) instead of replacing it.
	Append bool
}

// User is a user Ignition creates. Empty fields keep the OS's defaults.
type User struct {
	Name              string
	Gecos             string
	HomeDir           string
	Shell             string
	PrimaryGroup      string
	Groups            []string
	PasswordHash      string
	SSHAuthorizedKeys []string
}

// Output is the rendered config and what it weighs.
type Output struct {
	// Data is the Ignition JSON: the config, or a wrapper carrying it compressed.
	Data []byte
	// SpecVersion is the Ignition spec version emitted ("3.3.0"), the wrapper's and the config's.
	SpecVersion string
	// Size reports the size of Data against the platform's user-data limit.
	Size SizeReport
	// Warnings are what the input's documents were warned about (e.g. a key Butane does not
	// know and dropped); none with strict, where they are errors.
	Warnings []Warning
	// KubernetesFrom are the URLs the node downloads kubeadm and the kubelet from (source sysext
	// or binaries); none when the image has them.
	KubernetesFrom []string
}

// SizeReport is the weight of the rendered data.
type SizeReport struct {
	// Bytes is the size of Data: what is stored and handed to the machine.
	Bytes int
	// GzipBytes is the size of Data gzip-compressed at best compression.
	GzipBytes int
	// Limit is Input.SizeLimit, the platform's user-data limit; 0 for none.
	Limit int
	// Compressed says gzip was allowed (Input.Compress), so every compressed form was tried.
	Compressed bool
	// Wrapped says Data is a wrapper whose ignition.config.replace carries the config gzipped,
	// because the config was over Limit and the wrapper is smaller.
	Wrapped bool
	// UnwrappedBytes is the size of the config itself; Bytes when not wrapped.
	UnwrappedBytes int
}
