package nodelayout

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// Where each source's files come from and go: the bakery's layout and the release layout, at
// the same places for first boot and the in-place update.
func TestLayouts(t *testing.T) {
	const bakery = cabpiv1.DefaultSysextBaseURL
	l, err := SysextFor(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}, "v1.34.4")
	require.NoError(t, err)
	assert.Equal(t, Sysext{BaseURL: bakery, Image: "kubernetes-v1.34.4-x86-64.raw", ImageURL: bakery + "/kubernetes-v1.34.4-x86-64.raw",
		ImagePath: "/opt/extensions/kubernetes/kubernetes-v1.34.4-x86-64.raw", SumsURL: bakery + "/kubernetes/SHA256SUMS",
		Transfer: "kubernetes-v1.34.conf", TransferURL: bakery + "/kubernetes/kubernetes-v1.34.conf",
		TransferPath: "/etc/sysupdate.kubernetes.d/kubernetes-v1.34.conf", NoopURL: bakery + "/noop.conf"}, l)
	l, err = SysextFor(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Arch: cabpiv1.ArchitectureARM64,
		Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/ext/"}}, "v1.33.2")
	require.NoError(t, err)
	assert.Equal(t, "https://mirror.example/ext/kubernetes-v1.33.2-arm64.raw", l.ImageURL)
	assert.Equal(t, "https://mirror.example/ext/kubernetes/SHA256SUMS", l.SumsURL)
	_, err = SysextFor(cabpiv1.KubernetesSpec{}, "latest")
	assert.Error(t, err)

	b := BinariesFor(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries}, "v1.34.4")
	assert.Equal(t, []string{"kubeadm", "kubelet"}, b.Names)
	assert.Equal(t, cabpiv1.DefaultBinariesBaseURL+"/v1.34.4/bin/linux/amd64/kubelet", b.URL("kubelet"))
	b = BinariesFor(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Arch: cabpiv1.ArchitectureARM64,
		Binaries: &cabpiv1.BinariesSource{BaseURL: "http://mirror.example:8080/release", Kubectl: true}}, "v1.35.0-rc.1")
	assert.Equal(t, []string{"kubeadm", "kubelet", "kubectl"}, b.Names)
	assert.Equal(t, "http://mirror.example:8080/release/v1.35.0-rc.1/bin/linux/arm64/kubectl", b.URL("kubectl"))

	v, arch, ok := ParseSysextImageName("kubernetes-v1.34.4-arm64.raw")
	assert.True(t, ok)
	assert.Equal(t, "v1.34.4", v)
	assert.Equal(t, cabpiv1.ArchitectureARM64, arch)
	_, _, ok = ParseSysextImageName("kubernetes.raw")
	assert.False(t, ok)
}

func TestDigests(t *testing.T) {
	const sum = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	list := []byte("ffff  other.raw\n" + sum + " *kubernetes-v1.34.4-x86-64.raw\n")
	got, err := DigestInList(list, "kubernetes-v1.34.4-x86-64.raw")
	require.NoError(t, err)
	assert.Equal(t, sum, got)
	_, err = DigestInList(list, "kubernetes-v1.34.5-x86-64.raw")
	var de *DigestError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, err.Error(), "does not match its published SHA-256 (the digest list has no entry for it)")
	_, err = DigestInList([]byte("nothex  other.raw\n"), "other.raw")
	assert.Error(t, err, "an entry that is no digest")

	got, err = DigestInFile([]byte(sum+"  kubelet\n"), "kubelet")
	require.NoError(t, err)
	assert.Equal(t, sum, got)
	_, err = DigestInFile([]byte("<html>not found</html>"), "kubelet")
	require.ErrorAs(t, err, &de)

	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, []byte("hello\n"), 0o600))
	require.NoError(t, VerifyFile(file, "f", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"))
	err = VerifyFile(file, "f", sum)
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "f does not match its published SHA-256 ("+sum+")", err.Error())
}

func TestVersions(t *testing.T) {
	require.NoError(t, CheckVersions("v1.34.4\n", "Kubernetes v1.34.4\n", "v1.34.4"))
	err := CheckVersions("v1.34.4", "Kubernetes v1.33.13", "v1.34.4")
	var ve *VersionError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "found kubeadm v1.34.4 and kubelet v1.33.13, the Machine has v1.34.4", err.Error())
	assert.Equal(t, "v1.34.4", KubectlVersion("Client Version: v1.34.4\nKustomize Version: v5.7.1\n"))
	assert.Empty(t, KubectlVersion("error"))
}
