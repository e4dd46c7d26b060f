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

package clusterctl_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/publish"
)

// assertPublished runs `make publish` for the release `make release` built into dir, with a key
// of the test's, to the test's registry at repository, and checks what a user checks:
//   - the components name the image by digest (repository:version@sha256:...), the index the
//     release built, and both platform images are pulled back by that digest;
//   - the SBOMs list every Go module the manager is built from, at its version;
//   - SHA256SUMS covers every asset and verifies (sha256sum -c);
//   - the signature verifies with the public key published beside it, and not for a changed
//     image (another digest, or the signature copied onto it), nor with another key.
func assertPublished(t *testing.T, dir, version, repository string, built v1.ImageIndex) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "cosign.key")
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	// No credentials of the machine's: the test's registry takes anonymous pushes.
	docker := []string{"DOCKER_CONFIG=" + t.TempDir()}
	runMake(t, docker, "publish", "RELEASE_VERSION="+version, "RELEASE_DIR="+dir, "KUSTOMIZE="+kustomizeBin,
		"IMAGE_REPOSITORY="+repository, "COSIGN_KEY="+keyFile)

	// The components name the image by digest: the index the release built.
	objs, named := releasedComponents(t, dir)
	builtDigest, err := built.Digest()
	require.NoError(t, err)
	assert.Equal(t, repository+":"+version+"@"+builtDigest.String(), named, "the components name the image by digest")
	assertUpdateExtensionNamesTheComponents(t, dir, objs)
	ref, err := name.NewDigest(named)
	require.NoError(t, err)

	// Both platforms, pulled back by that digest.
	idx, err := remote.Index(ref)
	require.NoError(t, err)
	manifest, err := idx.IndexManifest()
	require.NoError(t, err)
	var platforms []string
	for _, m := range manifest.Manifests {
		img, err := remote.Image(ref.Context().Digest(m.Digest.String()))
		require.NoError(t, err, m.Platform.String())
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		assert.Equal(t, m.Platform.Architecture, cfg.Architecture)
		platforms = append(platforms, m.Platform.String())
	}
	assert.Equal(t, []string{"linux/amd64", "linux/arm64"}, platforms)

	// The SBOMs: every module the manager links, at the version it is built with.
	for _, arch := range []string{"amd64", "arm64"} {
		modules := sbomModules(t, filepath.Join(dir, "cabpi-sbom-linux-"+arch+".cdx.json"))
		linked := linkedModules(t, arch)
		require.NotEmpty(t, linked)
		for path, version := range linked {
			assert.Equal(t, version, modules[path], "%s: the SBOM lists %s at its version", arch, path)
		}
		assert.Contains(t, modules, "sigs.k8s.io/cluster-api")
	}

	// SHA256SUMS: every asset, and they verify.
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	require.NoError(t, err)
	for _, asset := range []string{"bootstrap-components.yaml", "metadata.yaml", "cosign.pub", "image-reference.txt",
		"cabpi-sbom-linux-amd64.cdx.json", "cabpi-image-" + version + ".oci.tar"} {
		assert.Contains(t, string(sums), "  "+asset+"\n", "SHA256SUMS lists %s", asset)
	}
	check := exec.Command("sha256sum", "--check", "--strict", "SHA256SUMS")
	check.Dir = dir
	out, err := check.CombinedOutput()
	require.NoError(t, err, "sha256sum --check: %s", out)

	// The signature: with the public key published beside the components.
	pubPEM, err := os.ReadFile(filepath.Join(dir, "cosign.pub"))
	require.NoError(t, err)
	block, _ := pem.Decode(pubPEM)
	require.NotNil(t, block)
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	require.NoError(t, err)
	o := publish.Options{}
	require.NoError(t, publish.Verify(ref, pub, o), "the signature verifies with the public key")

	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	assert.ErrorIs(t, publish.Verify(ref, &other.PublicKey, o), publish.ErrNoValidSignature, "not with another key")

	// A changed image under the same tag: no signature of its own, and the released one copied
	// onto it does not verify (it names the released digest).
	changed := mutate.Annotations(idx, map[string]string{"changed": "yes"}).(v1.ImageIndex)
	tag, err := name.NewTag(repository + ":" + version)
	require.NoError(t, err)
	require.NoError(t, remote.WriteIndex(tag, changed))
	changedDigest, err := changed.Digest()
	require.NoError(t, err)
	changedRef := ref.Context().Digest(changedDigest.String())
	assert.Error(t, publish.Verify(changedRef, pub, o), "a changed image has no signature")
	sig, err := remote.Image(ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig"))
	require.NoError(t, err)
	require.NoError(t, remote.Write(ref.Context().Tag(strings.Replace(changedDigest.String(), ":", "-", 1)+".sig"), sig))
	assert.ErrorIs(t, publish.Verify(changedRef, pub, o), publish.ErrNoValidSignature, "the released signature does not verify a changed image")
	require.NoError(t, publish.Verify(ref, pub, o), "and the released image still verifies by its digest")
}

// sbomModules are the components of a CycloneDX SBOM: module path → version.
func sbomModules(t *testing.T, file string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var bom struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"components"`
	}
	require.NoError(t, json.Unmarshal(data, &bom))
	require.Equal(t, "CycloneDX", bom.BOMFormat)
	out := map[string]string{}
	for _, c := range bom.Components {
		out[c.Name] = c.Version
	}
	return out
}

// linkedModules are the modules the manager (the module's main package) is built from for
// linux/arch, with the versions go uses (a replacement's, where go.mod replaces one).
func linkedModules(t *testing.T, arch string) map[string]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-f", `{{with .Module}}{{if not .Main}}{{.Path}} {{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}{{end}}{{end}}`, ".")
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+arch, "CGO_ENABLED=0")
	out, err := cmd.Output()
	require.NoError(t, err)
	mods := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if path, version, ok := strings.Cut(line, " "); ok {
			mods[path] = version
		}
	}
	return mods
}
