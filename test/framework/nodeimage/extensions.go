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

	"github.com/coreos/go-systemd/v22/unit"
)

// sysextFiles make a stock image merge system extensions at boot as Flatcar and Fedora CoreOS
// do: systemd-sysext.service enabled, and (as Flatcar's ensure-sysext.service does for systemd
// before 256, which Debian 12 has) the units the extensions bring loaded and the targets that
// want them started again.
func sysextFiles() []File {
	sysext := "/usr/lib/systemd/system/systemd-sysext.service"
	reload := "/etc/systemd/system/cabpi-ensure-sysext.service"
	return []File{
		unitLink("sysinit.target", sysext),
		unitFile(reload, ensureSysextUnit()),
		unitLink("sysinit.target", reload),
	}
}

func ensureSysextUnit() []*unit.UnitOption {
	return []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", "cabpi test node: load the units system extensions bring (Flatcar's ensure-sysext)"),
		unit.NewUnitOption("Unit", "DefaultDependencies", "no"),
		unit.NewUnitOption("Unit", "BindsTo", "systemd-sysext.service"),
		unit.NewUnitOption("Unit", "After", "systemd-sysext.service"),
		unit.NewUnitOption("Unit", "Before", "sysinit.target"),
		unit.NewUnitOption("Service", "Type", "oneshot"),
		unit.NewUnitOption("Service", "RemainAfterExit", "yes"),
		unit.NewUnitOption("Service", "ExecStart", "/usr/bin/systemctl daemon-reload"),
		unit.NewUnitOption("Service", "ExecStart", "/usr/bin/systemctl restart --no-block sockets.target timers.target multi-user.target"),
	}
}

// Sysext is the Kubernetes system extension of one version in the layout of the Flatcar sysext
// bakery's images: a squashfs image of /usr with kubeadm and kubelet in /usr/bin, the kubelet's
// unit and kubeadm's drop-in, the kubelet upheld by multi-user.target, and
// usr/lib/extension-release.d/extension-release.kubernetes, which systemd-sysext requires of an
// image linked as /etc/extensions/kubernetes.raw. Its ID is _any (the bakery's say flatcar): the
// test nodes are Debian. Built with mksquashfs (squashfs-tools) and cached under CacheDir/sysext;
// the path of the image is returned.
func (b Builder) Sysext(ctx context.Context, version, binDir string) (string, error) {
	files := []File{
		{Path: "/usr/lib/systemd/system/kubelet.service", Mode: 0o644, Data: kubeletUnit("/usr/bin")},
		{Path: "/usr/lib/systemd/system/kubelet.service.d/10-kubeadm.conf", Mode: 0o644, Data: kubeadmDropIn("/usr/bin")},
		unitFile("/usr/lib/systemd/system/multi-user.target.d/10-kubelet-service.conf",
			[]*unit.UnitOption{unit.NewUnitOption("Unit", "Upholds", "kubelet.service")}),
		{Path: "/usr/lib/extension-release.d/extension-release.kubernetes", Mode: 0o644, Data: []byte("ID=_any\n")},
	}
	h := sha256.New()
	fmt.Fprintf(h, "sysext %s\n", version)
	for _, f := range files {
		fmt.Fprintf(h, "%s %o %d\n", f.Path, f.Mode, len(f.Data))
		h.Write(f.Data)
	}
	for _, name := range []string{"kubeadm", "kubelet"} {
		if err := hashFile(h, filepath.Join(binDir, name)); err != nil {
			return "", err
		}
	}
	dir := filepath.Join(b.CacheDir, "sysext")
	image := filepath.Join(dir, fmt.Sprintf("kubernetes-%s-x86-64-%s.raw", version, short(h.Sum(nil))))
	if _, err := os.Stat(image); err == nil {
		return image, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tree, err := os.MkdirTemp(dir, ".tree-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tree)
	for _, name := range []string{"kubeadm", "kubelet"} {
		if err := copyFile(filepath.Join(binDir, name), filepath.Join(tree, "usr/bin", name), 0o755); err != nil {
			return "", err
		}
	}
	if err := writeFiles(tree, files); err != nil {
		return "", err
	}
	tmp := filepath.Join(dir, "."+path.Base(image)+".building")
	defer os.Remove(tmp)
	if err := run(ctx, b.Log, "mksquashfs", tree, tmp, "-all-root", "-noappend", "-quiet"); err != nil {
		return "", fmt.Errorf("building the Kubernetes %s system extension: %w", version, err)
	}
	// Renamed into place whole: a later run never takes a half-written image.
	if err := os.Rename(tmp, image); err != nil {
		return "", err
	}
	return image, nil
}
