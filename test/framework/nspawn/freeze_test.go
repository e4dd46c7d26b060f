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
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// needFreezer says why a host without the v1 freezer fails these tests rather than skipping them:
// the real-node suite cuts a node's power with Freeze (TestInterruptedFirstBoot), so such a host
// cannot run it either.
const needFreezer = "the real-node suite freezes machines with the cgroup v1 freezer (Freeze)"

// A frozen machine runs nothing until it is killed, and a kill of a frozen machine ends it
// without letting it run on: the process here appends to a file every few milliseconds, in the
// machine's groups, as Boot starts systemd-nspawn. Against the host's real cgroups.
func TestFreezeAndKill(t *testing.T) {
	m, groups := machineInOwnCgroups(t, "frozen")
	_, err := m.freezerDir()
	require.NoError(t, err, needFreezer)
	ticks := filepath.Join(t.TempDir(), "ticks")
	require.NoError(t, m.start(groups.wrap([]string{"/bin/bash", "-c", `while :; do echo x >>"$0"; sleep 0.005; done`, ticks})))
	size := func() int64 {
		st, err := os.Stat(ticks)
		if err != nil {
			return 0
		}
		return st.Size()
	}
	require.Eventually(t, func() bool { return size() > 10 }, 10*time.Second, 5*time.Millisecond, "the process runs")

	require.NoError(t, m.Freeze())
	frozen := size()
	time.Sleep(200 * time.Millisecond)
	assert.Equal(t, frozen, size(), "nothing runs while frozen")
	assert.True(t, m.Running())

	require.NoError(t, m.Kill())
	assert.False(t, m.Running(), "killed while frozen")
	assert.Equal(t, frozen, size(), "the process did not run on between the thaw and its death")
}

// The exit code of a process that has exited and is not yet reaped is read from /proc: the
// suite reads kubeadm's while the script that ran it is stopped.
func TestReadProcessState(t *testing.T) {
	for _, code := range []int{0, 3} {
		cmd := exec.Command("/bin/sh", "-c", "exit "+strconv.Itoa(code))
		require.NoError(t, cmd.Start())
		require.Eventually(t, func() bool {
			st, err := ReadProcessState(cmd.Process.Pid)
			require.NoError(t, err)
			got, exited := st.Exited()
			return exited && got == code
		}, 10*time.Second, 5*time.Millisecond, "exit %d read while a zombie", code)
		st, err := ReadProcessState(cmd.Process.Pid)
		require.NoError(t, err)
		assert.Equal(t, os.Getpid(), st.PPID)
		_ = cmd.Wait()
	}
	st, err := ReadProcessState(os.Getpid())
	require.NoError(t, err)
	_, exited := st.Exited()
	assert.False(t, exited, "this process runs")
}

// The processes of a unit are read from the unit's group in the hierarchy the machine's systemd
// manages, below "payload" as systemd-nspawn makes it, and from the groups below the unit's.
func TestUnitProcesses(t *testing.T) {
	m, groups := machineInOwnCgroups(t, "units")
	require.NoError(t, m.start(groups.wrap([]string{"sleep", "60"})))
	t.Cleanup(func() { _ = m.Kill() })
	root, err := m.systemdGroupDir()
	require.NoError(t, err)
	// The wrapper (in-cgroups.sh) joins the groups, then execs sleep: wait for the exec.
	var procs []byte
	require.Eventually(t, func() bool {
		procs, err = os.ReadFile(filepath.Join(root, "cgroup.procs"))
		if err != nil {
			return false
		}
		for _, pid := range strings.Fields(string(procs)) {
			if comm, err := os.ReadFile(filepath.Join("/proc", pid, "comm")); err == nil && strings.TrimSpace(string(comm)) == "sleep" {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "sleep runs in the machine's group")
	unit := filepath.Join(root, "payload", "system.slice", "test.service", "sub")
	require.NoError(t, os.MkdirAll(unit, 0o755))
	for _, pid := range strings.Fields(string(procs)) {
		require.NoError(t, os.WriteFile(filepath.Join(unit, "cgroup.procs"), []byte(pid), 0o644))
	}

	found, err := m.UnitProcesses("test.service")
	require.NoError(t, err)
	var commands []string
	for _, p := range found {
		commands = append(commands, p.Command)
	}
	assert.Contains(t, commands, "sleep")
	none, err := m.UnitProcesses("other.service")
	require.NoError(t, err)
	assert.Empty(t, none)
}

// A group below the machine's that froze itself (as runc freezes a container's while it
// changes it) is thawed by Kill too: its processes die instead of keeping their SIGKILL pending
// and the machine's cgroups for ever.
func TestKillThawsSelfFrozenGroups(t *testing.T) {
	m, groups := machineInOwnCgroups(t, "selffrozen")
	freezer, err := m.freezerDir()
	require.NoError(t, err, needFreezer)
	require.NoError(t, m.start(groups.wrap([]string{"/bin/bash", "-c", "sleep 60 & wait"})))
	var child int
	require.Eventually(t, func() bool {
		procs, err := os.ReadFile(filepath.Join(freezer, "cgroup.procs"))
		if err != nil {
			return false
		}
		for _, f := range strings.Fields(string(procs)) {
			pid, _ := strconv.Atoi(f)
			if comm, err := os.ReadFile(filepath.Join("/proc", f, "comm")); err == nil && strings.TrimSpace(string(comm)) == "sleep" {
				child = pid
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond, "the machine's sleep runs")
	container := filepath.Join(freezer, "container.scope")
	require.NoError(t, os.Mkdir(container, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(container, "cgroup.procs"), []byte(strconv.Itoa(child)), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(container, freezerState), []byte("FROZEN"), 0o644))

	require.NoError(t, m.Kill())
	// Dead: gone, or a zombie until whoever inherited it reaps it (this test's PID 1 may reap
	// orphans only every few seconds, or never).
	require.Eventually(t, func() bool {
		st, err := ReadProcessState(child)
		return err != nil || st.State == 'Z'
	}, 10*time.Second, 10*time.Millisecond, "the process of the self-frozen group dies")
	require.NoError(t, groups.remove())
}

// machineInOwnCgroups is a machine that is not booted but has its cgroups, as Boot makes them,
// removed when the test ends: the test starts a plain process in them.
func machineInOwnCgroups(t *testing.T, name string) (*Machine, *machineCgroups) {
	t.Helper()
	m := &Machine{Spec: Spec{Name: uniqueName(t, name)}}
	groups, err := newMachineCgroups(m.cgroupName())
	require.NoError(t, err)
	m.cgroups = groups
	t.Cleanup(func() { _ = groups.remove() })
	return m, groups
}

// uniqueName is name made unique to the test and the process: two go test processes (or two
// tests of one) never share a machine's cgroups. t.TempDir's parent is named after the test
// and made unique by os.MkdirTemp.
func uniqueName(t *testing.T, name string) string {
	return fmt.Sprintf("%s-%d-%s", name, os.Getpid(), filepath.Base(filepath.Dir(t.TempDir())))
}
