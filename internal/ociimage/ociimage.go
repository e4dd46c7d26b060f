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

// Package ociimage builds small OCI images without a container engine: one layer of files (a
// static binary and what it needs), a config, and an index over platforms, written as an OCI
// image layout, an OCI archive (a tar of that layout, what `ctr images import` and
// `skopeo copy oci-archive:` read) or a docker-format archive. It is go-containerregistry's
// mutate, empty and layout packages put together with the rules that make the output depend on
// the inputs alone: every time in the image is Config.Created, every file is root's, files are
// in path order, and nothing is read from the machine that builds it.
//
// The release's manager image (hack/image, `make image`) and the real-node suite's control-plane
// images (test/framework/nodeimage) are built here.
package ociimage

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// File is one regular file of an image's layer. Its content is Data, or else the file at Source
// on the building machine (read when the layer is written).
type File struct {
	// Path is absolute in the image ("/manager").
	Path   string
	Mode   fs.FileMode
	Data   []byte
	Source string
}

// Config is what an image's config says besides its layer.
type Config struct {
	Platform   v1.Platform
	Entrypoint []string
	// User is "uid:gid" (or a name the image's /etc/passwd has).
	User   string
	Env    []string
	Labels map[string]string
	// Created is the image's creation time and every file's modification time: a fixed time
	// (SOURCE_DATE_EPOCH, the commit's) keeps the digest a function of the inputs.
	Created time.Time
}

// Image is a one-layer OCI image of files with cfg.
func Image(files []File, cfg Config) (v1.Image, error) {
	if len(files) == 0 {
		return nil, errors.New("an image needs at least one file")
	}
	created := cfg.Created.UTC()
	// The compressed layer is kept once made: its digest, the manifest and the archive each read
	// it, and gzip of a manager binary is most of an image's build.
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return layerTar(files, created)
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("the layer: %w", err)
	}
	base := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "cabpi ociimage", Comment: "files: " + filePaths(files)}})
	if err != nil {
		return nil, err
	}
	file, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	file = file.DeepCopy()
	file.Created = v1.Time{Time: created}
	file.OS, file.Architecture, file.Variant = cfg.Platform.OS, cfg.Platform.Architecture, cfg.Platform.Variant
	file.Config.Entrypoint = cfg.Entrypoint
	file.Config.User = cfg.User
	file.Config.Env = cfg.Env
	file.Config.Labels = cfg.Labels
	return mutate.ConfigFile(img, file)
}

// Index is an OCI image index of images, one per platform, each described by its config's
// platform.
func Index(images ...v1.Image) (v1.ImageIndex, error) {
	var adds []mutate.IndexAddendum
	for _, img := range images {
		file, err := img.ConfigFile()
		if err != nil {
			return nil, err
		}
		platform := file.Platform()
		if platform == nil || platform.OS == "" || platform.Architecture == "" {
			return nil, errors.New("an image of an index needs its platform in its config")
		}
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: platform}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...), nil
}

// Annotations on the layout's entry of an image: its name for containerd's import and the OCI
// reference name (the tag) for other readers.
const (
	containerdImageName = "io.containerd.image.name"
	ociRefName          = "org.opencontainers.image.ref.name"
)

// WriteLayout writes idx as an OCI image layout in dir (which must not exist or be empty),
// named ref.
func WriteLayout(dir string, ref name.Tag, idx v1.ImageIndex) error {
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("creating the image layout: %w", err)
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		containerdImageName: ref.Name(),
		ociRefName:          ref.TagStr(),
	}))
}

// WriteOCIArchive writes idx, named ref, as an OCI archive: the files of its image layout in one
// tar, in path order, with fixed times.
func WriteOCIArchive(file string, ref name.Tag, idx v1.ImageIndex) error {
	dir, err := os.MkdirTemp(filepath.Dir(file), ".layout-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := WriteLayout(dir, ref, idx); err != nil {
		return err
	}
	var files []File
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, File{Path: "/" + filepath.ToSlash(rel), Mode: 0o644, Source: p})
		return nil
	})
	if err != nil {
		return err
	}
	r, err := layerTar(files, time.Unix(0, 0).UTC())
	if err != nil {
		return err
	}
	return writeFileAtomically(file, r)
}

// ReadOCIArchive unpacks an OCI archive into dir (an empty directory) and returns its image
// index (the one entry of its layout) and the name containerd gives it on import: what a user's
// `ctr images import` or `skopeo copy oci-archive:` reads of a release.
func ReadOCIArchive(file, dir string) (v1.ImageIndex, string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("reading %s: %w", file, err)
		}
		if !filepath.IsLocal(h.Name) {
			return nil, "", fmt.Errorf("%s: %q leaves the archive", file, h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(target, 0o755)
		case tar.TypeReg:
			err = writeFromTar(target, tr)
		default:
			err = fmt.Errorf("%s: %q is neither a file nor a directory", file, h.Name)
		}
		if err != nil {
			return nil, "", err
		}
	}
	p, err := layout.FromPath(dir)
	if err != nil {
		return nil, "", err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return nil, "", err
	}
	manifest, err := top.IndexManifest()
	if err != nil {
		return nil, "", err
	}
	if len(manifest.Manifests) != 1 {
		return nil, "", fmt.Errorf("%s holds %d images, not one", file, len(manifest.Manifests))
	}
	entry := manifest.Manifests[0]
	idx, err := top.ImageIndex(entry.Digest)
	if err != nil {
		return nil, "", err
	}
	return idx, entry.Annotations[containerdImageName], nil
}

func writeFromTar(target string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	out, err := os.Create(target)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, r); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

// WriteDockerArchive writes single-platform images into one docker-format archive (`docker
// load`, `ctr images import`), each under its reference.
func WriteDockerArchive(file string, images map[name.Reference]v1.Image) error {
	if err := tarball.MultiRefWriteToFile(file, images); err != nil {
		return fmt.Errorf("writing the image archive: %w", err)
	}
	return nil
}

// layerTar is the tar of files with their parent directories, every entry root's with time t,
// in path order.
func layerTar(files []File, t time.Time) (io.ReadCloser, error) {
	sorted := append([]File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	dirs := map[string]bool{}
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	for _, f := range sorted {
		rel := strings.TrimPrefix(path.Clean(f.Path), "/")
		if !path.IsAbs(f.Path) || rel == "" || rel == "." {
			return nil, fmt.Errorf("%q: a file's path in an image must be absolute", f.Path)
		}
		var parents []string
		for d := path.Dir(rel); d != "."; d = path.Dir(d) {
			parents = append(parents, d)
		}
		for i := len(parents) - 1; i >= 0; i-- {
			if dirs[parents[i]] {
				continue
			}
			dirs[parents[i]] = true
			if err := w.WriteHeader(&tar.Header{Name: parents[i] + "/", Typeflag: tar.TypeDir, Mode: 0o755,
				ModTime: t}); err != nil {
				return nil, err
			}
		}
		data := f.Data
		if f.Source != "" {
			var err error
			if data, err = os.ReadFile(f.Source); err != nil {
				return nil, err
			}
		}
		if err := w.WriteHeader(&tar.Header{Name: rel, Typeflag: tar.TypeReg, Mode: int64(f.Mode.Perm()),
			Size: int64(len(data)), ModTime: t}); err != nil {
			return nil, err
		}
		if _, err := w.Write(data); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return io.NopCloser(&buf), nil
}

func filePaths(files []File) string {
	var paths []string
	for _, f := range files {
		paths = append(paths, f.Path)
	}
	sort.Strings(paths)
	return strings.Join(paths, " ")
}

// writeFileAtomically writes r to file through a temporary file beside it, so that a reader
// never sees half an archive.
func writeFileAtomically(file string, r io.ReadCloser) error {
	defer r.Close()
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, r); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// An archive is for others to read, as a file written with os.Create would be.
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}
