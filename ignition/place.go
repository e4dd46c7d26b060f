package ignition

import (
	"strconv"
	"strings"
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

// partNames are the parts as messages name them; they are the spec's field names, which users
// know, since the input's parts are the spec's fields resolved.
var partNames = [...]string{
	PartWhole:                "",
	PartVariant:              "variant",
	PartIgnitionVersion:      "ignitionVersion",
	PartRole:                 "role",
	PartKubernetesVersion:    "version",
	PartClusterConfiguration: "clusterConfiguration",
	PartInitConfiguration:    "initConfiguration",
	PartJoinConfiguration:    "joinConfiguration",
	PartNodeName:             "nodeName",
	PartCertificate:          "certificates",
	PartFile:                 "files",
	PartUser:                 "users",
	PartPreKubeadmCommand:    "preKubeadmCommands",
	PartPostKubeadmCommand:   "postKubeadmCommands",
	PartButane:               "butane",
	PartContainerLinuxConfig: "containerLinuxConfig",
	PartKubernetes:           "kubernetes",
}

// String is the part's name in messages.
func (p Part) String() string {
	if p < 0 || int(p) >= len(partNames) {
		return "part(" + strconv.Itoa(int(p)) + ")"
	}
	return partNames[p]
}

// Listed reports whether the part is a list, whose places have an Index.
func (p Part) Listed() bool {
	switch p {
	case PartCertificate, PartFile, PartUser, PartPreKubeadmCommand, PartPostKubeadmCommand:
		return true
	}
	return false
}

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
