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

package nspawn

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A machine's disk is a file system of its own, as a real machine's disk is: a sparse file on the
// host, formatted ext4 and attached to a loop device, mounted at the machine's directory, so that
// its upper layer, its containerd copy and everything else it writes live there. What a node's
// kubelet reads of its free space (nodefs: /var/lib/kubelet on the overlay root, whose statfs is
// its upper layer's; imagefs: containerd's directory) is then the node's own, and its eviction
// thresholds (DiskPressure below 10% and 15% free) follow what the node wrote, not what the
// host's other users left free. The host pays only for the blocks the node writes.
//
// The disk has no journal: a machine's power cut (Kill) kills its processes, not the host's
// kernel, so nothing written is lost to it, and a journal would only double what is written.

// diskLoopBase is the first loop device index the disks take: far above the devices a stock
// machine is given (0 to LoopDevices-1), for which its systemd asks the kernel the lowest free
// one (LOOP_CTL_GET_FREE).
const diskLoopBase = 1024

// diskLoopSpan bounds the indexes tried from diskLoopBase.
const diskLoopSpan = 1024

// disk is a mounted disk.
type disk struct {
	// image is the sparse file, node the device node of its loop device (made beside it, so
	// that nothing depends on the host's /dev), mount where it is mounted.
	image, node, mount string
	index              int
}

// createDisk makes a sparse file of size bytes at image, formats it, attaches it to a free loop
// device and mounts it at mount (created). The mount is shared, so that the copies machines'
// mount namespaces hold of it (every machine booted while it is mounted gets one: systemd-nspawn
// copies the host's mounts and makes them slaves) are unmounted with it; a private mount would
// keep the file system, and the host's blocks of its deleted file, until every such machine
// powered off.
func createDisk(ctx context.Context, image, mount string, size int64) (d *disk, err error) {
	if !strings.HasSuffix(image, diskSuffix) {
		return nil, fmt.Errorf("a disk's file is named *%s: %s", diskSuffix, image)
	}
	d = &disk{image: image, node: image + ".dev", mount: mount, index: -1}
	if err := os.MkdirAll(filepath.Dir(image), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(image, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("creating the disk %s: %w", image, err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, d.remove())
		}
	}()
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return d, fmt.Errorf("sizing the disk %s: %w", image, err)
	}
	if err := f.Close(); err != nil {
		return d, err
	}
	// lazy_itable_init leaves the inode tables to be zeroed later, and noinit_itable (below)
	// never does it: the file reads zeroes where nothing was written.
	mkfs := exec.CommandContext(ctx, "mkfs.ext4", "-q", "-F", "-m", "0", "-O", "^has_journal",
		"-E", "lazy_itable_init=1,nodiscard", "-L", "cabpi-node", image)
	if out, err := mkfs.CombinedOutput(); err != nil {
		return d, fmt.Errorf("formatting the disk %s: %w: %s", image, err, strings.TrimSpace(string(out)))
	}
	if err := os.MkdirAll(mount, 0o755); err != nil {
		return d, err
	}
	dev, err := d.attach()
	if err != nil {
		return d, err
	}
	// The device is held open until the file system is mounted: with autoclear, the kernel
	// detaches it at the last close.
	err = unix.Mount(d.node, mount, "ext4", 0, "noinit_itable")
	_ = dev.Close()
	if err != nil {
		return d, fmt.Errorf("mounting the disk %s at %s: %w", image, mount, err)
	}
	return d, nil
}

// attach binds the image to the first free loop device from diskLoopBase, with autoclear: the
// kernel detaches it at its last close, once the file system on it is unmounted everywhere. It
// returns the device open: the caller closes it once it is mounted.
func (d *disk) attach() (*os.File, error) {
	control, err := os.OpenFile("/dev/loop-control", os.O_RDWR, 0)
	if err != nil {
		return nil, fmt.Errorf("opening /dev/loop-control: %w", err)
	}
	defer control.Close()
	backing, err := os.OpenFile(d.image, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	defer backing.Close()
	for i := diskLoopBase; i < diskLoopBase+diskLoopSpan; i++ {
		if err := loopControl(control, unix.LOOP_CTL_ADD, i); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("adding /dev/loop%d: %w", i, err)
		}
		_ = os.Remove(d.node)
		if err := unix.Mknod(d.node, unix.S_IFBLK|0o600, int(unix.Mkdev(loopMajor, uint32(i)))); err != nil {
			return nil, fmt.Errorf("making the node of loop device %d: %w", i, err)
		}
		dev, err := os.OpenFile(d.node, os.O_RDWR, 0)
		if err != nil {
			return nil, fmt.Errorf("opening loop device %d: %w", i, err)
		}
		cfg := unix.LoopConfig{Fd: uint32(backing.Fd())}
		cfg.Info.Flags = unix.LO_FLAGS_AUTOCLEAR
		err = unix.IoctlLoopConfigure(int(dev.Fd()), &cfg)
		switch {
		case err == nil:
			d.index = i
			return dev, nil
		case errors.Is(err, unix.EBUSY): // another disk's: the next
			_ = dev.Close()
			continue
		default:
			_ = dev.Close()
			return nil, fmt.Errorf("attaching %s to loop device %d: %w", d.image, i, err)
		}
	}
	return nil, fmt.Errorf("no free loop device from %d to %d for %s", diskLoopBase, diskLoopBase+diskLoopSpan-1, d.image)
}

// remove unmounts the disk (lazily when something still holds it: the loop device then detaches
// when that lets go) and deletes its mount point, file and device node. The machine is powered
// off by then.
//
// Every machine booted while the disk was mounted holds a copy of the mount in its mount
// namespace (systemd-nspawn copies the host's mounts), which the host's unmount leaves there:
// the mounts are private, nothing propagates. Removing the mount point is what lets the disk go:
// the kernel detaches the mounts on a directory that is removed, in every namespace (Linux 3.18
// on). Until then the file system, and the host's blocks of its deleted file, would stay until
// every such machine powered off.
func (d *disk) remove() error {
	var errs []error
	if d.index >= 0 {
		if err := unix.Unmount(d.mount, 0); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			if derr := unix.Unmount(d.mount, unix.MNT_DETACH); derr != nil {
				errs = append(errs, fmt.Errorf("unmounting the disk at %s: %w", d.mount, err))
			}
		}
	}
	if err := os.Remove(d.mount); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, fmt.Errorf("removing the mount point of the disk: %w", err))
	}
	for _, p := range []string{d.image, d.node} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// attached says whether the disk's loop device still holds its file: false once the file system
// is unmounted everywhere (autoclear), whatever file the device was given since (another disk's,
// of another run). For tests of the clean-up.
func (d *disk) attached() (bool, error) {
	data, err := os.ReadFile(fmt.Sprintf("/sys/block/loop%d/loop/backing_file", d.index))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	// A file deleted while attached is named with " (deleted)" after it.
	return strings.TrimSuffix(strings.TrimSpace(string(data)), " (deleted)") == d.image, nil
}

// waitDetached waits up to timeout for the disk's loop device to let its file go.
func (d *disk) waitDetached(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		attached, err := d.attached()
		if err != nil || !attached {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("loop device %d still holds %s after %s", d.index, d.image, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// diskSuffix ends the name of a disk's file, and diskSuffix+".dev" that of its device node, which
// the host's mount table shows as the disk's source: what RemoveStaleDisks looks for.
const diskSuffix = ".disk"

// RemoveStaleDisks removes the disks whose files' paths begin with prefix that an earlier run left
// mounted (killed before its clean-up): each is unmounted with what is mounted below it, and its
// mount point, file and device node deleted, so that the host gets their blocks back. The prefix
// is a suite's own (its work directories'), so that another suite's disks are left alone.
func RemoveStaleDisks(prefix string) error {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	var errs []error
	for _, line := range strings.Split(string(data), "\n") {
		// mountinfo: ID parent major:minor root mountpoint options ... - fstype source superoptions
		fields := strings.Fields(line)
		sep := slices.Index(fields, "-")
		if sep < 5 || sep+2 >= len(fields) {
			continue
		}
		node := unescapeMountinfo(fields[sep+2])
		if !strings.HasSuffix(node, diskSuffix+".dev") || !strings.HasPrefix(node, prefix) {
			continue
		}
		d := &disk{mount: unescapeMountinfo(fields[4]), node: node, image: strings.TrimSuffix(node, ".dev")}
		if err := unix.Unmount(d.mount, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			errs = append(errs, fmt.Errorf("unmounting the stale disk at %s: %w", d.mount, err))
			continue
		}
		errs = append(errs, d.remove())
	}
	return errors.Join(errs...)
}

// unescapeMountinfo undoes the kernel's octal escapes of white space and backslashes in a path
// of /proc/self/mountinfo ("\040" for a space).
func unescapeMountinfo(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
