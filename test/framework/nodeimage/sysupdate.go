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

package nodeimage

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// Flatcar ships systemd-sysupdate, which spec.kubernetes.sysext.sysupdate relies on; Debian 12's
// systemd (252) does not. Its backport (254) does: the flatcar-like stock image takes
// systemd-sysupdate, systemd-pull (which it downloads with) and the private library both link
// against from bookworm-backports' packages, beside Debian 12's systemd, which stays PID 1. Only
// those files are taken: the library's name carries its version, so nothing of systemd 252 is
// replaced. The units come along, so the config's systemd-sysupdate.timer and its drop-in have
// the unit they are for.
var (
	// sysupdatePackages are the backported packages the files come from.
	sysupdatePackages = []string{"systemd", "systemd-container", "libsystemd-shared"}
	// sysupdateFiles are the files taken, by their path in the packages (Debian 12 puts systemd's
	// programs in /lib, which is /usr/lib in its merged root).
	sysupdateFiles = []string{
		"lib/systemd/systemd-sysupdate",
		"lib/systemd/systemd-pull",
		"lib/systemd/system/systemd-sysupdate.service",
		"lib/systemd/system/systemd-sysupdate.timer",
	}
	// sysupdateLibraryGlob finds the private library (libsystemd-shared-254.so).
	sysupdateLibraryGlob = "usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-*.so"
)

// sysupdate returns the files that give an image systemd-sysupdate, downloading and unpacking the
// packages once (cached under CacheDir, keyed by the suite and packages).
func (b Builder) sysupdate(ctx context.Context) ([]File, error) {
	suite := b.Suite + "-backports"
	key := sha256.Sum256([]byte(suite + " " + b.Mirror + " " + strings.Join(sysupdatePackages, ",")))
	dir := filepath.Join(b.CacheDir, "sysupdate-"+suite+"-"+short(key[:]))
	root, err := b.cached(dir, func(root string) error { return b.unpackBackports(ctx, suite, root) })
	if err != nil {
		return nil, fmt.Errorf("systemd-sysupdate from %s: %w", suite, err)
	}
	libs, err := filepath.Glob(filepath.Join(root, sysupdateLibraryGlob))
	if err != nil || len(libs) != 1 {
		return nil, fmt.Errorf("systemd-sysupdate from %s: want one %s, found %v (%v)", suite, sysupdateLibraryGlob, libs, err)
	}
	lib, err := filepath.Rel(root, libs[0])
	if err != nil {
		return nil, err
	}
	var files []File
	for _, p := range append(sysupdateFiles, lib) {
		data, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return nil, fmt.Errorf("systemd-sysupdate from %s: %w", suite, err)
		}
		mode := os.FileMode(0o755)
		if strings.HasPrefix(p, "lib/systemd/system/") {
			mode = 0o644
		}
		target := "/" + p
		if strings.HasPrefix(p, "lib/") {
			target = path.Join("/usr", p)
		}
		files = append(files, File{Path: target, Mode: mode, Data: data})
	}
	return files, nil
}

// unpackBackports downloads sysupdatePackages from suite with apt, into a state of its own (the
// host's sources and lists are not touched; the archive's signature is checked with the host's
// keyring), and unpacks them into root.
func (b Builder) unpackBackports(ctx context.Context, suite, root string) error {
	work, err := os.MkdirTemp(b.CacheDir, ".apt-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	for _, d := range []string{"lists/partial", "cache/archives/partial", "debs"} {
		if err := os.MkdirAll(filepath.Join(work, d), 0o755); err != nil {
			return err
		}
	}
	sources := filepath.Join(work, "sources.list")
	if err := os.WriteFile(sources, fmt.Appendf(nil, "deb %s %s main\n", b.Mirror, suite), 0o644); err != nil {
		return err
	}
	opts := []string{
		"-o", "Dir::Etc::SourceList=" + sources, "-o", "Dir::Etc::SourceParts=/dev/null",
		"-o", "Dir::State::Lists=" + filepath.Join(work, "lists"), "-o", "Dir::Cache=" + filepath.Join(work, "cache"),
		"-o", "Debug::NoLocking=1", "-o", "APT::Sandbox::User=root", "-q",
	}
	if err := run(ctx, b.Log, "apt-get", append(opts, "update")...); err != nil {
		return err
	}
	download := append(opts, "download")
	for _, p := range sysupdatePackages {
		download = append(download, p+"/"+suite)
	}
	if err := runIn(ctx, b.Log, filepath.Join(work, "debs"), "apt-get", download...); err != nil {
		return err
	}
	debs, err := filepath.Glob(filepath.Join(work, "debs", "*.deb"))
	if err != nil {
		return err
	}
	if len(debs) != len(sysupdatePackages) {
		return fmt.Errorf("apt-get download: want %d packages, got %v", len(sysupdatePackages), debs)
	}
	for _, deb := range debs {
		if err := run(ctx, b.Log, "dpkg-deb", "--extract", deb, root); err != nil {
			return err
		}
	}
	return nil
}
