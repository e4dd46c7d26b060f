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

// kubeletMinFreeFraction is the kubelet's default hard eviction threshold for its image file
// system (imagefs.available<15%; nodefs is 10%), the stricter of the two.
const kubeletMinFreeFraction = 0.15

// CheckHostDisk makes sure the file system that holds dir stays above the kubelets' eviction
// threshold once a run has written need bytes to it. A machine's file systems are the host's:
// every node's kubelet counts the host's free space as its own, and below 15% free it reports
// DiskPressure (Cluster API's NodeHealthy is then false) and tries to evict its pods, the
// control plane's static pods among them. Failing here says so; a run would otherwise time out
// waiting for Machines that never become healthy.
func CheckHostDisk(dir string, need uint64) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	size, free := st.Blocks*uint64(st.Bsize), st.Bavail*uint64(st.Bsize)
	if short := diskShortfall(size, free, need); short > 0 {
		return fmt.Errorf("the file system of %s has %d MiB free of %d MiB: the nodes' kubelets see it as theirs and "+
			"report DiskPressure below %.0f%% free, and the run writes about %d MiB; free at least %d MiB more",
			dir, free>>20, size>>20, kubeletMinFreeFraction*100, need>>20, short>>20)
	}
	return nil
}

// diskShortfall is how many bytes a file system of size bytes with free bytes free lacks to stay
// above the kubelets' threshold after need more are written; 0 when it does not.
func diskShortfall(size, free, need uint64) uint64 {
	floor := uint64(float64(size)*kubeletMinFreeFraction) + need
	if free >= floor {
		return 0
	}
	return floor - free
}
