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
	"bufio"
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// A machine's own cgroups. Without a service manager on the host, systemd-nspawn (--keep-unit)
// takes the cgroup it was started in as the machine's and puts the machine's systemd in
// "payload" under it. Started in the suite's own groups, every machine would get the same
// payload: one machine's systemd would prune the group of a unit another machine is starting
// ("Failed to attach to cgroup /system.slice/UNIT: No such file or directory"), and the
// kubelets of all nodes would share kubepods.slice. So each machine is started in a group of
// its own in every hierarchy the suite is in, under the suite's group there.

//go:embed scripts/in-cgroups.sh
var inCgroupsScript string

// hierarchy is one cgroup hierarchy this process is in: the directory of its group there.
type hierarchy struct {
	dir    string
	cpuset bool
}

// ownHierarchies are the cgroup hierarchies this process is in (/proc/self/cgroup), found where
// they are mounted (/proc/self/mountinfo).
func ownHierarchies() ([]hierarchy, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	var out []hierarchy
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			return nil, fmt.Errorf("unexpected line in /proc/self/cgroup: %q", line)
		}
		m, ok := mounts[parts[1]]
		if !ok {
			continue // a hierarchy not mounted here: nspawn does not use it either
		}
		rel, err := filepath.Rel(m.root, parts[2])
		if err != nil || strings.HasPrefix(rel, "..") {
			return nil, fmt.Errorf("cgroup %s is outside the mount of %q at %s", parts[2], parts[1], m.point)
		}
		out = append(out, hierarchy{dir: filepath.Join(m.point, rel), cpuset: slices.Contains(strings.Split(parts[1], ","), "cpuset")})
	}
	return out, nil
}

type cgroupMount struct{ point, root string }

// cgroupMounts are the mounted cgroup hierarchies by their name in /proc/self/cgroup: "" for
// the unified hierarchy, the controllers (or name=) of a v1 hierarchy.
func cgroupMounts() (map[string]cgroupMount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]cgroupMount{}
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		sep := slices.Index(fields, "-")
		if sep < 0 || sep+3 >= len(fields) || len(fields) < 5 {
			continue
		}
		root, point, fstype, options := fields[3], fields[4], fields[sep+1], fields[sep+3]
		switch fstype {
		case "cgroup2":
			out[""] = cgroupMount{point: point, root: root}
		case "cgroup":
			var names []string
			for _, o := range strings.Split(options, ",") {
				if o != "rw" && o != "ro" && o != "xattr" && !strings.HasPrefix(o, "release_agent=") && o != "clone_children" && o != "noprefix" && o != "cpuset_v2_mode" {
					names = append(names, o)
				}
			}
			// /proc/self/cgroup names a v1 hierarchy by its controllers in the kernel's order,
			// the mount options give them in the same order.
			out[strings.Join(names, ",")] = cgroupMount{point: point, root: root}
		}
	}
	return out, s.Err()
}

// machineCgroups are a machine's groups, one in each hierarchy.
type machineCgroups struct {
	dirs []string
}

// newMachineCgroups makes the machine's group, named name, under this process's group in each
// hierarchy; what is left of an earlier boot's is removed first.
func newMachineCgroups(name string) (*machineCgroups, error) {
	hs, err := ownHierarchies()
	if err != nil {
		return nil, fmt.Errorf("finding the suite's cgroups: %w", err)
	}
	c := &machineCgroups{}
	for _, h := range hs {
		dir := filepath.Join(h.dir, name)
		// A machine killed just before (a power cut) may still have processes dying in its
		// groups: the kernel kills the rest of its PID namespace after its init.
		if err := removeCgroupTreeWhenEmpty(dir); err != nil {
			return nil, err
		}
		if err := os.Mkdir(dir, 0o755); err != nil {
			_ = c.remove()
			return nil, fmt.Errorf("making cgroup %s: %w", dir, err)
		}
		c.dirs = append(c.dirs, dir)
		if h.cpuset {
			// A v1 cpuset group has no CPUs or memory nodes until given some: its parent's.
			for _, file := range []string{"cpuset.cpus", "cpuset.mems"} {
				v, err := os.ReadFile(filepath.Join(h.dir, file))
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, file), v, 0o644)
				}
				if err != nil {
					_ = c.remove()
					return nil, fmt.Errorf("setting %s of %s: %w", file, dir, err)
				}
			}
		}
	}
	return c, nil
}

// InOwnCgroups is argv run in cgroups of its own, named name, one in each hierarchy this process
// is in, and what removes them once the command has ended: for a systemd-nspawn run other than a
// Machine's (an image build's), which would otherwise put its container in the suite's
// "payload" group, where the machines were before they got their own.
func InOwnCgroups(name string, argv []string) (wrapped []string, remove func() error, err error) {
	groups, err := newMachineCgroups(name)
	if err != nil {
		return nil, nil, err
	}
	return groups.wrap(argv), groups.remove, nil
}

// wrap is the command line that runs argv in the machine's groups.
func (c *machineCgroups) wrap(argv []string) []string {
	out := []string{"/bin/bash", "-c", inCgroupsScript, "in-cgroups.sh"}
	for _, d := range c.dirs {
		out = append(out, filepath.Join(d, "cgroup.procs"))
	}
	return append(append(out, "--"), argv...)
}

// cgroupsEmptyWithin is how long a powered-off machine's processes may take to leave its
// groups: systemd-nspawn has exited once the machine's init has, but the kernel kills the rest
// of the machine's PID namespace then, and a process writing to disk takes a while to go.
const cgroupsEmptyWithin = 30 * time.Second

// remove removes the machine's groups and every group its systemd left in them; the machine
// must be powered off.
func (c *machineCgroups) remove() error {
	var errs []error
	for _, d := range c.dirs {
		errs = append(errs, removeCgroupTreeWhenEmpty(d))
	}
	return errors.Join(errs...)
}

// removeCgroupTreeWhenEmpty removes a powered-off machine's group tree, waiting up to
// cgroupsEmptyWithin for its last processes to leave.
func removeCgroupTreeWhenEmpty(dir string) error {
	deadline := time.Now().Add(cgroupsEmptyWithin)
	for {
		err := removeCgroupTree(dir)
		if !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// machineCgroupPrefix starts the name of every machine's groups.
const machineCgroupPrefix = "cabpi-machine-"

// RemoveStaleCgroups removes the groups machines of an earlier run left below this process's
// groups (a run that was killed, or a machine whose processes took longer than
// cgroupsEmptyWithin to go), those whose machine's name begins with prefix ("" for every
// machine's: the real-node suite, of which one runs at a time); a group with processes in it
// stays.
func RemoveStaleCgroups(prefix string) error {
	hs, err := ownHierarchies()
	if err != nil {
		return fmt.Errorf("finding the suite's cgroups: %w", err)
	}
	var errs []error
	for _, h := range hs {
		entries, err := os.ReadDir(h.dir)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), machineCgroupPrefix+prefix) {
				if err := removeCgroupTree(filepath.Join(h.dir, e.Name())); err != nil && !errors.Is(err, syscall.EBUSY) {
					errs = append(errs, err)
				}
			}
		}
	}
	return errors.Join(errs...)
}

// removeCgroupTree removes a cgroup and the groups below it, deepest first (a cgroup directory
// is removed with rmdir, its control files with it); no such group is fine.
func removeCgroupTree(dir string) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing cgroup %s: %w", dir, err)
	}
	for _, d := range slices.Backward(dirs) {
		if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
			return fmt.Errorf("removing cgroup %s: %w", d, err)
		}
	}
	return nil
}
