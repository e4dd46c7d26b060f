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
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// A disk is a file system of its own: statfs at its mount says its size and its own free space,
// not the host's; the host pays only for what is written on it; and once removed, its loop
// device lets the file go although another mount namespace (as a machine booted while it was
// mounted has) held a copy of the mount. Against the host's real loop devices and mkfs.ext4.
func TestDiskIsAFileSystemOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	const size = 1 << 30
	d, err := createDisk(t.Context(), filepath.Join(dir, "m.disk"), filepath.Join(dir, "m"), size)
	require.NoError(t, err)
	removed := false
	t.Cleanup(func() {
		if !removed {
			_ = d.remove()
		}
	})
	require.GreaterOrEqual(t, d.index, diskLoopBase, "above the loop devices machines are given")

	var onDisk, onHost unix.Statfs_t
	require.NoError(t, unix.Statfs(d.mount, &onDisk))
	require.NoError(t, unix.Statfs(dir, &onHost))
	diskSize := onDisk.Blocks * uint64(onDisk.Bsize)
	assert.LessOrEqual(t, diskSize, uint64(size))
	assert.Greater(t, diskSize, uint64(size)*9/10, "the file system is about the disk's size")
	assert.NotEqual(t, onHost.Fsid, onDisk.Fsid, "another file system than the host's")

	// 64 MiB written on the disk cost the host about that, not the disk's size.
	require.NoError(t, os.WriteFile(filepath.Join(d.mount, "data"), bytes.Repeat([]byte{1}, 64<<20), 0o644))
	unix.Sync()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(d.image, &st))
	assert.Less(t, st.Blocks*512, int64(128<<20), "the host holds only the written blocks of the sparse file")
	require.NoError(t, unix.Statfs(d.mount, &onDisk))
	assert.Less(t, onDisk.Bavail*uint64(onDisk.Bsize), diskSize-(60<<20), "what is written counts against the disk's free space")

	// A process in a mount namespace of its own, made while the disk is mounted, as systemd-nspawn
	// makes a machine's (a copy of the host's mounts, slaves of them).
	holder := exec.Command("unshare", "--mount", "--propagation", "slave", "sleep", "60")
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	require.Eventually(t, func() bool {
		ns, err := os.Readlink("/proc/" + strconv.Itoa(holder.Process.Pid) + "/ns/mnt")
		own, _ := os.Readlink("/proc/self/ns/mnt")
		return err == nil && ns != own
	}, 10*time.Second, 10*time.Millisecond, "the holder has a mount namespace of its own")

	require.NoError(t, d.remove())
	removed = true
	require.NoError(t, d.waitDetached(10*time.Second), "the other namespace's copy went with the host's mount")
	_, err = os.Stat(d.image)
	assert.ErrorIs(t, err, os.ErrNotExist, "the disk's file is deleted")
}

// A disk a killed run left mounted is found in the mount table by its file's prefix and removed
// with what is mounted on it; another prefix's disk is left alone.
func TestRemoveStaleDisks(t *testing.T) {
	dir := t.TempDir()
	stale, err := createDisk(t.Context(), filepath.Join(dir, "stale", "m.disk"), filepath.Join(dir, "stale", "m"), 64<<20)
	require.NoError(t, err)
	other, err := createDisk(t.Context(), filepath.Join(dir, "other", "m.disk"), filepath.Join(dir, "other", "m"), 64<<20)
	require.NoError(t, err)
	t.Cleanup(func() { _ = stale.remove(); _ = other.remove() })
	// Something mounted on the disk, as a machine's root is.
	require.NoError(t, os.MkdirAll(filepath.Join(stale.mount, "root"), 0o755))
	require.NoError(t, unix.Mount("tmpfs", filepath.Join(stale.mount, "root"), "tmpfs", 0, ""))

	require.NoError(t, RemoveStaleDisks(filepath.Join(dir, "stale")+"/"))
	require.NoError(t, stale.waitDetached(10*time.Second))
	for _, p := range []string{stale.image, stale.node, stale.mount} {
		_, err := os.Stat(p)
		assert.ErrorIs(t, err, os.ErrNotExist, p)
	}
	attached, err := other.attached()
	require.NoError(t, err)
	assert.True(t, attached, "another prefix's disk stays")
}
