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
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Stopping a machine, or a process of it, at a chosen moment: the suite cuts a node's power
// at a point of its bootstrap (a file appears, a process runs) and must not let the node move
// on between seeing that point and the cut. The cgroup freezer stops every process of the
// machine at once; a frozen machine is then inspected and killed (Kill thaws it, so that the
// pending SIGKILLs land before any process runs another instruction of its own).

// freezerState is the v1 freezer's control file.
const freezerState = "freezer.state"

// freezerDir is the machine's group in the v1 freezer hierarchy.
func (m *Machine) freezerDir() (string, error) {
	m.mu.Lock()
	groups := m.cgroups
	m.mu.Unlock()
	if groups == nil {
		return "", fmt.Errorf("%s has no cgroups: not booted", m.Name)
	}
	for _, d := range groups.dirs {
		if _, err := os.Stat(filepath.Join(d, freezerState)); err == nil {
			return d, nil
		}
	}
	return "", fmt.Errorf("%s: %w", m.Name, errNoFreezer)
}

// errNoFreezer: the host mounts no v1 freezer hierarchy, so the machine has no freezer group.
var errNoFreezer = errors.New("in no freezer cgroup (the host mounts no v1 freezer hierarchy)")

// Freeze stops every process of the running machine at once and returns when the kernel says
// they all are.
func (m *Machine) Freeze() error {
	if m.up() == nil {
		return fmt.Errorf("%s is not running", m.Name)
	}
	dir, err := m.freezerDir()
	if err != nil {
		return err
	}
	// The v1 freezer stays FREEZING when a task could not be frozen on the first pass (a busy
	// host, a task between states); writing FROZEN again makes the kernel try the tasks left
	// (Documentation/admin-guide/cgroup-v1/freezer-subsystem.rst), so it is written again
	// every 100 ms until the group is FROZEN.
	const within = 30 * time.Second
	deadline := time.Now().Add(within)
	var lastWrite time.Time
	for {
		if time.Since(lastWrite) >= 100*time.Millisecond {
			if err := os.WriteFile(filepath.Join(dir, freezerState), []byte("FROZEN"), 0o644); err != nil {
				return fmt.Errorf("freezing %s: %w", m.Name, err)
			}
			lastWrite = time.Now()
		}
		state, err := os.ReadFile(filepath.Join(dir, freezerState))
		if err != nil {
			return fmt.Errorf("reading the freezer state of %s: %w", m.Name, err)
		}
		if strings.TrimSpace(string(state)) == "FROZEN" {
			return nil
		}
		if time.Now().After(deadline) {
			// Not left half frozen: whoever cleans up after the failure finds a running machine.
			thawErr := os.WriteFile(filepath.Join(dir, freezerState), []byte("THAWED"), 0o644)
			return errors.Join(fmt.Errorf("%s is not frozen after %s (%s)", m.Name, within, strings.TrimSpace(string(state))), thawErr)
		}
		time.Sleep(time.Millisecond)
	}
}

// thaw lets every frozen group of the machine run again: its own (Freeze) and any below it
// that froze itself. A container runtime freezes a container's group while it changes it (runc
// on cgroup v1); cut off then, the group stays frozen after its machine is gone, and its
// processes keep their pending SIGKILL, and its cgroups, for ever. A machine that cannot be
// frozen (no freezer) has nothing to thaw.
func (m *Machine) thaw() error {
	dir, err := m.freezerDir()
	if errors.Is(err, errNoFreezer) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // a group that went meanwhile
		}
		state, err := os.ReadFile(filepath.Join(p, freezerState))
		if err != nil || strings.TrimSpace(string(state)) == "THAWED" {
			return nil
		}
		if err := os.WriteFile(filepath.Join(p, freezerState), []byte("THAWED"), 0o644); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("thawing %s: %w", p, err))
		}
		return nil
	})
	return errors.Join(append(errs, walkErr)...)
}

// Process is a process of a machine as the host sees it.
type Process struct {
	PID     int
	PPID    int      // its parent's PID, as the host sees it
	Command string   // its name (comm)
	Args    []string // its command line
}

// ProcessState is what /proc/PID/stat says of a process: its state letter (R, S, D, T, Z, ...)
// and, once it has exited and is not yet reaped (Z), its exit status as wait(2) reports it.
type ProcessState struct {
	State      byte
	PPID       int
	WaitStatus int
}

// Exited says whether the process has exited (a zombie, not yet reaped), and its exit code.
func (s ProcessState) Exited() (code int, exited bool) {
	if s.State != 'Z' {
		return 0, false
	}
	return (s.WaitStatus >> 8) & 0xff, s.WaitStatus&0x7f == 0
}

// ReadProcessState reads /proc/PID/stat: fields are counted after the command's closing
// parenthesis, which the command itself may contain.
func ReadProcessState(pid int) (ProcessState, error) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return ProcessState{}, err
	}
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return ProcessState{}, fmt.Errorf("/proc/%d/stat: no command in %q", pid, data)
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state); the exit code is field 52 (Linux 3.5 and later).
	if len(fields) < 50 {
		return ProcessState{}, fmt.Errorf("/proc/%d/stat has %d fields after the command", pid, len(fields))
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil {
		return ProcessState{}, fmt.Errorf("/proc/%d/stat: parent %q: %w", pid, fields[1], err)
	}
	status, err := strconv.Atoi(fields[49])
	if err != nil {
		return ProcessState{}, fmt.Errorf("/proc/%d/stat: exit code %q: %w", pid, fields[49], err)
	}
	return ProcessState{State: fields[0][0], PPID: ppid, WaitStatus: status}, nil
}

// NodePath is the path at which the host reads p as the running machine sees it, its own
// mounts (/run) included: through its init's root.
func (m *Machine) NodePath(p string) (string, error) {
	pid, err := m.pid1()
	if err != nil {
		return "", err
	}
	return filepath.Join("/proc", strconv.Itoa(pid), "root", p), nil
}

// UnitProcesses are the processes of the running machine that its systemd runs in unit (the
// unit's cgroup and those below it), read from the cgroups of the hierarchy the machine's
// systemd manages (name=systemd, or the unified one on a host without it): a look at a few
// files, which a test may repeat every few milliseconds.
func (m *Machine) UnitProcesses(unit string) ([]Process, error) {
	if m.up() == nil {
		return nil, fmt.Errorf("%s is not running", m.Name)
	}
	root, err := m.systemdGroupDir()
	if err != nil {
		return nil, err
	}
	// The machine's systemd makes its slices at the top of its group, or below "payload" when
	// systemd-nspawn keeps the group's top for itself.
	var dirs []string
	for _, pattern := range []string{filepath.Join(root, "system.slice", unit), filepath.Join(root, "*", "system.slice", unit)} {
		found, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, found...)
	}
	var out []Process
	for _, dir := range dirs {
		// A group may go while it is read (the unit stops): what is gone has no processes.
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			procs, err := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			if err != nil {
				return nil
			}
			for _, field := range strings.Fields(string(procs)) {
				pid, err := strconv.Atoi(field)
				if err != nil {
					continue
				}
				if proc, ok := readProcess(pid); ok {
					out = append(out, proc)
				}
			}
			return nil
		})
	}
	return out, nil
}

// readProcess reads a process of the host; false when it has gone meanwhile.
func readProcess(pid int) (Process, bool) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	comm, err := os.ReadFile(filepath.Join(dir, "comm"))
	if err != nil {
		return Process{}, false
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return Process{}, false
	}
	st, err := ReadProcessState(pid)
	if err != nil {
		return Process{}, false
	}
	return Process{PID: pid, PPID: st.PPID, Command: strings.TrimSpace(string(comm)),
		Args: strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")}, true
}

// systemdGroupDir is the machine's group in the hierarchy its systemd manages.
func (m *Machine) systemdGroupDir() (string, error) {
	m.mu.Lock()
	groups := m.cgroups
	m.mu.Unlock()
	if groups == nil {
		return "", fmt.Errorf("%s has no cgroups: not booted", m.Name)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		return "", err
	}
	for _, name := range []string{"name=systemd", ""} {
		mount, ok := mounts[name]
		if !ok {
			continue
		}
		for _, d := range groups.dirs {
			if strings.HasPrefix(d, mount.point+"/") {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("%s is in no name=systemd or unified cgroup", m.Name)
}

// hostVeth is the name of the host's end of the running machine's veth (host0 inside): the
// link whose index host0 names as its peer; "" for a machine without one.
func (m *Machine) hostVeth() (string, error) {
	iflink, err := m.NodePath("/sys/class/net/host0/iflink")
	if errors.Is(err, errNoInit) {
		return "", nil // no init, no network namespace of its own: nothing to wait for
	}
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(iflink)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	peer := strings.TrimSpace(string(data))
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return "", err
	}
	for _, l := range links {
		index, err := os.ReadFile(filepath.Join("/sys/class/net", l.Name(), "ifindex"))
		if err == nil && strings.TrimSpace(string(index)) == peer {
			return l.Name(), nil
		}
	}
	return "", fmt.Errorf("no link of the host has index %s, the peer of host0 in %s", peer, m.Name)
}

// waitLinkGone waits until the host has no link named name ("": none to wait for).
func waitLinkGone(name string, within time.Duration) error {
	if name == "" {
		return nil
	}
	deadline := time.Now().Add(within)
	for {
		if _, err := os.Stat(filepath.Join("/sys/class/net", name)); errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("link %s still exists %s after its machine was killed", name, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
