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

package ociimage

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func managerFiles(content string) []File {
	return []File{{Path: "/manager", Mode: 0o755, Data: []byte(content)}}
}

func config(arch string, created time.Time) Config {
	return Config{Platform: v1.Platform{OS: "linux", Architecture: arch}, Entrypoint: []string{"/manager"},
		User: "65532:65532", Created: created}
}

func indexDigest(t *testing.T, content string, created time.Time) v1.Hash {
	t.Helper()
	amd, err := Image(managerFiles(content+"-amd64"), config("amd64", created))
	require.NoError(t, err)
	arm, err := Image(managerFiles(content+"-arm64"), config("arm64", created))
	require.NoError(t, err)
	idx, err := Index(amd, arm)
	require.NoError(t, err)
	d, err := idx.Digest()
	require.NoError(t, err)
	return d
}

func TestSameInputsSameDigest(t *testing.T) {
	epoch := time.Unix(1700000000, 0)
	first := indexDigest(t, "binary", epoch)
	assert.Equal(t, first, indexDigest(t, "binary", epoch), "the same files and config")
	assert.NotEqual(t, first, indexDigest(t, "binary2", epoch), "another binary")
	assert.NotEqual(t, first, indexDigest(t, "binary", epoch.Add(time.Second)), "another time")
}

func TestImageConfigAndLayer(t *testing.T) {
	created := time.Unix(1700000000, 0).UTC()
	img, err := Image([]File{{Path: "/usr/local/bin/etcd", Mode: 0o755, Data: []byte("etcd")},
		{Path: "/etc/a", Mode: 0o644, Data: []byte("a")}}, config("arm64", created))
	require.NoError(t, err)
	mt, err := img.MediaType()
	require.NoError(t, err)
	assert.Equal(t, "application/vnd.oci.image.manifest.v1+json", string(mt))
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "arm64", cfg.Architecture)
	assert.Equal(t, []string{"/manager"}, cfg.Config.Entrypoint)
	assert.Equal(t, "65532:65532", cfg.Config.User)
	assert.True(t, cfg.Created.Time.Equal(created))

	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1)
	rc, err := layers[0].Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	type entry struct {
		name string
		mode int64
		uid  int
	}
	var got []entry
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		assert.True(t, h.ModTime.Equal(created), "%s: time %s", h.Name, h.ModTime)
		got = append(got, entry{h.Name, h.Mode, h.Uid})
	}
	assert.Equal(t, []entry{{"etc/", 0o755, 0}, {"etc/a", 0o644, 0}, {"usr/", 0o755, 0}, {"usr/local/", 0o755, 0},
		{"usr/local/bin/", 0o755, 0}, {"usr/local/bin/etcd", 0o755, 0}}, got)
}

func TestRelativePathRefused(t *testing.T) {
	_, err := Image([]File{{Path: "manager", Mode: 0o755, Data: []byte("x")}}, config("amd64", time.Time{}))
	assert.ErrorContains(t, err, "must be absolute")
}

func TestOCIArchiveIsALayoutNamedForContainerd(t *testing.T) {
	ref, err := name.NewTag("example.org/cabpi/manager:v9.8.7")
	require.NoError(t, err)
	amd, err := Image(managerFiles("a"), config("amd64", time.Time{}))
	require.NoError(t, err)
	arm, err := Image(managerFiles("b"), config("arm64", time.Time{}))
	require.NoError(t, err)
	idx, err := Index(amd, arm)
	require.NoError(t, err)

	dir := t.TempDir()
	archive := filepath.Join(dir, "image.tar")
	require.NoError(t, WriteOCIArchive(archive, ref, idx))
	again := filepath.Join(dir, "again.tar")
	require.NoError(t, WriteOCIArchive(again, ref, idx))
	a, err := os.ReadFile(archive)
	require.NoError(t, err)
	b, err := os.ReadFile(again)
	require.NoError(t, err)
	assert.Equal(t, a, b, "the same index gives the same archive, byte for byte")

	// Read back: a layout whose one entry is the index, named for containerd and, by its tag,
	// for other readers of OCI layouts.
	unpacked := t.TempDir()
	inner, name, err := ReadOCIArchive(archive, unpacked)
	require.NoError(t, err)
	assert.Equal(t, "example.org/cabpi/manager:v9.8.7", name)
	var index struct {
		Manifests []struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	data, err := os.ReadFile(filepath.Join(unpacked, "index.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(data, &index))
	require.Len(t, index.Manifests, 1)
	assert.Equal(t, "v9.8.7", index.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	got, err := inner.Digest()
	require.NoError(t, err)
	want, err := idx.Digest()
	require.NoError(t, err)
	assert.Equal(t, want, got)
	mt, err := inner.MediaType()
	require.NoError(t, err)
	assert.Equal(t, "application/vnd.oci.image.index.v1+json", string(mt))
	manifest, err := inner.IndexManifest()
	require.NoError(t, err)
	require.Len(t, manifest.Manifests, 2)
	assert.Equal(t, "amd64", manifest.Manifests[0].Platform.Architecture)
	assert.Equal(t, "arm64", manifest.Manifests[1].Platform.Architecture)
}
