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

package ignition_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/golden"

	ignconfig "github.com/coreos/ignition/v2/config"
	exptypes "github.com/coreos/ignition/v2/config/v3_7_experimental/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	"mvdan.cc/sh/v3/syntax"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// The sources as the spec names them, and the release the outputs are checked at.
const (
	sysext      = cabpiv1.KubernetesSourceSysext
	binaries    = cabpiv1.KubernetesSourceBinaries
	k8sRelease  = "v1.34.4"
	sysextImage = "/opt/extensions/kubernetes/kubernetes-v1.34.4-x86-64.raw"
	stageDir    = "/opt/cabpi/kubernetes/v1.34.4"
	releaseURL  = "https://dl.k8s.io/release/v1.34.4/bin/linux/amd64/"
)

// kubernetesWorker is a worker join of version with spec.kubernetes k, edited by the mutations.
func kubernetesWorker(variant cabpiv1.Variant, version string, k cabpiv1.KubernetesSpec, mutate ...func(*ignition.Input)) ignition.Input {
	in := joinInput(variant, version)
	in.Kubernetes = k
	for _, m := range mutate {
		m(&in)
	}
	return in
}

func withFiles(files ...ignition.File) func(*ignition.Input) {
	return func(in *ignition.Input) { in.Files = files }
}

// withDigests adds user's digests (spec.kubernetes.digestsFrom) to the test's.
func withDigests(user nodelayout.Digests) func(*ignition.Input) {
	return func(in *ignition.Input) {
		for p, sum := range user {
			in.KubernetesDigests.User[p] = sum
		}
	}
}

func withButane(doc string) func(*ignition.Input) {
	return func(in *ignition.Input) { in.Butane = doc }
}

// kubeletUnit is a flatcar snippet with one entry for kubelet.service, body indented under it.
func kubeletUnit(body string) string {
	return "variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: kubelet.service\n" + body
}

// snippetFile is a flatcar snippet writing one file at path.
func snippetFile(path string) string {
	return "variant: flatcar\nversion: 1.0.0\nstorage:\n  files:\n    - path: " + path + "\n      contents:\n        inline: x\n"
}

// samePlace compares places by what callers switch on: the part, the entry and the member path.
func samePlace(t *testing.T, want, got ignition.Place, msg string) {
	t.Helper()
	assert.Equal(t, want.Part, got.Part, "part: %s", msg)
	assert.Equal(t, want.Index, got.Index, "index: %s", msg)
	assert.Equal(t, want.Names(), got.Names(), "path: %s", msg)
}

// spec.kubernetes that the renderer refuses, with the kind and the exact place: the field at
// fault (the admission webhook turns it into spec.kubernetes.<names>), the owner's version, or
// the user's file or snippet that writes what the source owns.
func TestKubernetesRejects(t *testing.T) {
	fileAt := func(path string) func(*ignition.Input) {
		return withFiles(ignition.File{Path: path, Content: []byte("x")})
	}
	sysextAt := ignition.At(ignition.PartKubernetes, ignition.KubernetesSysext)
	binariesAt := ignition.At(ignition.PartKubernetes, ignition.KubernetesBinaries)
	sysextBase := ignition.At(ignition.PartKubernetes, ignition.KubernetesSysext, ignition.KubernetesBaseURL)
	binariesBase := ignition.At(ignition.PartKubernetes, ignition.KubernetesBinaries, ignition.KubernetesBaseURL)
	digestsAt := ignition.At(ignition.PartKubernetes, ignition.KubernetesDigestsFrom)
	versionAt := ignition.At(ignition.PartKubernetesVersion)
	butaneAt := ignition.At(ignition.PartButane)
	file0 := ignition.Entry(ignition.PartFile, 0, ignition.FilePath)

	cases := []struct {
		name string
		in   ignition.Input
		kind ignition.ErrorKind
		at   ignition.Place
		// contains is a user-facing property of the message (the field or value it names), "" for none.
		contains string
	}{
		{"unknown source", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{Source: "docker"}),
			ignition.ErrInvalidInput, ignition.At(ignition.PartKubernetes, ignition.KubernetesSource), `"docker"`},
		{"unknown arch", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{Source: binaries, Arch: "riscv64"}),
			ignition.ErrInvalidInput, ignition.At(ignition.PartKubernetes, ignition.KubernetesArch), `"riscv64"`},
		{"unknown arch with source image", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{Arch: "x86_64"}),
			ignition.ErrInvalidInput, ignition.At(ignition.PartKubernetes, ignition.KubernetesArch), `"x86_64"`},

		// A source's section only with that source.
		{"sysext with source binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Sysext: &cabpiv1.SysextSource{}}),
			ignition.ErrInvalidInput, sysextAt, "sysext"},
		{"sysext with source image (unset)", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Sysext: &cabpiv1.SysextSource{Sysupdate: true}}),
			ignition.ErrInvalidInput, sysextAt, "image"},
		{"sysext with source image (explicit)", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceImage, Sysext: &cabpiv1.SysextSource{}}),
			ignition.ErrInvalidInput, sysextAt, "image"},
		{"binaries with source sysext", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Binaries: &cabpiv1.BinariesSource{Kubectl: true}}),
			ignition.ErrInvalidInput, binariesAt, "binaries"},
		{"binaries with source image", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease,
			cabpiv1.KubernetesSpec{Binaries: &cabpiv1.BinariesSource{}}),
			ignition.ErrInvalidInput, binariesAt, "binaries"},

		// Base URLs Ignition can fetch from, with the layout's paths appended.
		{"sysext baseURL ftp", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "ftp://mirror.example/ext"}}),
			ignition.ErrInvalidInput, sysextBase, "ftp://mirror.example/ext"},
		{"sysext baseURL without scheme", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "mirror.example/ext"}}),
			ignition.ErrInvalidInput, sysextBase, ""},
		{"sysext baseURL without host", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "https:///ext"}}),
			ignition.ErrInvalidInput, sysextBase, ""},
		{"sysext baseURL with a query", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/ext?sig=x"}}),
			ignition.ErrInvalidInput, sysextBase, ""},
		{"sysext baseURL not a URL", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/%zz"}}),
			ignition.ErrInvalidInput, sysextBase, ""},
		{"binaries baseURL ftp", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "ftp://x"}}),
			ignition.ErrInvalidInput, binariesBase, "ftp://x"},
		{"binaries baseURL without host", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "http://"}}),
			ignition.ErrInvalidInput, binariesBase, ""},
		{"binaries baseURL with a query", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "https://mirror.example/release?x=1"}}),
			ignition.ErrInvalidInput, binariesBase, ""},
		{"binaries baseURL with a fragment", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "https://mirror.example/release#x"}}),
			ignition.ErrInvalidInput, binariesBase, ""},
		{"binaries baseURL with user info", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "https://user:pw@mirror.example/release"}}),
			ignition.ErrInvalidInput, binariesBase, ""},

		// The bakery's images are Flatcar's.
		{"fcos sysext without a section", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease, cabpiv1.KubernetesSpec{Source: sysext}),
			ignition.ErrInvalidInput, sysextBase, "Flatcar"},
		{"fcos sysext without baseURL", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{Sysupdate: true}}),
			ignition.ErrInvalidInput, sysextBase, "Flatcar"},

		// Versions the source's layout does not have.
		{"sysext pre-release", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.34.0-rc.1", cabpiv1.KubernetesSpec{Source: sysext}),
			ignition.ErrUnsupportedKubernetesVersion, versionAt, "v1.34.0-rc.1"},
		{"sysext build metadata", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.34.0+vendor.1", cabpiv1.KubernetesSpec{Source: sysext}),
			ignition.ErrUnsupportedKubernetesVersion, versionAt, "v1.34.0+vendor.1"},
		{"sysext without the v", kubernetesWorker(cabpiv1.VariantFlatcar, "1.34.4", cabpiv1.KubernetesSpec{Source: sysext}),
			ignition.ErrUnsupportedKubernetesVersion, versionAt, "1.34.4"},
		{"binaries build metadata", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.34.0+vendor.1", cabpiv1.KubernetesSpec{Source: binaries}),
			ignition.ErrUnsupportedKubernetesVersion, versionAt, "v1.34.0+vendor.1"},
		{"binaries without the v", kubernetesWorker(cabpiv1.VariantFCOS, "1.34.4", cabpiv1.KubernetesSpec{Source: binaries}),
			ignition.ErrUnsupportedKubernetesVersion, versionAt, "1.34.4"},

		// What the source writes is the provider's.
		{"file at /opt/bin/kubeadm with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, fileAt("/opt/bin/kubeadm")),
			ignition.ErrOwnedPathConflict, file0, "/opt/bin/kubeadm"},
		{"file at /opt/bin/kubectl with binaries and kubectl", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{Kubectl: true}}, fileAt("/opt/bin/kubectl")),
			ignition.ErrOwnedPathConflict, file0, "/opt/bin/kubectl"},
		{"file in the staging directory", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, fileAt(stageDir+"/kubelet.sha256")),
			ignition.ErrOwnedPathConflict, file0, ""},
		{"file at the kubelet's unit with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, fileAt("/etc/systemd/system/kubelet.service")),
			ignition.ErrOwnedPathConflict, file0, ""},
		{"file at kubeadm's kubelet drop-in with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, fileAt("/etc/systemd/system/kubelet.service.d/10-kubeadm.conf")),
			ignition.ErrOwnedPathConflict, file0, ""},
		{"file at the extension link with sysext", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext}, fileAt("/etc/extensions/kubernetes.raw")),
			ignition.ErrOwnedPathConflict, file0, ""},
		{"file in the extension directory with sysext", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext}, fileAt("/opt/extensions/kubernetes/kubernetes-v1.33.0-x86-64.raw")),
			ignition.ErrOwnedPathConflict, file0, ""},
		{"file at the noop sysupdate config with sysupdate", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{Sysupdate: true}}, fileAt("/etc/sysupdate.d/noop.conf")),
			ignition.ErrOwnedPathConflict, file0, ""},
		{"file at the sysupdate script with sysupdate", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{Sysupdate: true}}, fileAt("/etc/cabpi/sysupdate-kubernetes.sh")),
			ignition.ErrOwnedPathConflict, file0, ""},
		{"snippet writes the extension link with sysext", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext}, withButane(snippetFile("/etc/extensions/kubernetes.raw"))),
			ignition.ErrOwnedPathConflict, butaneAt, "/etc/extensions/kubernetes.raw"},
		{"snippet links the extension with sysext", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext}, withButane("variant: flatcar\nversion: 1.0.0\nstorage:\n  links:\n"+
				"    - path: /etc/extensions/kubernetes.raw\n      target: /opt/extensions/kubernetes/other.raw\n")),
			ignition.ErrOwnedPathConflict, butaneAt, "/etc/extensions/kubernetes.raw"},
		{"snippet writes /opt/bin/kubelet with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, withButane(snippetFile("/opt/bin/kubelet"))),
			ignition.ErrOwnedPathConflict, butaneAt, "/opt/bin/kubelet"},
		{"snippet writes the sysupdate drop-in with sysupdate", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{Sysupdate: true}},
			withButane("variant: flatcar\nversion: 1.0.0\nsystemd:\n  units:\n    - name: systemd-sysupdate.service\n"+
				"      dropins:\n        - name: kubernetes.conf\n          contents: \"[Service]\\n\"\n")),
			ignition.ErrOwnedPathConflict, butaneAt, "kubernetes.conf"},
		{"snippet sets the contents of kubelet.service with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, withButane(kubeletUnit("      contents: \"[Service]\\nExecStart=/usr/bin/kubelet\\n\"\n"))),
			ignition.ErrOwnedPathConflict, butaneAt, "kubelet.service"},
		{"snippet masks kubelet.service with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, withButane(kubeletUnit("      mask: true\n"))),
			ignition.ErrOwnedPathConflict, butaneAt, "kubelet.service"},
		// Digests that do not come from the mirror (docs/adr/046): what runs must be pinned.
		{"sysext image with no digest", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.34.3", cabpiv1.KubernetesSpec{Source: sysext}),
			ignition.ErrKubernetesDigestUnknown, digestsAt, "kubernetes-v1.34.3-x86-64.raw of v1.34.3"},
		{"binaries of a release newer than the catalogue", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.99.0", cabpiv1.KubernetesSpec{Source: binaries}),
			ignition.ErrKubernetesDigestUnknown, digestsAt, "v1.99.0/bin/linux/amd64/kubeadm, v1.99.0/bin/linux/amd64/kubelet"},
		{"a pre-release's kubectl with no digest", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.35.0-rc.1",
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{Kubectl: true}}, withDigests(preReleaseDigests)),
			ignition.ErrKubernetesDigestUnknown, digestsAt, "spec.kubernetes.digestsFrom"},
		{"http with sysupdate's files unpinned", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "http://10.0.0.5/ext", Sysupdate: true}}),
			ignition.ErrInvalidInput, sysextBase, "kubernetes/kubernetes-v1.34.conf, noop.conf have no digest"},
		{"pinned Ignition 3.0.0 with pinned downloads", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease, cabpiv1.KubernetesSpec{Source: binaries},
			func(in *ignition.Input) { in.IgnitionVersion = "3.0.0" }),
			ignition.ErrUnsupportedIgnitionVersion, ignition.At(ignition.PartIgnitionVersion), "verification.hash"},

		{"snippet replaces kubeadm's kubelet drop-in with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, withButane(kubeletUnit("      dropins:\n        - name: 10-kubeadm.conf\n          contents: \"[Service]\\n\"\n"))),
			ignition.ErrOwnedPathConflict, butaneAt, "10-kubeadm.conf"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { requireRefused(t, tc.in, tc.kind, tc.at, tc.contains) })
	}
}

// requireRefused renders in and requires its first finding to be of kind at the place, its
// message containing contains, and no data.
func requireRefused(t *testing.T, in ignition.Input, kind ignition.ErrorKind, at ignition.Place, contains string) {
	t.Helper()
	out, err := ignition.Render(in)
	require.Error(t, err)
	assert.Nil(t, out.Data, "no data on error")
	var ierr *ignition.Error
	require.ErrorAs(t, err, &ierr, "input errors are *ignition.Error: %v", err)
	assert.Equal(t, kind, ierr.Kind, err.Error())
	samePlace(t, at, ierr.Place, err.Error())
	assert.Contains(t, ierr.Error(), contains)
}

// Inputs close to the refused ones render: a version only one source's layout lacks is fine
// with the others, a path is the source's only when that source (and option) writes it, and the
// kubelet's unit may get the user's drop-ins.
func TestKubernetesAcceptsNearMisses(t *testing.T) {
	cases := []struct {
		name string
		in   ignition.Input
	}{
		{"binaries pre-release", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.35.0-rc.1", cabpiv1.KubernetesSpec{Source: binaries}, withDigests(preReleaseDigests))},
		{"http with sysupdate's files pinned too", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "http://10.0.0.5/ext", Sysupdate: true}},
			withDigests(nodelayout.Digests{"kubernetes/kubernetes-v1.34.conf": strings.Repeat("3", 64), "noop.conf": strings.Repeat("4", 64)}))},
		{"http binaries, pinned by the catalogue", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "http://10.0.0.5/release"}})},
		{"image build metadata", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.34.0+vendor.1", cabpiv1.KubernetesSpec{})},
		{"image pre-release", kubernetesWorker(cabpiv1.VariantFlatcar, "v1.34.0-rc.1", cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceImage})},
		{"image arm64", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease, cabpiv1.KubernetesSpec{Arch: cabpiv1.ArchitectureARM64})},
		{"fcos sysext from a mirror", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "http://mirror.example:8080/fcos"}})},
		{"fcos binaries", kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease, cabpiv1.KubernetesSpec{Source: binaries})},
		{"flatcar sysext with an empty section", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{}})},
		{"binaries with an empty section", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{}})},
		{"file at /opt/bin/kubeadm with source image", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{}, withFiles(ignition.File{Path: "/opt/bin/kubeadm", Content: []byte("x"), Mode: 0o755}))},
		{"file at /opt/bin/kubeadm with sysext", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext}, withFiles(ignition.File{Path: "/opt/bin/kubeadm", Content: []byte("x"), Mode: 0o755}))},
		{"file at /opt/bin/kubectl with binaries without kubectl", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, withFiles(ignition.File{Path: "/opt/bin/kubectl", Content: []byte("x"), Mode: 0o755}))},
		{"another tool in /opt/bin with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, withButane(snippetFile("/opt/bin/crictl")))},
		{"snippet writes the noop sysupdate config without sysupdate", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext}, withButane(snippetFile("/etc/sysupdate.d/noop.conf")))},
		{"snippet writes the extension link with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries}, withButane(snippetFile("/etc/extensions/kubernetes.raw")))},
		{"snippet adds a drop-in to kubelet.service with binaries", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: binaries},
			withButane(kubeletUnit("      dropins:\n        - name: 20-extra.conf\n          contents: \"[Service]\\nEnvironment=KUBELET_EXTRA_ARGS=--v=2\\n\"\n")))},
		{"snippet sets the contents of kubelet.service with sysext", kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
			cabpiv1.KubernetesSpec{Source: sysext}, withButane(kubeletUnit("      contents: \"[Service]\\nExecStart=/usr/bin/kubelet\\n\"\n")))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := ignition.Render(tc.in)
			require.NoError(t, err)
			_, rpt, err := ignconfig.Parse(out.Data)
			require.NoError(t, err, rpt.String())
			assert.Empty(t, rpt.Entries, "Ignition reports on the rendered config")
		})
	}
}

// A user's drop-in for the kubelet is merged beside kubeadm's: the unit keeps the provider's
// contents, and both drop-ins are written.
func TestKubeletDropinMergesWithBinaries(t *testing.T) {
	in := kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{Source: binaries},
		withButane(kubeletUnit("      dropins:\n        - name: 20-extra.conf\n          contents: \"[Service]\\nEnvironment=X=1\\n\"\n")))
	cfg, _ := renderKubernetes(t, in)
	u := unitNamed(t, cfg, "kubelet.service")
	require.NotNil(t, u.Contents)
	assert.Contains(t, *u.Contents, "ExecStart=/opt/bin/kubelet\n")
	var names []string
	for _, d := range u.Dropins {
		names = append(names, d.Name)
	}
	assert.ElementsMatch(t, []string{"10-kubeadm.conf", "20-extra.conf"}, names)
}

// remoteFile is a file Ignition downloads at boot, as the outputs are checked: hash is its
// verification.hash, "" for none.
type remoteFile struct {
	source string
	mode   int
	hash   string
}

// imageHash is the verification.hash of a system extension image of testDigests.
func imageHash(name string) string { return "sha256-" + testDigests().User[name] }

// preReleaseDigests are a user's digests of a pre-release's binaries, which cabpi's catalogue
// does not have.
var preReleaseDigests = nodelayout.Digests{
	"v1.35.0-rc.1/bin/linux/amd64/kubeadm": strings.Repeat("1", 64),
	"v1.35.0-rc.1/bin/linux/amd64/kubelet": strings.Repeat("2", 64),
}

// What each source adds to the config: the files Ignition downloads (all of them, with their
// sources and modes), the extension's link, the units, the bootstrap's step before kubeadm, and
// with sysupdate the bakery's systemd-sysupdate configuration.
func TestKubernetesOutputs(t *testing.T) {
	const bakery = "https://extensions.flatcar.org/extensions/"
	stage := func(version, arch, base string, names ...string) map[string]remoteFile {
		out := map[string]remoteFile{}
		for _, n := range names {
			rel := version + "/bin/linux/" + arch + "/" + n
			sum, ok := nodelayout.CatalogueDigest(rel)
			if !ok {
				sum = preReleaseDigests[rel]
			}
			out["/opt/cabpi/kubernetes/"+version+"/"+n] = remoteFile{base + rel, 0o644, "sha256-" + sum}
		}
		return out
	}
	cases := []struct {
		name string
		in   ignition.Input
		// remote is every file Ignition downloads.
		remote map[string]remoteFile
		// link is the target of /etc/extensions/kubernetes.raw, "" for no link.
		link string
		// call is the bootstrap's step, a line of its own before the user's commands and kubeadm.
		call      string
		sysupdate map[string]remoteFile // the bakery's sysupdate files; nil: sysupdate is off
	}{
		{
			name:   "sysext default",
			in:     kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{Source: sysext}),
			remote: map[string]remoteFile{sysextImage: {bakery + "kubernetes-v1.34.4-x86-64.raw", 0o644, imageHash("kubernetes-v1.34.4-x86-64.raw")}},
			link:   sysextImage,
			call:   "cabpi_use_sysext v1.34.4",
		},
		{
			name: "sysext arm64",
			in:   kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{Source: sysext, Arch: cabpiv1.ArchitectureARM64}),
			remote: map[string]remoteFile{
				"/opt/extensions/kubernetes/kubernetes-v1.34.4-arm64.raw": {bakery + "kubernetes-v1.34.4-arm64.raw", 0o644, imageHash("kubernetes-v1.34.4-arm64.raw")},
			},
			link: "/opt/extensions/kubernetes/kubernetes-v1.34.4-arm64.raw",
			call: "cabpi_use_sysext v1.34.4",
		},
		{
			name: "sysext from a mirror with a trailing slash, on fcos",
			in: kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease,
				cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/ext/"}}),
			remote: map[string]remoteFile{sysextImage: {"https://mirror.example/ext/kubernetes-v1.34.4-x86-64.raw", 0o644, imageHash("kubernetes-v1.34.4-x86-64.raw")}},
			link:   sysextImage,
			call:   "cabpi_use_sysext v1.34.4",
		},
		{
			name: "sysext with sysupdate",
			in: kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
				cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{Sysupdate: true}}),
			remote: map[string]remoteFile{sysextImage: {bakery + "kubernetes-v1.34.4-x86-64.raw", 0o644, imageHash("kubernetes-v1.34.4-x86-64.raw")}},
			link:   sysextImage,
			call:   "cabpi_use_sysext v1.34.4",
			sysupdate: map[string]remoteFile{
				"/etc/sysupdate.kubernetes.d/kubernetes-v1.34.conf": {bakery + "kubernetes/kubernetes-v1.34.conf", 0o644, ""},
				"/etc/sysupdate.d/noop.conf":                        {bakery + "noop.conf", 0o644, ""},
			},
		},
		{
			name: "sysext with sysupdate from a mirror",
			in: kubernetesWorker(cabpiv1.VariantFlatcar, "v1.33.10",
				cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/ext//", Sysupdate: true}}),
			remote: map[string]remoteFile{
				"/opt/extensions/kubernetes/kubernetes-v1.33.10-x86-64.raw": {"https://mirror.example/ext/kubernetes-v1.33.10-x86-64.raw", 0o644, imageHash("kubernetes-v1.33.10-x86-64.raw")},
			},
			link: "/opt/extensions/kubernetes/kubernetes-v1.33.10-x86-64.raw",
			call: "cabpi_use_sysext v1.33.10",
			sysupdate: map[string]remoteFile{
				"/etc/sysupdate.kubernetes.d/kubernetes-v1.33.conf": {"https://mirror.example/ext/kubernetes/kubernetes-v1.33.conf", 0o644, ""},
				"/etc/sysupdate.d/noop.conf":                        {"https://mirror.example/ext/noop.conf", 0o644, ""},
			},
		},
		{
			name:   "binaries default",
			in:     kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease, cabpiv1.KubernetesSpec{Source: binaries}),
			remote: stage(k8sRelease, "amd64", "https://dl.k8s.io/release/", "kubeadm", "kubelet"),
			call:   "cabpi_install_binaries v1.34.4 /opt/cabpi/kubernetes/v1.34.4 kubeadm kubelet",
		},
		{
			name: "binaries with kubectl, arm64, on fcos",
			in: kubernetesWorker(cabpiv1.VariantFCOS, k8sRelease, cabpiv1.KubernetesSpec{Source: binaries, Arch: cabpiv1.ArchitectureARM64,
				Binaries: &cabpiv1.BinariesSource{Kubectl: true}}),
			remote: stage(k8sRelease, "arm64", "https://dl.k8s.io/release/", "kubeadm", "kubelet", "kubectl"),
			call:   "cabpi_install_binaries v1.34.4 /opt/cabpi/kubernetes/v1.34.4 kubeadm kubelet kubectl",
		},
		{
			name: "binaries from a mirror with a trailing slash",
			in: kubernetesWorker(cabpiv1.VariantFlatcar, k8sRelease,
				cabpiv1.KubernetesSpec{Source: binaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "http://10.0.0.5:8080/k8s/"}}),
			remote: stage(k8sRelease, "amd64", "http://10.0.0.5:8080/k8s/", "kubeadm", "kubelet"),
			call:   "cabpi_install_binaries v1.34.4 /opt/cabpi/kubernetes/v1.34.4 kubeadm kubelet",
		},
		{
			name: "binaries pre-release",
			in: kubernetesWorker(cabpiv1.VariantFlatcar, "v1.35.0-rc.1", cabpiv1.KubernetesSpec{Source: binaries},
				withDigests(preReleaseDigests)),
			remote: stage("v1.35.0-rc.1", "amd64", "https://dl.k8s.io/release/", "kubeadm", "kubelet"),
			call:   "cabpi_install_binaries v1.35.0-rc.1 /opt/cabpi/kubernetes/v1.35.0-rc.1 kubeadm kubelet",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.PreKubeadmCommands = []string{"echo pre"}
			cfg, out := renderKubernetes(t, tc.in)

			// Every downloaded file: where from, not executable, replacing what is there.
			want := map[string]remoteFile{}
			for p, f := range tc.remote {
				want[p] = f
			}
			for p, f := range tc.sysupdate {
				want[p] = f
			}
			got := map[string]remoteFile{}
			for _, f := range cfg.Storage.Files {
				if f.Contents.Source == nil || strings.HasPrefix(*f.Contents.Source, "data:") {
					continue
				}
				require.NotNil(t, f.Mode, f.Path)
				got[f.Path] = remoteFile{*f.Contents.Source, *f.Mode, ptr.Deref(f.Contents.Verification.Hash, "")}
				assert.True(t, f.Overwrite != nil && *f.Overwrite, "%s is written over what is there", f.Path)
				assert.Nil(t, f.Contents.Compression, f.Path)
				_, afterScheme, _ := strings.Cut(*f.Contents.Source, "://")
				assert.NotContains(t, afterScheme, "//", "no empty path element in %s", *f.Contents.Source)
			}
			assert.Equal(t, want, got)

			var link *exptypes.Link
			for i := range cfg.Storage.Links {
				if cfg.Storage.Links[i].Path == "/etc/extensions/kubernetes.raw" {
					link = &cfg.Storage.Links[i]
				}
			}
			if tc.link == "" {
				assert.Nil(t, link, "no extension link")
				assert.Empty(t, cfg.Storage.Links)
			} else {
				require.NotNil(t, link, "the extension is linked from /etc/extensions")
				require.NotNil(t, link.Target)
				assert.Equal(t, tc.link, *link.Target)
				assert.False(t, link.Hard != nil && *link.Hard, "a symbolic link")
				assert.True(t, link.Overwrite != nil && *link.Overwrite)
			}

			// kubeadm.service waits for the merge of the extension, and only then.
			kubeadm := unitNamed(t, cfg, ignition.KubeadmUnitName)
			require.NotNil(t, kubeadm.Contents)
			if tc.link != "" {
				assert.Contains(t, *kubeadm.Contents, "\nWants=systemd-sysext.service\n")
				assert.Contains(t, *kubeadm.Contents, "\nAfter=systemd-sysext.service\n")
			} else {
				assert.NotContains(t, *kubeadm.Contents, "systemd-sysext")
			}

			// The step, once, after the header and before the user's commands and kubeadm.
			script := fileContent(t, out.Data, ignition.KubeadmScriptPath)
			assert.Equal(t, 1, strings.Count(script, "\n"+tc.call+"\n"), script)
			assertInOrder(t, script, "set -euo pipefail\n", "\n"+tc.call+"\n", "\necho pre\n", "\nkubeadm join --config /etc/kubeadm.yml")
			_, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(script), "kubeadm.sh")
			require.NoError(t, err, script)

			// The kubelet's unit is cabpi's with the binaries only, and left to the bootstrap
			// to enable once the binaries matched.
			kubelet := findUnit(cfg, "kubelet.service")
			if tc.in.Kubernetes.Source == binaries {
				require.NotNil(t, kubelet, "the kubelet's unit")
				require.NotNil(t, kubelet.Contents)
				assert.Contains(t, *kubelet.Contents, "\nExecStart=/opt/bin/kubelet\n")
				assert.Nil(t, kubelet.Enabled, "not enabled by Ignition: the bootstrap enables it after the check")
				assert.False(t, kubelet.Mask != nil && *kubelet.Mask)
				require.Len(t, kubelet.Dropins, 1)
				assert.Equal(t, "10-kubeadm.conf", kubelet.Dropins[0].Name)
				require.NotNil(t, kubelet.Dropins[0].Contents)
				assert.Contains(t, *kubelet.Dropins[0].Contents,
					"\nExecStart=\nExecStart=/opt/bin/kubelet $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS\n")
				assert.Contains(t, *kubelet.Dropins[0].Contents, "EnvironmentFile=-/var/lib/kubelet/kubeadm-flags.env\n")
			} else {
				assert.Nil(t, kubelet, "the extension brings the kubelet's unit")
			}

			// systemd-sysupdate for the minor, only when asked.
			timer, service := findUnit(cfg, "systemd-sysupdate.timer"), findUnit(cfg, "systemd-sysupdate.service")
			files, err := ignition.ReadFiles(out.Data)
			require.NoError(t, err)
			if tc.sysupdate != nil {
				require.NotNil(t, timer)
				assert.True(t, timer.Enabled != nil && *timer.Enabled, "the timer is enabled")
				assert.Nil(t, timer.Contents, "the image's timer")
				require.NotNil(t, service)
				assert.Nil(t, service.Contents, "the image's service")
				require.Len(t, service.Dropins, 1)
				assert.Equal(t, "kubernetes.conf", service.Dropins[0].Name)
				require.NotNil(t, service.Dropins[0].Contents)
				assert.Contains(t, *service.Dropins[0].Contents, "ExecStartPre=/bin/bash /etc/cabpi/sysupdate-kubernetes.sh\n")
				sysupdate, ok := files["/etc/cabpi/sysupdate-kubernetes.sh"]
				require.True(t, ok, "the sysupdate script")
				assert.Equal(t, 0o755, fileMode(t, cfg, "/etc/cabpi/sysupdate-kubernetes.sh"))
				assert.Contains(t, string(sysupdate), "/usr/lib/systemd/systemd-sysupdate --component=kubernetes update")
				assert.Contains(t, string(sysupdate), "touch /run/reboot-required")
			} else {
				assert.Nil(t, timer)
				assert.Nil(t, service)
				for p := range files {
					assert.NotContains(t, p, "sysupdate", "no sysupdate file without sysupdate")
				}
			}
		})
	}
}

// Source image, set or unset and with either arch, renders the very bytes of a spec without
// spec.kubernetes (the golden files of goldenCases hold those bytes).
func TestKubernetesSourceImageChangesNothing(t *testing.T) {
	for name, base := range goldenCases() {
		t.Run(name, func(t *testing.T) {
			want, err := ignition.Render(base)
			require.NoError(t, err)
			for _, k := range []cabpiv1.KubernetesSpec{
				{Source: cabpiv1.KubernetesSourceImage},
				{Arch: cabpiv1.ArchitectureARM64},
				{Source: cabpiv1.KubernetesSourceImage, Arch: cabpiv1.ArchitectureAMD64},
			} {
				in := base
				in.Kubernetes = k
				got, err := ignition.Render(in)
				require.NoError(t, err)
				assert.Equal(t, string(want.Data), string(got.Data), "%+v", k)
			}
		})
	}
}

// kubernetesGoldenCases are one render of each source that installs Kubernetes, kept as golden
// files beside goldenCases' (their remote files and drop-ins keep them out of goldenCases, whose
// tests apply the output offline and read it as CAPD does).
func kubernetesGoldenCases() map[string]ignition.Input {
	sysextInput := joinInput(cabpiv1.VariantFlatcar, k8sRelease)
	sysextInput.Kubernetes = cabpiv1.KubernetesSpec{Source: sysext, Sysext: &cabpiv1.SysextSource{Sysupdate: true}}
	binariesInput := initInput(cabpiv1.VariantFCOS, k8sRelease)
	binariesInput.Kubernetes = cabpiv1.KubernetesSpec{Source: binaries}
	return map[string]ignition.Input{
		"worker-flatcar-sysext-sysupdate-v1.34.4": sysextInput,
		"init-fcos-binaries-v1.34.4":              binariesInput,
	}
}

func TestKubernetesRenderGolden(t *testing.T) {
	for name, in := range kubernetesGoldenCases() {
		t.Run(name, func(t *testing.T) {
			out, err := ignition.Render(in)
			require.NoError(t, err)
			_, rpt, err := ignconfig.Parse(out.Data)
			require.NoError(t, err, rpt.String())
			assert.Empty(t, rpt.Entries, "Ignition reports on the rendered config")
			assert.Equal(t, out.SpecVersion, specVersion(t, out.Data))

			var pretty bytes.Buffer
			require.NoError(t, json.Indent(&pretty, out.Data, "", "  "))
			pretty.WriteByte('\n')
			golden.Assert(t, name+".json", pretty.Bytes())
		})
	}
}

// renderKubernetes renders in and parses it as a node would, without a report.
func renderKubernetes(t *testing.T, in ignition.Input) (exptypes.Config, ignition.Output) {
	t.Helper()
	out, err := ignition.Render(in)
	require.NoError(t, err)
	cfg, rpt, err := ignconfig.Parse(out.Data)
	require.NoError(t, err, rpt.String())
	assert.Empty(t, rpt.Entries, "Ignition reports on the rendered config")
	return cfg, out
}

func findUnit(cfg exptypes.Config, name string) *exptypes.Unit {
	for i := range cfg.Systemd.Units {
		if cfg.Systemd.Units[i].Name == name {
			return &cfg.Systemd.Units[i]
		}
	}
	return nil
}

func unitNamed(t *testing.T, cfg exptypes.Config, name string) *exptypes.Unit {
	t.Helper()
	u := findUnit(cfg, name)
	require.NotNil(t, u, "unit %s", name)
	return u
}

func fileMode(t *testing.T, cfg exptypes.Config, path string) int {
	t.Helper()
	for _, f := range cfg.Storage.Files {
		if f.Path == path {
			require.NotNil(t, f.Mode, path)
			return *f.Mode
		}
	}
	t.Fatalf("file not in config: %s", path)
	return 0
}

// The bakery's image names read back as what they were made of, and nothing else reads as one.
func TestSysextImageNameRoundTrip(t *testing.T) {
	for _, arch := range []cabpiv1.Architecture{cabpiv1.ArchitectureAMD64, cabpiv1.ArchitectureARM64} {
		for _, version := range []string{"v1.34.4", "${KUBERNETES_VERSION}"} {
			v, a, ok := ignition.ParseSysextImageName(ignition.SysextImageName(version, arch))
			require.True(t, ok, "%s %s", version, arch)
			assert.Equal(t, version, v)
			assert.Equal(t, arch, a)
		}
	}
	for _, name := range []string{"kubernetes-v1.34.4-amd64.raw", "kubernetes--x86-64.raw", "kubernetes-v1.34.4-x86-64.img",
		"docker-v1.34.4-x86-64.raw", "kubernetes.raw"} {
		_, _, ok := ignition.ParseSysextImageName(name)
		assert.False(t, ok, name)
	}
}
