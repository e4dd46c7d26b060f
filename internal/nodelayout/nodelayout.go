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

// Package nodelayout is where a node's Kubernetes lives and where it comes from, for first
// boot's renderer (package ignition) and the in-place update's node side (package nodeupdate)
// alike: the paths, the download locations of each source, the architecture default, and the
// checks of what was downloaded (digests) and of what runs (versions). One home for each of
// these rules: neither side spells a path, a URL or a check of its own.
package nodelayout

import (
	"fmt"
	"strings"

	"github.com/blang/semver/v4"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// Where the Kubernetes sources put things on the node. The sysext paths are the Flatcar sysext
// bakery's documented ones, which its systemd-sysupdate configuration expects (and which the
// cloud providers' Flatcar-sysext flavors write); the release binaries go to /opt/bin, Flatcar's
// place for binaries added to its read-only /usr.
const (
	SysextDir         = "/opt/extensions/kubernetes"
	SysextLink        = "/etc/extensions/kubernetes.raw"
	SysupdateConfDir  = "/etc/sysupdate.kubernetes.d"
	SysupdateNoopPath = "/etc/sysupdate.d/noop.conf"
	BinDir            = "/opt/bin"
	// BinariesStage is where first boot's Ignition downloads the release binaries, each checked
	// against its pin, not executable; the bootstrap installs them into BinDir.
	BinariesStage = "/opt/cabpi/kubernetes"
	// What `kubeadm upgrade node` rewrites and the kubelet reads (kubeadm's drop-in).
	KubeletConfig = "/var/lib/kubelet/config.yaml"
	KubeletFlags  = "/var/lib/kubelet/kubeadm-flags.env"
	// SystemdUnitDir is where units and drop-ins an administrator (or Ignition) adds live.
	SystemdUnitDir = "/etc/systemd/system"
	// UpdateStateDir holds an in-place update's state on the node: its program, journal,
	// backup, downloads and result (package nodeupdate).
	UpdateStateDir = "/var/lib/cabpi-update"
	// UpdateUnit is the transient unit an in-place update runs as; UpdateResumeUnit and
	// UpdateFinishUnit, in SystemdUnitDir while an update is under way, finish one a reboot
	// interrupted.
	UpdateUnit       = "cabpi-kubernetes-update.service"
	UpdateResumeUnit = "cabpi-kubernetes-update-resume.service"
	UpdateFinishUnit = "cabpi-kubernetes-update-finish.service"
)

// UpdateOwned are the paths an in-place update writes on a node of a sysext or binaries source:
// a user's file or snippet may not write them.
var UpdateOwned = []string{UpdateStateDir, SystemdUnitDir + "/" + UpdateResumeUnit, SystemdUnitDir + "/" + UpdateFinishUnit}

// KubeletHealthURL is the kubelet's health endpoint on the node.
const KubeletHealthURL = "http://127.0.0.1:10248/healthz"

// Arch is the spec's architecture, amd64 when unset.
func Arch(k cabpiv1.KubernetesSpec) cabpiv1.Architecture {
	if k.Arch == "" {
		return cabpiv1.ArchitectureAMD64
	}
	return k.Arch
}

// sysextArchNames are the architectures as the sysext bakery names them in its images.
var sysextArchNames = map[cabpiv1.Architecture]string{
	cabpiv1.ArchitectureAMD64: "x86-64",
	cabpiv1.ArchitectureARM64: "arm64",
}

// SysextImageName is the file name of the Kubernetes system extension image of version for arch
// in the bakery's layout: kubernetes-v1.34.4-x86-64.raw.
func SysextImageName(version string, arch cabpiv1.Architecture) string {
	return fmt.Sprintf("kubernetes-%s-%s.raw", version, sysextArchNames[arch])
}

// ParseSysextImageName reads a name of SysextImageName's form; ok is false for any other name.
func ParseSysextImageName(name string) (version string, arch cabpiv1.Architecture, ok bool) {
	rest, prefixed := strings.CutPrefix(name, "kubernetes-")
	rest, suffixed := strings.CutSuffix(rest, ".raw")
	if !prefixed || !suffixed {
		return "", "", false
	}
	for a, n := range sysextArchNames {
		if v, isArch := strings.CutSuffix(rest, "-"+n); isArch && v != "" {
			return v, a, true
		}
	}
	return "", "", false
}

// JoinURL appends path elements to base.
func JoinURL(base string, elem ...string) string {
	return strings.TrimRight(base, "/") + "/" + strings.Join(elem, "/")
}

// Sysext is where a sysext node's Kubernetes of one version comes from and goes.
type Sysext struct {
	// BaseURL is the mirror (spec.kubernetes.sysext.baseURL, else the bakery).
	BaseURL string
	// Image is the image's file name; ImageURL where it is downloaded from, ImagePath where it
	// is kept on the node (SysextLink points at it).
	Image, ImageURL, ImagePath string
	// Transfer is systemd-sysupdate's transfer file for the version's minor (patch releases
	// only), TransferURL where the mirror publishes it, TransferPath where the node keeps it.
	Transfer, TransferURL, TransferPath string
	// NoopURL is the mirror's noop.conf, which keeps systemd-sysupdate's default component
	// (the OS) out of the Kubernetes component's runs.
	NoopURL string
}

// SysextFor is k's sysext layout for version (a release: vMAJOR.MINOR.PATCH).
func SysextFor(k cabpiv1.KubernetesSpec, version string) (Sysext, error) {
	ver, err := semver.ParseTolerant(version)
	if err != nil {
		return Sysext{}, fmt.Errorf("version %q: %w", version, err)
	}
	base := cabpiv1.DefaultSysextBaseURL
	if k.Sysext != nil && k.Sysext.BaseURL != "" {
		base = k.Sysext.BaseURL
	}
	image := SysextImageName(version, Arch(k))
	transfer := fmt.Sprintf("kubernetes-v%d.%d.conf", ver.Major, ver.Minor)
	return Sysext{
		BaseURL: base,
		Image:   image, ImageURL: JoinURL(base, image), ImagePath: SysextDir + "/" + image,
		Transfer: transfer, TransferURL: JoinURL(base, "kubernetes", transfer), TransferPath: SysupdateConfDir + "/" + transfer,
		NoopURL: JoinURL(base, "noop.conf"),
	}, nil
}

// Binaries is where a binaries node's Kubernetes of one version comes from.
type Binaries struct {
	// BaseURL is the release layout's root (spec.kubernetes.binaries.baseURL, else dl.k8s.io's).
	BaseURL string
	// DirURL is the version's directory of binaries for the architecture.
	DirURL string
	// Names are the binaries: kubeadm and kubelet, and kubectl when asked for.
	Names []string
}

// BinariesFor is k's release-binaries layout for version.
func BinariesFor(k cabpiv1.KubernetesSpec, version string) Binaries {
	b := Binaries{BaseURL: cabpiv1.DefaultBinariesBaseURL, Names: []string{"kubeadm", "kubelet"}}
	if k.Binaries != nil {
		if k.Binaries.BaseURL != "" {
			b.BaseURL = k.Binaries.BaseURL
		}
		if k.Binaries.Kubectl {
			b.Names = append(b.Names, "kubectl")
		}
	}
	b.DirURL = JoinURL(b.BaseURL, version, "bin", "linux", string(Arch(k)))
	return b
}

// URL is where the binary name is downloaded from.
func (b Binaries) URL(name string) string { return JoinURL(b.DirURL, name) }
