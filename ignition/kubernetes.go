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
	"fmt"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"
	types "github.com/coreos/ignition/v2/config/v3_0/types"
	"k8s.io/utils/ptr"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// Where the Kubernetes sources put things on the node. The sysext paths are the Flatcar sysext
// bakery's documented ones, which its systemd-sysupdate configuration expects (and which the
// cloud providers' Flatcar-sysext flavors write: cabpi convert reads them); the release binaries
// go to /opt/bin, Flatcar's place for binaries added to its read-only /usr.
// They live in nodelayout, which the in-place update's node side shares.
const (
	SysextDir         = nodelayout.SysextDir
	SysextLink        = nodelayout.SysextLink
	SysupdateConfDir  = nodelayout.SysupdateConfDir
	SysupdateNoopPath = nodelayout.SysupdateNoopPath
	SysupdateService  = "systemd-sysupdate.service"
	SysupdateTimer    = "systemd-sysupdate.timer"
	SysupdateDropin   = "kubernetes.conf"
	sysupdateScript   = "/etc/cabpi/sysupdate-kubernetes.sh"
	sysextService     = "systemd-sysext.service"
	binDir            = nodelayout.BinDir
	binariesStage     = nodelayout.BinariesStage
	kubeletUnit       = "kubelet.service"
	kubeletDropin     = "10-kubeadm.conf"
)

// releaseVersion is a release's version as both layouts name it; the release layout also has
// pre-releases (v1.35.0-rc.1). Build metadata (v1.34.0+vendor.1) is in neither.
var (
	sysextVersion  = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
	releaseVersion = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$`)
)

// kubernetesInstall is what a Kubernetes source adds to the provider's config.
type kubernetesInstall struct {
	// files are downloaded by Ignition (remote contents) or carry data (units' scripts).
	remote []remoteFile
	data   []File
	links  []types.Link
	units  []types.Unit
	// stepFiles (embedded scripts defining functions) and stepCall are the bootstrap script's
	// part that makes kubeadm and the kubelet usable, run before the user's commands.
	stepFiles []string
	stepCall  string
	// after orders kubeadm.service after these units, and wants them.
	after []string
	// owned are the paths the source writes: a user file or snippet may not write them.
	owned []string
}

// remoteFile is a file Ignition downloads, and checks against sha256 when it is set before it
// writes it (verification.hash): nothing runs a file that does not match.
type remoteFile struct {
	path, source, sha256 string
	mode                 int
}

// checkKubernetes checks spec.kubernetes on its own and against the variant and version: the
// fields of a source only with that source, a base URL Ignition can fetch from, the bakery's
// images only for Flatcar, and a version the source's layout has. Errors are placed at
// PartKubernetes (the field at fault) or PartKubernetesVersion (the owner's version); every one
// found is returned, but for a source that is none of the three, which leaves nothing to check.
func checkKubernetes(variant cabpiv1.Variant, k cabpiv1.KubernetesSpec, version string) []*Error {
	source := kubernetesSource(k)
	switch source {
	case cabpiv1.KubernetesSourceImage, cabpiv1.KubernetesSourceSysext, cabpiv1.KubernetesSourceBinaries:
	default:
		return []*Error{errorf(ErrInvalidInput, At(PartKubernetes, KubernetesSource),
			"source %q is not image, sysext or binaries", k.Source).withValue(string(k.Source))}
	}
	rep := &Report{}
	switch k.Arch {
	case "", cabpiv1.ArchitectureAMD64, cabpiv1.ArchitectureARM64:
	default:
		rep.add(errorf(ErrInvalidInput, At(PartKubernetes, KubernetesArch), "arch %q is not amd64 or arm64", k.Arch).withValue(string(k.Arch)))
	}
	if k.Sysext != nil && source != cabpiv1.KubernetesSourceSysext {
		rep.add(errorf(ErrInvalidInput, At(PartKubernetes, KubernetesSysext),
			"sysext is only read with source sysext, and source is %s", source))
	}
	if k.Binaries != nil && source != cabpiv1.KubernetesSourceBinaries {
		rep.add(errorf(ErrInvalidInput, At(PartKubernetes, KubernetesBinaries),
			"binaries is only read with source binaries, and source is %s", source))
	}
	switch source {
	case cabpiv1.KubernetesSourceSysext:
		base := ""
		if k.Sysext != nil {
			base = k.Sysext.BaseURL
		}
		if base != "" {
			rep.add(checkBaseURL(At(PartKubernetes, KubernetesSysext, KubernetesBaseURL), base))
		} else if variant == cabpiv1.VariantFCOS {
			rep.add(errorf(ErrInvalidInput, At(PartKubernetes, KubernetesSysext, KubernetesBaseURL),
				"unset, so the Flatcar sysext bakery's images, which are built for Flatcar: systemd-sysext on Fedora CoreOS "+
					"does not merge them (their extension-release names ID=flatcar). With variant fcos, set sysext.baseURL "+
					"to images built for Fedora CoreOS in the same layout, or use source binaries"))
		}
		if !SysextVersion(version) {
			rep.add(errorf(ErrUnsupportedKubernetesVersion, At(PartKubernetesVersion),
				"%q is not a release the sysext layout has (kubernetes-vMAJOR.MINOR.PATCH-<arch>.raw): "+
					"source sysext needs the owner's spec.version to be a release such as v1.34.4", version))
		}
	case cabpiv1.KubernetesSourceBinaries:
		if k.Binaries != nil && k.Binaries.BaseURL != "" {
			rep.add(checkBaseURL(At(PartKubernetes, KubernetesBinaries, KubernetesBaseURL), k.Binaries.BaseURL))
		}
		if !releaseVersion.MatchString(version) {
			rep.add(errorf(ErrUnsupportedKubernetesVersion, At(PartKubernetesVersion),
				"%q is not a version the Kubernetes release layout has (<version>/bin/linux/<arch>/): "+
					"source binaries needs the owner's spec.version to be a release such as v1.34.4, without build metadata", version))
		}
	}
	return rep.Errors
}

// SysextVersion reports whether v is a version the sysext layout has images of: a release,
// vMAJOR.MINOR.PATCH (no pre-release, no build metadata).
func SysextVersion(v string) bool { return sysextVersion.MatchString(v) }

// checkBaseURL places BaseURLProblem's reason at. A URL that may carry credentials (user
// information, a signed query) is named by its field, never repeated: the message goes to
// admission responses, conditions and events. Any other is quoted, and is the error's Value.
func checkBaseURL(at Place, base string) *Error {
	problem := BaseURLProblem(base)
	if problem == "" {
		return nil
	}
	if urlMayCarrySecrets(base) {
		return errorf(ErrInvalidInput, at, "the base URL %s", problem)
	}
	return errorf(ErrInvalidInput, at, "%q %s", base, problem).withValue(base)
}

// urlMayCarrySecrets reports whether a URL has user information or a query (a signed URL's
// signature), or cannot be read well enough to tell: what is never repeated in a message.
func urlMayCarrySecrets(raw string) bool {
	u, err := url.Parse(raw)
	return err != nil || u.User != nil || u.RawQuery != "" || u.ForceQuery || strings.ContainsAny(raw, "@?")
}

// BaseURLProblem says why base cannot be a source's base URL, "" when it can: the layout's
// paths are appended to an absolute http or https URL with a host name, a port in range if
// any, and no query, fragment or user information. The reason never repeats the URL.
func BaseURLProblem(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return "is not a URL"
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "is not an http or https URL"
	}
	if u.Hostname() == "" {
		return "has no host name"
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "has a port out of range (1 to 65535)"
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return "has an empty port"
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.User != nil {
		return "has a query, fragment or user information: the layout's paths are appended to it"
	}
	return ""
}

func kubernetesSource(k cabpiv1.KubernetesSpec) cabpiv1.KubernetesSource {
	if k.Source == "" {
		return cabpiv1.KubernetesSourceImage
	}
	return k.Source
}

// SysextImageName is the file name of the Kubernetes system extension image of version for arch
// in the bakery's layout: kubernetes-v1.34.4-x86-64.raw.
func SysextImageName(version string, arch cabpiv1.Architecture) string {
	return nodelayout.SysextImageName(version, arch)
}

// ParseSysextImageName reads a name of SysextImageName's form; ok is false for any other name.
func ParseSysextImageName(name string) (version string, arch cabpiv1.Architecture, ok bool) {
	return nodelayout.ParseSysextImageName(name)
}

// kubernetesFor builds what the input's Kubernetes source adds, once checkKubernetes accepted it,
// each download pinned to its digest in pins (KubernetesPins).
func kubernetesFor(in *Input, pins nodelayout.Digests) (*kubernetesInstall, error) {
	k := in.Kubernetes
	switch kubernetesSource(k) {
	case cabpiv1.KubernetesSourceSysext:
		return sysextInstall(k, in.KubernetesVersion, pins)
	case cabpiv1.KubernetesSourceBinaries:
		return binariesInstall(k, in.KubernetesVersion, pins)
	}
	return &kubernetesInstall{}, nil
}

// sysextInstall: Ignition downloads the image into the bakery's directory and links it from
// /etc/extensions, where systemd-sysext merges it into /usr at boot; kubeadm.service waits for
// that merge and the bootstrap checks it happened and brought the Machine's version.
func sysextInstall(k cabpiv1.KubernetesSpec, version string, pins nodelayout.Digests) (*kubernetesInstall, error) {
	l, err := nodelayout.SysextFor(k, version)
	if err != nil {
		return nil, err
	}
	sysupdate := k.Sysext != nil && k.Sysext.Sysupdate
	downloads := l.Downloads(sysupdate)
	inst := &kubernetesInstall{
		remote: []remoteFile{{path: l.ImagePath, source: l.ImageURL, sha256: pins[downloads[0].Rel], mode: 0o644}},
		links:  []types.Link{{Node: types.Node{Path: SysextLink, Overwrite: ptr.To(true)}, LinkEmbedded1: types.LinkEmbedded1{Target: l.ImagePath}}},
		after:  []string{sysextService},
		owned:  append([]string{SysextDir, SysextLink}, nodelayout.UpdateOwned...),
	}
	call, err := shellCall([]string{"cabpi_use_sysext", version})
	if err != nil {
		return nil, err
	}
	inst.stepFiles, inst.stepCall = []string{"kubernetes-version.sh", "kubernetes-sysext.sh"}, call
	if !sysupdate {
		return inst, nil
	}
	// The bakery's systemd-sysupdate configuration for the version's minor: patch releases only.
	script, err := scripts.ReadFile("scripts/sysupdate-kubernetes.sh")
	if err != nil {
		return nil, fmt.Errorf("reading the embedded sysupdate script: %w", err)
	}
	inst.remote = append(inst.remote,
		remoteFile{path: l.TransferPath, source: l.TransferURL, sha256: pins[downloads[1].Rel], mode: 0o644},
		remoteFile{path: SysupdateNoopPath, source: l.NoopURL, sha256: pins[downloads[2].Rel], mode: 0o644})
	inst.data = append(inst.data, File{Path: sysupdateScript, Content: script, Mode: 0o755})
	dropin := serializeUnit([]*unit.UnitOption{
		unit.NewUnitOption("Service", "ExecStartPre", "/bin/bash "+sysupdateScript),
	})
	inst.units = append(inst.units,
		types.Unit{Name: SysupdateService, Dropins: []types.Dropin{{Name: SysupdateDropin, Contents: ptr.To(dropin)}}},
		types.Unit{Name: SysupdateTimer, Enabled: ptr.To(true)})
	inst.owned = append(inst.owned, SysupdateConfDir, SysupdateNoopPath, sysupdateScript,
		path.Join(systemdUnitDir, SysupdateService+".d", SysupdateDropin))
	return inst, nil
}

// binariesInstall: Ignition downloads kubeadm, kubelet (and kubectl) into a staging directory,
// each checked against its pin before it is written; the bootstrap installs them into /opt/bin
// and checks their versions. The kubelet's unit and kubeadm's drop-in for it are written here,
// the unit enabled by the bootstrap only after the check.
func binariesInstall(k cabpiv1.KubernetesSpec, version string, pins nodelayout.Digests) (*kubernetesInstall, error) {
	b := nodelayout.BinariesFor(k, version)
	stage := path.Join(binariesStage, version)
	inst := &kubernetesInstall{owned: append([]string{binariesStage}, nodelayout.UpdateOwned...)}
	for _, d := range b.Downloads() {
		inst.remote = append(inst.remote, remoteFile{path: path.Join(stage, d.Name), source: d.URL, sha256: pins[d.Rel], mode: 0o644})
		inst.owned = append(inst.owned, path.Join(binDir, d.Name))
	}
	kubeletPath := path.Join(binDir, "kubelet")
	inst.units = []types.Unit{{
		Name:     kubeletUnit,
		Contents: ptr.To(serializeUnit(kubeletUnitOptions(kubeletPath))),
		Dropins:  []types.Dropin{{Name: kubeletDropin, Contents: ptr.To(serializeUnit(kubeletDropinOptions(kubeletPath)))}},
	}}
	inst.owned = append(inst.owned, path.Join(systemdUnitDir, kubeletUnit), path.Join(systemdUnitDir, kubeletUnit+".d", kubeletDropin))
	call, err := shellCall(append([]string{"cabpi_install_binaries", version, stage}, b.Names...))
	if err != nil {
		return nil, err
	}
	inst.stepFiles, inst.stepCall = []string{"kubernetes-version.sh", "kubernetes-binaries.sh"}, call
	return inst, nil
}

// kubeletUnitOptions is the kubelet's unit as the Kubernetes release packages it for kubeadm: it
// restarts every few seconds until kubeadm has configured it.
func kubeletUnitOptions(kubelet string) []*unit.UnitOption {
	return []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", "kubelet: The Kubernetes Node Agent"),
		unit.NewUnitOption("Unit", "Documentation", "https://kubernetes.io/docs/"),
		unit.NewUnitOption("Unit", "Wants", "network-online.target"),
		unit.NewUnitOption("Unit", "After", "network-online.target"),
		unit.NewUnitOption("Service", "ExecStart", kubelet),
		unit.NewUnitOption("Service", "Restart", "always"),
		unit.NewUnitOption("Service", "StartLimitInterval", "0"),
		unit.NewUnitOption("Service", "RestartSec", "10"),
		unit.NewUnitOption("Install", "WantedBy", "multi-user.target"),
	}
}

// kubeletDropinOptions is kubeadm's drop-in for the kubelet, as the Kubernetes release packages
// it: the kubeconfigs and configuration kubeadm writes, the flags it computes
// (kubeadm-flags.env), and the user's (KUBELET_EXTRA_ARGS, /etc/default/kubelet).
func kubeletDropinOptions(kubelet string) []*unit.UnitOption {
	return []*unit.UnitOption{
		unit.NewUnitOption("Service", "Environment",
			`"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"`),
		unit.NewUnitOption("Service", "Environment", `"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"`),
		unit.NewUnitOption("Service", "EnvironmentFile", "-/var/lib/kubelet/kubeadm-flags.env"),
		unit.NewUnitOption("Service", "EnvironmentFile", "-/etc/default/kubelet"),
		unit.NewUnitOption("Service", "ExecStart", ""),
		unit.NewUnitOption("Service", "ExecStart",
			kubelet+" $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS"),
	}
}

// ownedFiles are the source's data files as the provider's files (checked and written like the
// certificates).
func (k *kubernetesInstall) ownedFiles() []ownedFile {
	out := make([]ownedFile, 0, len(k.data))
	for _, f := range k.data {
		out = append(out, ownedFile{File: f, place: At(PartKubernetes)})
	}
	return out
}

// specVersion is the spec version of the base config: baseSpecVersion, or pinnedSpecVersion when
// a download is pinned to a SHA-256, which verification.hash takes from 3.1.0 on (3.0.0 has
// sha512 only). The base is built with 3.0.0's types either way: 3.1.0 only adds to them.
func (k *kubernetesInstall) specVersion() string {
	for _, f := range k.remote {
		if f.sha256 != "" {
			return pinnedSpecVersion
		}
	}
	return baseSpecVersion
}

// remotePaths are the paths of the files and links the source has Ignition write.
func (k *kubernetesInstall) remotePaths() []string {
	out := make([]string, 0, len(k.remote)+len(k.links))
	for _, f := range k.remote {
		out = append(out, f.path)
	}
	for _, l := range k.links {
		out = append(out, l.Path)
	}
	return out
}

// sources are the URLs the source downloads from.
func (k *kubernetesInstall) sources() []string {
	var out []string
	for _, f := range k.remote {
		out = append(out, f.source)
	}
	return out
}
