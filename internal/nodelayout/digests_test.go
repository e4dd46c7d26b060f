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
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// The catalogue is facts of the public record: every digest well formed, every entry naming
// where it was read (a URL of a commit, not a branch), and every release listed with kubeadm,
// kubelet and kubectl for both architectures cabpi supports.
func TestCatalogue(t *testing.T) {
	entries, err := ParseCatalogue(catalogueData)
	require.NoError(t, err)
	require.NotEmpty(t, entries)
	perVersion := map[string]map[string]bool{}
	for _, e := range entries {
		assert.Regexp(t, `^[0-9a-f]{64}$`, e.Digest, e.Path)
		u, err := url.Parse(e.Source)
		if assert.NoError(t, err, e.Path) {
			assert.Equal(t, "https", u.Scheme, "%s: source %s", e.Path, e.Source)
			assert.Regexp(t, `/blob/[0-9a-f]{40}/`, u.Path, "%s: the source names a commit", e.Path)
		}
		parts := strings.Split(e.Path, "/")
		require.Len(t, parts, 5, e.Path)
		assert.Regexp(t, `^v1\.[0-9]+\.[0-9]+$`, parts[0], e.Path)
		assert.Equal(t, []string{"bin", "linux"}, parts[1:3], e.Path)
		if perVersion[parts[0]] == nil {
			perVersion[parts[0]] = map[string]bool{}
		}
		perVersion[parts[0]][parts[3]+"/"+parts[4]] = true
	}
	for v, files := range perVersion {
		for _, arch := range []cabpiv1.Architecture{cabpiv1.ArchitectureAMD64, cabpiv1.ArchitectureARM64} {
			for _, name := range []string{"kubeadm", "kubelet", "kubectl"} {
				assert.True(t, files[string(arch)+"/"+name], "%s has no %s for %s", v, name, arch)
			}
		}
		assert.Len(t, files, 6, v)
	}
	assert.Equal(t, len(perVersion), len(CatalogueVersions()))
}

func TestParseCatalogueNeedsSources(t *testing.T) {
	line := strings.Repeat("a", 64) + "  v1.34.2/bin/linux/amd64/kubelet\n"
	_, err := ParseCatalogue([]byte("# a comment\n" + line))
	var syntax *DigestsSyntaxError
	require.ErrorAs(t, err, &syntax)
	assert.Equal(t, 2, syntax.Line)
	entries, err := ParseCatalogue([]byte("# source: https://example.org/x\n" + line))
	require.NoError(t, err)
	assert.Equal(t, []CatalogueEntry{{Path: "v1.34.2/bin/linux/amd64/kubelet", Digest: strings.Repeat("a", 64), Source: "https://example.org/x"}}, entries)
}

func TestParseDigests(t *testing.T) {
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	for _, tc := range []struct {
		name, in string
		want     Digests
		badLine  int
	}{
		{name: "sha256sum's output", in: a + "  v1.34.2/bin/linux/amd64/kubelet\n" + b + " *kubernetes-v1.34.2-x86-64.raw\n",
			want: Digests{"v1.34.2/bin/linux/amd64/kubelet": a, "kubernetes-v1.34.2-x86-64.raw": b}},
		{name: "run with ./ paths, comments, blank lines, upper case", in: "# mirror\n\n" + strings.ToUpper(a) + "  ./v1.34.2/bin/linux/amd64/kubeadm\n",
			want: Digests{"v1.34.2/bin/linux/amd64/kubeadm": a}},
		{name: "the same entry twice", in: a + "  x\n" + a + "  x\n", want: Digests{"x": a}},
		{name: "empty", in: "", want: Digests{}},
		{name: "two digests for one path", in: a + "  x\n" + b + "  x\n", badLine: 2},
		{name: "not hex", in: strings.Repeat("g", 64) + "  x\n", badLine: 1},
		{name: "short", in: "abc  x\n", badLine: 1},
		{name: "no path", in: a + "\n", badLine: 1},
		{name: "absolute path", in: a + "  /srv/mirror/x\n", badLine: 1},
		{name: "path out of the mirror", in: a + "  ../x\n", badLine: 1},
		{name: "path not clean", in: a + "  v1//x\n", badLine: 1},
		{name: "a space in the path", in: a + "  x y\n", badLine: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDigests([]byte(tc.in))
			if tc.badLine == 0 {
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
				return
			}
			var syntax *DigestsSyntaxError
			require.ErrorAs(t, err, &syntax)
			assert.Equal(t, tc.badLine, syntax.Line)
		})
	}
}

// Pins: the user's digest wins over the catalogue's; what runs and has neither is missing; a
// transfer file with none is left unpinned.
func TestPins(t *testing.T) {
	official := catalogue()["v1.34.2/bin/linux/amd64/kubelet"]
	require.NotEmpty(t, official)
	mine := strings.Repeat("c", 64)
	b := BinariesFor(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
		Binaries: &cabpiv1.BinariesSource{BaseURL: "http://mirror.example/release/"}}, "v1.34.2")
	downloads := b.Downloads()
	require.Len(t, downloads, 2)
	assert.Equal(t, Download{Name: "kubeadm", Rel: "v1.34.2/bin/linux/amd64/kubeadm", URL: "http://mirror.example/release/v1.34.2/bin/linux/amd64/kubeadm", Runs: true}, downloads[0])
	pins, missing := Pins(downloads, Digests{"v1.34.2/bin/linux/amd64/kubeadm": mine})
	assert.Empty(t, missing)
	assert.Equal(t, Digests{"v1.34.2/bin/linux/amd64/kubeadm": mine, "v1.34.2/bin/linux/amd64/kubelet": official}, pins)

	pins, missing = Pins(BinariesFor(cabpiv1.KubernetesSpec{}, "v1.99.0").Downloads(), nil)
	assert.Empty(t, pins)
	assert.Len(t, missing, 2)
	err := &UnknownDigestsError{Version: "v1.99.0", Missing: missing}
	assert.Contains(t, err.Error(), "v1.99.0/bin/linux/amd64/kubeadm, v1.99.0/bin/linux/amd64/kubelet")
	assert.Contains(t, err.Error(), "spec.kubernetes.digestsFrom")
	assert.Contains(t, err.Error(), "the official release binaries of v1.30.0 to v1.36.4", "the message names the catalogue's range")

	l, err2 := SysextFor(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}, "v1.34.2")
	require.NoError(t, err2)
	pins, missing = Pins(l.Downloads(true), Digests{"kubernetes-v1.34.2-x86-64.raw": mine})
	assert.Empty(t, missing, "the transfer file and noop.conf do not run")
	assert.Equal(t, Digests{"kubernetes-v1.34.2-x86-64.raw": mine}, pins)
	_, missing = Pins(l.Downloads(false), nil)
	assert.Equal(t, []string{"kubernetes-v1.34.2-x86-64.raw"}, []string{missing[0].Rel}, "the catalogue has no system extension images")
}
