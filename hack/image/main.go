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

// Command image builds the manager's OCI image without a container engine (`make image`): the
// static manager binary for each platform, built as the Dockerfile's build stage builds it, in
// one layer at /manager, run as user 65532 with /manager as entrypoint, as the Dockerfile's final
// stage describes; the platforms' images in one OCI index. It writes an OCI archive (what
// `ctr images import`, `skopeo copy oci-archive:` and `crane push` read) and prints the index's
// digest. The same source, toolchain and SOURCE_DATE_EPOCH give the same digest.
//
//	go run ./hack/image -ref ghcr.io/cabpi/cluster-api-bootstrap-provider-ignition:v0.1.0 -archive out/image.tar
//
// With -binary it packs a manager built elsewhere, for one platform, in the same layout (the
// real-node suite's image of Cluster API's core manager, whose Dockerfile has the same final
// stage but for the user: -user 65532).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/ociimage"
)

// What the Dockerfile says too (main_test.go keeps them in agreement): the build's environment
// and flags, where the binary goes, and how it runs.
var (
	buildEnv   = []string{"CGO_ENABLED=0", "GOFLAGS=-buildvcs=false"}
	buildFlags = []string{"-trimpath", "-ldflags", "-s -w"}
)

const (
	binaryPath = "/manager"
	imageUser  = "65532:65532"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	ref := fs.String("ref", "", "the image's reference (registry/repository:tag)")
	archive := fs.String("archive", "", "where to write the OCI archive")
	platforms := fs.String("platforms", "linux/amd64,linux/arm64", "the platforms, comma-separated")
	pkg := fs.String("package", ".", "the manager's main package")
	binary := fs.String("binary", "", "pack this binary (built for the one platform of -platforms) instead of building -package")
	user := fs.String("user", imageUser, "the user the image runs as")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *ref == "" || *archive == "" {
		return fmt.Errorf("-ref and -archive are required")
	}
	tag, err := name.NewTag(*ref, name.StrictValidation)
	if err != nil {
		return fmt.Errorf("-ref: %w", err)
	}
	created, err := sourceDateEpoch()
	if err != nil {
		return err
	}
	var list []v1.Platform
	for _, p := range strings.Split(*platforms, ",") {
		platform, err := v1.ParsePlatform(strings.TrimSpace(p))
		if err != nil {
			return fmt.Errorf("-platforms: %w", err)
		}
		list = append(list, *platform)
	}
	if err := os.MkdirAll(filepath.Dir(*archive), 0o755); err != nil {
		return err
	}
	work, err := os.MkdirTemp(filepath.Dir(*archive), ".image-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	o := buildOptions{pkg: *pkg, dir: work, platforms: list, created: created, version: tag.TagStr(), user: *user}
	if *binary != "" {
		if len(list) != 1 {
			return fmt.Errorf("-binary packs one platform's binary: -platforms names %d", len(list))
		}
		o.binaries = map[string]string{list[0].String(): *binary}
	}
	idx, err := build(ctx, o)
	if err != nil {
		return err
	}
	if err := ociimage.WriteOCIArchive(*archive, tag, idx); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	fmt.Println(digest.String())
	return nil
}

type buildOptions struct {
	pkg       string
	dir       string // where the binaries are built
	platforms []v1.Platform
	created   time.Time
	version   string
	user      string
	// binaries are prebuilt binaries by platform: those are packed, not built.
	binaries map[string]string
}

// build builds the manager for each platform and returns the index of their images.
func build(ctx context.Context, o buildOptions) (v1.ImageIndex, error) {
	var images []v1.Image
	for _, p := range o.platforms {
		bin, prebuilt := o.binaries[p.String()]
		if !prebuilt {
			bin = filepath.Join(o.dir, "manager-"+strings.ReplaceAll(p.String(), "/", "-"))
			cmd := exec.CommandContext(ctx, "go", append(append([]string{"build"}, buildFlags...), "-o", bin, o.pkg)...)
			cmd.Env = append(append(os.Environ(), buildEnv...), "GOOS="+p.OS, "GOARCH="+p.Architecture)
			if p.Variant != "" && p.Architecture == "arm" {
				cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
			}
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("building the manager for %s: %w", p, err)
			}
		}
		img, err := ociimage.Image([]ociimage.File{{Path: binaryPath, Mode: 0o755, Source: bin}}, ociimage.Config{
			Platform:   p,
			Entrypoint: []string{binaryPath},
			User:       o.user,
			Labels:     map[string]string{"org.opencontainers.image.version": o.version},
			Created:    o.created,
		})
		if err != nil {
			return nil, fmt.Errorf("the image for %s: %w", p, err)
		}
		images = append(images, img)
	}
	return ociimage.Index(images...)
}

// sourceDateEpoch is the time every part of the image carries: SOURCE_DATE_EPOCH (the Makefile
// passes the commit's time), else the Unix epoch.
func sourceDateEpoch() (time.Time, error) {
	v := os.Getenv("SOURCE_DATE_EPOCH")
	if v == "" {
		return time.Unix(0, 0).UTC(), nil
	}
	s, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", v, err)
	}
	return time.Unix(s, 0).UTC(), nil
}
