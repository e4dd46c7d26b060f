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

package releaseserver

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// release is one release's files for the server: binaries whose content names them, and a
// system extension image that reads "squashfs".
func release(t *testing.T, version string, laterPatches ...string) Release {
	t.Helper()
	bin := t.TempDir()
	for _, name := range binaries {
		require.NoError(t, os.WriteFile(filepath.Join(bin, name), []byte("the "+name+" binary"), 0o755))
	}
	sysext := filepath.Join(t.TempDir(), "kubernetes.raw")
	require.NoError(t, os.WriteFile(sysext, []byte("squashfs"), 0o644))
	return Release{Version: version, BinDir: bin, Sysext: sysext, LaterPatches: laterPatches}
}

// start serves r until the test ends.
func start(t *testing.T, r Release) *Server {
	t.Helper()
	s, err := Start(netip.MustParseAddr("127.0.0.1"), []Release{r})
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// get fetches url: its status code and body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, body
}

// The server serves each binary with its digest as dl.k8s.io does, the tampered copy's kubelet
// changed with a digest that matches the change (a mirror that lies), the system extension in
// the bakery's layout (changed, with a SHA256SUMS to match, in the tampered copy), and nothing
// else; Digests lists the genuine files only.
func TestServesTheLayouts(t *testing.T) {
	s := start(t, release(t, "v1.34.4"))
	get := func(url string) (int, []byte) { t.Helper(); return get(t, url) }
	for _, name := range binaries {
		code, body := get(s.BinariesURL() + "/v1.34.4/bin/linux/amd64/" + name)
		require.Equal(t, http.StatusOK, code)
		_, digest := get(s.BinariesURL() + "/v1.34.4/bin/linux/amd64/" + name + ".sha256")
		sum := sha256.Sum256(body)
		assert.Equal(t, hex.EncodeToString(sum[:]), string(digest), "%s matches its published digest", name)

		_, tampered := get(s.TamperedBinariesURL() + "/v1.34.4/bin/linux/amd64/" + name)
		_, tamperedDigest := get(s.TamperedBinariesURL() + "/v1.34.4/bin/linux/amd64/" + name + ".sha256")
		tsum := sha256.Sum256(tampered)
		assert.Equal(t, hex.EncodeToString(tsum[:]), string(tamperedDigest), "%s in the tampered copy matches what that copy publishes", name)
		assert.Equal(t, name != TamperedBinary, tsum == sum, "only %s is changed", TamperedBinary)
		assert.Contains(t, s.Digests(), hex.EncodeToString(sum[:])+"  v1.34.4/bin/linux/amd64/"+name+"\n", "Digests lists the genuine %s", name)
	}
	code, body := get(s.SysextURL() + "/kubernetes-v1.34.4-x86-64.raw")
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "squashfs", string(body))
	assert.Equal(t, 1, s.Requests("/extensions/kubernetes-v1.34.4-x86-64.raw"))
	sum := sha256.Sum256(body)
	line := hex.EncodeToString(sum[:]) + "  kubernetes-v1.34.4-x86-64.raw\n"
	_, sums := get(s.SysextURL() + "/kubernetes/SHA256SUMS")
	assert.Equal(t, line, string(sums), "SHA256SUMS lists the image as sha256sum does")
	_, tampered := get(s.TamperedSysextURL() + "/kubernetes-v1.34.4-x86-64.raw")
	_, tamperedSums := get(s.TamperedSysextURL() + "/kubernetes/SHA256SUMS")
	tsum := sha256.Sum256(tampered)
	assert.NotEqual(t, tsum, sum, "the tampered layout serves a changed image")
	assert.Equal(t, hex.EncodeToString(tsum[:])+"  kubernetes-v1.34.4-x86-64.raw\n", string(tamperedSums), "with a SHA256SUMS that matches it")
	assert.Contains(t, s.Digests(), line, "Digests lists the genuine image")
	_, noop := get(s.SysextURL() + "/noop.conf")
	nsum := sha256.Sum256(noop)
	assert.Contains(t, s.Digests(), hex.EncodeToString(nsum[:])+"  noop.conf\n")
	code, _ = get(s.BinariesURL() + "/v1.33.0/bin/linux/amd64/kubeadm")
	assert.Equal(t, http.StatusNotFound, code)
}

// The sysext layout serves what systemd-sysupdate reads: a transfer file per minor whose source
// is the directory of SHA256SUMS, the images beside it (a later patch release too, listed with
// its digest), and noop.conf. A version outside its release's minor is refused.
func TestServesSysupdate(t *testing.T) {
	_, err := Start(netip.MustParseAddr("127.0.0.1"), []Release{release(t, "v1.33.7", "v1.34.0")})
	require.ErrorContains(t, err, "not of its minor")

	s := start(t, release(t, "v1.33.7", "v1.33.99"))
	get := func(url string) (int, string) { t.Helper(); code, body := get(t, url); return code, string(body) }
	code, transfer := get(s.SysextURL() + "/kubernetes/kubernetes-v1.33.conf")
	require.Equal(t, http.StatusOK, code)
	assert.Contains(t, transfer, "\nPath="+s.SysextURL()+"/kubernetes/\nMatchPattern=kubernetes-v1.33.@v-%a.raw\n")
	assert.Contains(t, transfer, "\nCurrentSymlink=/etc/extensions/kubernetes.raw\n")
	code, _ = get(s.SysextURL() + "/kubernetes/kubernetes-v1.34.conf")
	assert.Equal(t, http.StatusNotFound, code, "no transfer file for a minor not served")
	code, _ = get(s.SysextURL() + "/noop.conf")
	assert.Equal(t, http.StatusOK, code)

	sum := sha256.Sum256([]byte("squashfs"))
	digest := hex.EncodeToString(sum[:])
	_, sums := get(s.SysextURL() + "/kubernetes/SHA256SUMS")
	assert.Equal(t, digest+"  kubernetes-v1.33.7-x86-64.raw\n"+digest+"  kubernetes-v1.33.99-x86-64.raw\n", sums)
	for _, image := range []string{"kubernetes-v1.33.7-x86-64.raw", "kubernetes-v1.33.99-x86-64.raw"} {
		for _, dir := range []string{"/", "/kubernetes/"} {
			code, body := get(s.SysextURL() + dir + image)
			assert.Equal(t, http.StatusOK, code, dir+image)
			assert.Equal(t, "squashfs", body, dir+image)
		}
	}
}
