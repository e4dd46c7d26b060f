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
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// inotifyLimits are the host's inotify limits the machines need: every machine's systemd,
// journald, containerd and kubelet hold inotify instances of root (no user namespace), all
// counted against the host's per-user limits, and Debian's default of 128 instances runs out at
// about ten machines ("too many open files" from fsnotify, containerd's CRI plugin not loading).
var inotifyLimits = map[string]int{
	"/proc/sys/fs/inotify/max_user_instances": 8192,
	"/proc/sys/fs/inotify/max_user_watches":   1048576,
}

// RaiseHostLimits raises the host's inotify limits to what many machines need, where they are
// lower, and returns what puts them back.
func RaiseHostLimits() (restore func() error, err error) {
	old := map[string]string{}
	restore = func() error {
		var errs []error
		for p, v := range old {
			errs = append(errs, os.WriteFile(p, []byte(v), 0o644))
		}
		return errors.Join(errs...)
	}
	for p, want := range inotifyLimits {
		data, err := os.ReadFile(p)
		if err != nil {
			return restore, err
		}
		cur, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return restore, fmt.Errorf("%s: %w", p, err)
		}
		if cur >= want {
			continue
		}
		if err := os.WriteFile(p, []byte(strconv.Itoa(want)), 0o644); err != nil {
			return restore, fmt.Errorf("raising %s to %d: %w", p, want, err)
		}
		old[p] = strings.TrimSpace(string(data))
	}
	return restore, nil
}

// CheckHostDisk makes sure the file system that holds dir has room for what a run writes (need
// bytes). The machines' disks are sparse files there (disk.go): each node's kubelet sees its own
// disk, so how full the host is means nothing to its eviction thresholds, but every block a node
// writes is one of the host's, and a host that runs out fails the nodes' writes (I/O errors on
// their disks). Failing here says so, with the numbers, before any node boots.
func CheckHostDisk(dir string, need uint64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	free := st.Bavail * uint64(st.Bsize)
	if free < need {
		return fmt.Errorf("the file system of %s has %d MiB free, and the run writes about %d MiB onto its nodes' disks: "+
			"free at least %d MiB more", dir, free>>20, need>>20, (need-free)>>20)
	}
	return nil
}
