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

package ignition

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Part is a part of the renderer's Input that an error or a warning is about. Callers map parts
// to their own fields (admission to the spec's field paths, the controller to condition
// reasons) by switching on it; the renderer knows nothing of where its input came from.
type Part int

const (
	// PartWhole is the input as a whole: the merged config, whose entries no longer say which
	// part wrote them, or anything no single part is at fault for.
	PartWhole Part = iota
	// PartVariant is Input.Variant.
	PartVariant
	// PartIgnitionVersion is Input.IgnitionVersion, the pinned spec version.
	PartIgnitionVersion
	// PartRole is Input.Role.
	PartRole
	// PartKubernetesVersion is Input.KubernetesVersion.
	PartKubernetesVersion
	// PartClusterConfiguration is Input.ClusterConfiguration; a place's Path leads into it.
	PartClusterConfiguration
	// PartInitConfiguration is Input.InitConfiguration; a place's Path leads into it.
	PartInitConfiguration
	// PartJoinConfiguration is Input.JoinConfiguration; a place's Path leads into it.
	PartJoinConfiguration
	// PartNodeName is Input.NodeName (NodeNamePlatform, NodeNameProviderID).
	PartNodeName
	// PartCertificate is an entry of Input.Certificates (Place.Index).
	PartCertificate
	// PartFile is an entry of Input.Files (Place.Index; FilePath, FileContent, ...).
	PartFile
	// PartUser is an entry of Input.Users (Place.Index).
	PartUser
	// PartPreKubeadmCommand is an entry of Input.PreKubeadmCommands (Place.Index).
	PartPreKubeadmCommand
	// PartPostKubeadmCommand is an entry of Input.PostKubeadmCommands (Place.Index).
	PartPostKubeadmCommand
	// PartButane is Input.Butane, the user's Butane document.
	PartButane
	// PartContainerLinuxConfig is Input.ContainerLinuxConfig, the user's Container Linux Config.
	PartContainerLinuxConfig
	// PartKubernetes is Input.Kubernetes, where kubeadm and the kubelet come from; a place's
	// Path leads into it (KubernetesSource, KubernetesSysext and KubernetesBaseURL, ...).
	PartKubernetes
)

// partInfo is what is known of a part beyond its number: the one table a new part is
// registered in. Callers find a place's name in messages (Part.String), whether it is a list
// (Part.Listed) and the spec field it comes from (Place.FieldPath) here.
type partInfo struct {
	// name is the part as messages name it: the spec's field name, which users know, since the
	// input's parts are the spec's fields resolved.
	name string
	// listed: the part is a list, whose places have an Index.
	listed bool
	// spec: the part is a field of the spec (the others come from the owner or the cluster:
	// the role, the owner's Kubernetes version, the cluster's certificates).
	spec bool
	// whole is the member of the spec field that stands for the part as a whole in a field
	// path: a document's inline text (only inline documents are rendered at admission), a
	// file's path (where its content comes from, among others, is the file as a whole).
	whole Member
}

var parts = [...]partInfo{
	PartWhole:                {},
	PartVariant:              {name: "variant", spec: true},
	PartIgnitionVersion:      {name: "ignitionVersion", spec: true},
	PartRole:                 {name: "role"},
	PartKubernetesVersion:    {name: "version"},
	PartClusterConfiguration: {name: "clusterConfiguration", spec: true},
	PartInitConfiguration:    {name: "initConfiguration", spec: true},
	PartJoinConfiguration:    {name: "joinConfiguration", spec: true},
	PartNodeName:             {name: "nodeName", spec: true},
	PartCertificate:          {name: "certificates", listed: true},
	PartFile:                 {name: "files", listed: true, spec: true, whole: FilePath},
	PartUser:                 {name: "users", listed: true, spec: true},
	PartPreKubeadmCommand:    {name: "preKubeadmCommands", listed: true, spec: true},
	PartPostKubeadmCommand:   {name: "postKubeadmCommands", listed: true, spec: true},
	PartButane:               {name: "butane", spec: true, whole: documentInline},
	PartContainerLinuxConfig: {name: "containerLinuxConfig", spec: true, whole: documentInline},
	PartKubernetes:           {name: "kubernetes", spec: true},
}

// documentInline is the member of a provisioning document's section that holds it inline.
const documentInline Member = "inline"

// info is the part's row of the table; the zero row for a part not in it.
func (p Part) info() partInfo {
	if p < 0 || int(p) >= len(parts) {
		return partInfo{}
	}
	return parts[p]
}

// String is the part's name in messages.
func (p Part) String() string {
	if p < 0 || int(p) >= len(parts) {
		return "part(" + strconv.Itoa(int(p)) + ")"
	}
	return parts[p].name
}

// Listed reports whether the part is a list, whose places have an Index.
func (p Part) Listed() bool { return p.info().listed }

// Member is a step of a place's Path: a field of a File or of NodeName (the constants below), or
// a member of one of kubeadm's configuration types by its JSON name ("discovery").
type Member string

// Members of a File place. FileMode is named "permissions", as the spec calls the mode.
const (
	FilePath    Member = "path"
	FileContent Member = "content"
	FileMode    Member = "permissions"
	FileOwner   Member = "owner"
	FileAppend  Member = "append"
)

// Members of a NodeName place: the platform whose metadata names the node (named as the spec
// calls it) and the provider ID option.
const (
	NodeNamePlatform   Member = "fromMetadata"
	NodeNameProviderID Member = "providerID"
)

// Members of a Kubernetes place, named as the spec names them.
const (
	KubernetesSource    Member = "source"
	KubernetesArch      Member = "arch"
	KubernetesSysext    Member = "sysext"
	KubernetesBinaries  Member = "binaries"
	KubernetesBaseURL   Member = "baseURL"
	KubernetesSysupdate Member = "sysupdate"
	// KubernetesDigestsFrom is where the digests of the source's downloads are listed.
	KubernetesDigestsFrom Member = "digestsFrom"
)

// Members of a User place, named as the spec names them.
const (
	UserName    Member = "name"
	UserGecos   Member = "gecos"
	UserHomeDir Member = "homeDir"
	UserShell   Member = "shell"
	// UserPrimaryGroup and UserGroups: /etc/group's fields are separated the same way, and
	// useradd takes the supplementary groups as one comma-separated list.
	UserPrimaryGroup Member = "primaryGroup"
	UserGroups       Member = "groups"
)

// JoinControlPlane is the controlPlane member of a JoinConfiguration, which makes a join a
// control-plane join.
const JoinControlPlane Member = "controlPlane"

// Place is where in the Input an error or a warning is: a part, the entry of a list part, and
// the path to a member inside it. The zero Place is PartWhole.
type Place struct {
	Part Part
	// Index is the entry of a listed part (Part.Listed); 0 for the others.
	Index int
	// Path leads to the member at fault inside the part (or its entry), outermost first; empty
	// for the part (or entry) as a whole.
	Path []Member
}

// At is the place of a part, or of the member path leads to inside it.
func At(part Part, path ...Member) Place {
	return Place{Part: part, Path: path}
}

// Entry is the place of entry i of a listed part, or of the member path leads to inside it.
func Entry(part Part, i int, path ...Member) Place {
	return Place{Part: part, Index: i, Path: path}
}

// Member is the first step of the place's Path, "" for none: the field of a File or NodeName at
// fault.
func (p Place) Member() Member {
	if len(p.Path) == 0 {
		return ""
	}
	return p.Path[0]
}

// Names is the place's Path as strings, for callers building a field path of their own.
func (p Place) Names() []string {
	out := make([]string, len(p.Path))
	for i, m := range p.Path {
		out[i] = string(m)
	}
	return out
}

// String is the place as messages show it: "files[2].permissions",
// "joinConfiguration.discovery.bootstrapToken.token", "butane"; "" for PartWhole. It is for
// people to read: callers that act on a place switch on its Part and Members instead.
func (p Place) String() string {
	var b strings.Builder
	b.WriteString(p.Part.String())
	if p.Part.Listed() {
		b.WriteString("[" + strconv.Itoa(p.Index) + "]")
	}
	for _, m := range p.Path {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(string(m))
	}
	return b.String()
}

// FieldPath is the spec field the place comes from, below root (the spec's own path: spec, or
// spec.template.spec): "spec.files[2].permissions", "spec.butane.inline". A place no field of
// the spec holds (the input as a whole, the role, the owner's Kubernetes version, the
// cluster's certificates) is root itself: the spec as a whole.
func (p Place) FieldPath(root *field.Path) *field.Path {
	info := p.Part.info()
	if !info.spec {
		return root
	}
	at := root.Child(info.name)
	if info.listed {
		at = at.Index(p.Index)
	}
	if len(p.Path) == 0 && info.whole != "" {
		return at.Child(string(info.whole))
	}
	for _, m := range p.Path {
		at = at.Child(string(m))
	}
	return at
}
