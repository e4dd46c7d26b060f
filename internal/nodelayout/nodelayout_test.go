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

package nodelayout

import (
	"os"
	"path/filepath"
	"strings"
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
		ImagePath: "/opt/extensions/kubernetes/kubernetes-v1.34.4-x86-64.raw",
		Transfer:  "kubernetes-v1.34.conf", TransferURL: bakery + "/kubernetes/kubernetes-v1.34.conf",
		TransferPath: "/etc/sysupdate.kubernetes.d/kubernetes-v1.34.conf", NoopURL: bakery + "/noop.conf"}, l)
	l, err = SysextFor(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Arch: cabpiv1.ArchitectureARM64,
		Sysext: &cabpiv1.SysextSource{BaseURL: "https://mirror.example/ext/"}}, "v1.33.2")
	require.NoError(t, err)
	assert.Equal(t, "https://mirror.example/ext/kubernetes-v1.33.2-arm64.raw", l.ImageURL)
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
	var de *DigestError
	assert.True(t, IsSHA256(sum))
	assert.False(t, IsSHA256(sum[1:]))
	assert.False(t, IsSHA256(strings.ToUpper(sum)))

	file := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(file, []byte("hello\n"), 0o600))
	require.NoError(t, VerifyFile(file, "f", "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"))
	err := VerifyFile(file, "f", sum)
	require.ErrorAs(t, err, &de)
	assert.Equal(t, "f does not match its pinned SHA-256 ("+sum+")", err.Error())
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
