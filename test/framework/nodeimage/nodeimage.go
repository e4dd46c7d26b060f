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

// Package nodeimage builds the root file systems the real-node suite boots with systemd-nspawn:
// a Debian root made by debootstrap with systemd, containerd, runc and the CNI plugins, plus
// kubeadm and kubelet at one Kubernetes version, in one of two flavors that differ the way
// Flatcar Container Linux and Fedora CoreOS do (docs/nodes-in-tests.md says how they differ
// from the real systems).
//
// Images are built once and cached outside the repository, keyed by what goes into them; each
// is built into a temporary directory and renamed into place only when complete, so a failed
// or interrupted build never leaves what a later run would take for an image.
package nodeimage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nspawn"
)

// system is the operating system a flavor resembles: FlavorFlatcar or FlavorFCOS.
func system(f infrav1.Flavor) infrav1.Flavor {
	switch f {
	case infrav1.FlavorFlatcar, infrav1.FlavorFlatcarStock:
		return infrav1.FlavorFlatcar
	}
	return infrav1.FlavorFCOS
}

// basePackages make the Debian root a node: systemd as PID 1 and what kubeadm's preflight and
// the kubelet need, from Debian's packages; curl, which Flatcar and Fedora CoreOS have and
// cabpi's bootstrap asks a resumed control plane's etcd with (docs/adr/034).
var basePackages = []string{
	"systemd", "systemd-sysv", "dbus", "bash", "iproute2",
	"containerd", "runc", "containernetworking-plugins",
	"iptables", "conntrack", "ethtool", "socat", "kmod", "util-linux", "mount", "ca-certificates", "procps",
	"curl",
}

// Builder builds and caches node images.
type Builder struct {
	// CacheDir holds the images (e.g. ~/.cache/cabpi/nodeimage).
	CacheDir string
	// Suite and Mirror are the Debian release and archive debootstrap and apt use.
	Suite, Mirror string
	// Log receives the build tools' output; nil discards it.
	Log io.Writer
}

// NewBuilder is a Builder for Debian 12 (bookworm) from Debian's archive, caching in cacheDir.
func NewBuilder(cacheDir string) Builder {
	return Builder{CacheDir: cacheDir, Suite: "bookworm", Mirror: "http://deb.debian.org/debian"}
}

// Kubernetes is the kubeadm and kubelet an image carries.
type Kubernetes struct {
	Version string
	// BinDir has kubeadm and kubelet built at Version (hack/kube-binaries.sh).
	BinDir string
	// ControlPlane, when set, adds the images kubeadm runs a control plane from (images.go).
	ControlPlane *ControlPlane
}

// ContainerdDir is where the image keeps containerd's state. A node needs it on a file system
// that is not overlayfs (containerd's snapshotter makes overlay mounts whose upper layer is
// there): the machines get a copy of it bound from the host (nspawn.Spec.CopiedDirs).
const ContainerdDir = "/var/lib/containerd"

// Build returns the root file system of the flavor with k's kubeadm and kubelet, building
// what is not cached yet. A stock flavor has no Kubernetes: it takes only what its container
// runtime needs to run Pods from k (the pod sandbox's image, stock below).
func (b Builder) Build(ctx context.Context, flavor infrav1.Flavor, k Kubernetes) (string, error) {
	base, err := b.base(ctx)
	if err != nil {
		return "", err
	}
	files, err := Files(flavor)
	if err != nil {
		return "", err
	}
	if flavor.Stock() {
		return b.stock(ctx, base, flavor, files, k)
	}
	var specs []imageSpec
	if k.ControlPlane != nil {
		if specs, err = controlPlaneImages(ctx, filepath.Join(k.BinDir, "kubeadm"), k.Version, *k.ControlPlane); err != nil {
			return "", err
		}
		cfg, err := containerdConfigFile(sandboxImage(specs))
		if err != nil {
			return "", err
		}
		files = append(files, cfg)
	}
	// The key covers the images by what goes into them (reference, place and binary), so a
	// cached image is found without building the images' archive again.
	h := sha256.New()
	fmt.Fprintf(h, "base=%s flavor=%s kubernetes=%s images=%d\n", filepath.Base(filepath.Dir(base)), flavor, k.Version, len(specs))
	for _, spec := range specs {
		fmt.Fprintf(h, "image %s %s\n", spec.ref.Name(), spec.target)
		if err := hashFile(h, spec.binary); err != nil {
			return "", err
		}
	}
	for _, f := range files {
		fmt.Fprintf(h, "%s %o %q %d\n", f.Path, f.Mode, f.LinkTarget, len(f.Data))
		h.Write(f.Data)
	}
	for _, name := range []string{"kubeadm", "kubelet"} {
		if err := hashFile(h, filepath.Join(k.BinDir, name)); err != nil {
			return "", err
		}
	}
	kind := "node"
	if k.ControlPlane != nil {
		kind = "cp"
	}
	dir := filepath.Join(b.CacheDir, fmt.Sprintf("%s-%s-%s-%s", flavor, kind, k.Version, short(h.Sum(nil))))
	return b.cached(dir, func(root string) error {
		if err := run(ctx, b.Log, "cp", "-a", base+"/.", root); err != nil {
			return fmt.Errorf("copying the base root: %w", err)
		}
		for _, name := range []string{"kubeadm", "kubelet"} {
			if err := copyFile(filepath.Join(k.BinDir, name), filepath.Join(root, binDir(flavor), name), 0o755); err != nil {
				return err
			}
		}
		if err := writeFiles(root, files); err != nil {
			return err
		}
		if len(specs) == 0 {
			return nil
		}
		return b.importImages(ctx, root, specs)
	})
}

// stock builds the flavor without Kubernetes: the base root and the flavor's files, and, when
// k names a control plane's images, the pod sandbox's image (pause) among them with containerd
// configured for it, as on the other images: the Pods a stock node runs (the in-place update's
// Job, the suite's own) need it, and nothing here can pull it.
func (b Builder) stock(ctx context.Context, base string, flavor infrav1.Flavor, files []File, k Kubernetes) (string, error) {
	var specs []imageSpec
	if k.ControlPlane != nil {
		all, err := controlPlaneImages(ctx, filepath.Join(k.BinDir, "kubeadm"), k.Version, *k.ControlPlane)
		if err != nil {
			return "", err
		}
		for _, s := range all {
			if s.target == "/pause" {
				specs = append(specs, s)
			}
		}
		cfg, err := containerdConfigFile(sandboxImage(specs))
		if err != nil {
			return "", err
		}
		files = append(files, cfg)
	}
	if system(flavor) == infrav1.FlavorFlatcar {
		sysupdate, err := b.sysupdate(ctx)
		if err != nil {
			return "", err
		}
		files = append(files, sysupdate...)
	}
	h := sha256.New()
	fmt.Fprintf(h, "base=%s flavor=%s\n", filepath.Base(filepath.Dir(base)), flavor)
	for _, spec := range specs {
		fmt.Fprintf(h, "image %s %s\n", spec.ref.Name(), spec.target)
		if err := hashFile(h, spec.binary); err != nil {
			return "", err
		}
	}
	for _, f := range files {
		fmt.Fprintf(h, "%s %o %q %d\n", f.Path, f.Mode, f.LinkTarget, len(f.Data))
		h.Write(f.Data)
	}
	dir := filepath.Join(b.CacheDir, fmt.Sprintf("%s-%s", flavor, short(h.Sum(nil))))
	return b.cached(dir, func(root string) error {
		if err := run(ctx, b.Log, "cp", "-a", base+"/.", root); err != nil {
			return fmt.Errorf("copying the base root: %w", err)
		}
		if err := writeFiles(root, files); err != nil {
			return err
		}
		if len(specs) == 0 {
			return nil
		}
		return b.importImages(ctx, root, specs)
	})
}

// importImages writes the images into an archive and runs the image's own containerd in the
// root (not booted, no network) to import it into namespace k8s.io, unpacked for the overlayfs
// snapshotter.
func (b Builder) importImages(ctx context.Context, root string, specs []imageSpec) error {
	tmp, err := os.CreateTemp(b.CacheDir, ".images-*.tar")
	if err != nil {
		return err
	}
	archive := tmp.Name()
	_ = tmp.Close()
	defer os.Remove(archive)
	if err := writeArchive(specs, archive); err != nil {
		return err
	}
	script, err := scripts.ReadFile("scripts/import-images.sh")
	if err != nil {
		return err
	}
	mountPoint := filepath.Join(root, "var/tmp/cabpi-images.tar")
	defer os.Remove(mountPoint)
	argv, removeCgroups, err := nspawn.InOwnCgroups("cabpi-image-import-"+filepath.Base(filepath.Dir(root)), []string{
		"systemd-nspawn", "--quiet", "--register=no", "--keep-unit", "--private-network",
		"--as-pid2", "--capability=all", "--directory=" + root, "--bind-ro=" + archive + ":/var/tmp/cabpi-images.tar",
		"/bin/bash", "-c", string(script)})
	if err != nil {
		return fmt.Errorf("importing the control plane's images into containerd: %w", err)
	}
	if err := run(ctx, b.Log, argv[0], argv[1:]...); err != nil {
		_ = removeCgroups()
		return fmt.Errorf("importing the control plane's images into containerd: %w", err)
	}
	return removeCgroups()
}

// base is the Debian root with basePackages, shared by every flavor and version.
func (b Builder) base(ctx context.Context) (string, error) {
	key := sha256.Sum256([]byte(b.Suite + " " + b.Mirror + " " + strings.Join(basePackages, ",")))
	dir := filepath.Join(b.CacheDir, "base-"+b.Suite+"-"+short(key[:]))
	return b.cached(dir, func(root string) error {
		if err := run(ctx, b.Log, "debootstrap", "--variant=minbase",
			"--include="+strings.Join(basePackages, ","), b.Suite, root, b.Mirror); err != nil {
			return fmt.Errorf("debootstrap %s: %w", b.Suite, err)
		}
		// Nothing of the build machine stays behind: no resolver, no apt lists, no machine-id.
		for _, p := range []string{"etc/resolv.conf", "etc/hostname", "etc/machine-id", "var/lib/dbus/machine-id"} {
			if err := os.Remove(filepath.Join(root, p)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
		}
		return os.RemoveAll(filepath.Join(root, "var/lib/apt/lists"))
	})
}

// cached returns dir/rootfs when dir is complete; otherwise it builds it with build into a
// temporary directory beside dir and renames that into place.
func (b Builder) cached(dir string, build func(root string) error) (string, error) {
	root := filepath.Join(dir, "rootfs")
	complete := filepath.Join(dir, "complete")
	if _, err := os.Stat(complete); err == nil {
		// The marker's time is the image's last use, which pruning reads.
		now := time.Now()
		_ = os.Chtimes(complete, now, now)
		b.pruneSiblings(dir)
		return root, nil
	}
	if err := os.MkdirAll(b.CacheDir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(b.CacheDir, ".building-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	if err := os.Mkdir(filepath.Join(tmp, "rootfs"), 0o755); err != nil {
		return "", err
	}
	if err := build(filepath.Join(tmp, "rootfs")); err != nil {
		return "", fmt.Errorf("building %s: %w", filepath.Base(dir), err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), nil, 0o644); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		// A concurrent build finished first: use it.
		if _, statErr := os.Stat(filepath.Join(dir, "complete")); statErr == nil {
			return root, nil
		}
		return "", fmt.Errorf("moving the image into place: %w", err)
	}
	b.pruneSiblings(dir)
	return root, nil
}

// keepUnused is how long an image of the cache no run has used stays once a run uses another
// image of its kind: twice as long as a run may last (make e2e's timeout), so no run still has
// machines over it.
const keepUnused = 2 * time.Hour

// pruneSiblings removes the images of dir's kind (its name but the key: flavor, role, version)
// that no run has used for keepUnused. Each change of an image's content is a new key: without
// this the cache would grow by a set of images (some 3 GiB) for each such change, until the host
// has no room left for what a run writes (nspawn.CheckHostDisk).
func (b Builder) pruneSiblings(dir string) {
	name := filepath.Base(dir)
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return
	}
	kind := name[:i+1]
	entries, err := os.ReadDir(b.CacheDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		key, ok := strings.CutPrefix(e.Name(), kind)
		if !ok || e.Name() == name || strings.Contains(key, "-") || !e.IsDir() {
			continue
		}
		sibling := filepath.Join(b.CacheDir, e.Name())
		info, err := os.Stat(filepath.Join(sibling, "complete"))
		if err != nil || time.Since(info.ModTime()) < keepUnused {
			continue
		}
		if err := os.RemoveAll(sibling); err != nil && b.Log != nil {
			fmt.Fprintf(b.Log, "pruning the unused image %s: %v\n", e.Name(), err)
		}
	}
}

// writeFiles writes files into root.
func writeFiles(root string, files []File) error {
	for _, f := range files {
		p := filepath.Join(root, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		if f.LinkTarget != "" {
			if err := os.Symlink(f.LinkTarget, p); err != nil {
				return err
			}
			continue
		}
		if err := os.WriteFile(p, f.Data, f.Mode); err != nil {
			return err
		}
		if err := os.Chmod(p, f.Mode); err != nil { // past the umask
			return err
		}
	}
	return nil
}

func copyFile(from, to string, mode os.FileMode) error {
	data, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.WriteFile(to, data, mode)
}

func hashFile(h io.Writer, p string) error {
	f, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	defer f.Close()
	_, err = io.Copy(h, f)
	return err
}

func short(sum []byte) string { return hex.EncodeToString(sum)[:12] }

// run runs a build tool, its output to log.
func run(ctx context.Context, log io.Writer, name string, args ...string) error {
	return runIn(ctx, log, "", name, args...)
}

// runIn is run in directory dir ("": the current one).
func runIn(ctx context.Context, log io.Writer, dir, name string, args ...string) error {
	if log == nil {
		log = io.Discard
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}
