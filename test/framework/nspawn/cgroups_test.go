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
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A machine's command starts in a group of its own in every hierarchy the suite is in (so no
// two machines share a cgroup), below the suite's group there; removing the groups removes
// what was made below them too. This runs against the host's real cgroups, as the suite does.
func TestMachineCgroups(t *testing.T) {
	own, err := os.ReadFile("/proc/self/cgroup")
	require.NoError(t, err)
	hs, err := ownHierarchies()
	require.NoError(t, err)
	require.NotEmpty(t, hs, "the suite is in at least one mounted hierarchy")

	name := uniqueName(t, "cabpi-test")
	groups, err := newMachineCgroups(name)
	require.NoError(t, err)
	t.Cleanup(func() { _ = groups.remove() })
	require.Len(t, groups.dirs, len(hs))

	argv := groups.wrap([]string{"cat", "/proc/self/cgroup"})
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	require.NoError(t, err, string(out))
	suite := cgroupPaths(t, string(own))
	machine := cgroupPaths(t, string(out))
	mounts, err := cgroupMounts()
	require.NoError(t, err)
	moved := 0
	for hierarchy, path := range suite {
		if _, ok := mounts[hierarchy]; !ok {
			continue
		}
		moved++
		assert.Equal(t, filepath.Join(path, name), machine[hierarchy], "hierarchy %q: the command runs in the machine's group below the suite's", hierarchy)
	}
	assert.Equal(t, len(hs), moved)

	// What the machine's systemd makes below its group goes with it.
	for _, d := range groups.dirs {
		require.NoError(t, os.Mkdir(filepath.Join(d, "system.slice"), 0o755))
		require.NoError(t, os.Mkdir(filepath.Join(d, "system.slice", "unit.service"), 0o755))
	}
	require.NoError(t, groups.remove())
	for _, d := range groups.dirs {
		assert.NoDirExists(t, d)
	}
}

// cgroupPaths indexes /proc/PID/cgroup by hierarchy.
func cgroupPaths(t *testing.T, data string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		require.Len(t, parts, 3, line)
		out[parts[1]] = parts[2]
	}
	return out
}

// Groups an earlier run's machines left are removed, with what is below them; others stay.
func TestRemoveStaleCgroups(t *testing.T) {
	prefix := uniqueName(t, "stale")
	stale, err := newMachineCgroups(machineCgroupPrefix + prefix + "-a")
	require.NoError(t, err)
	// A machine's, of another suite (another prefix): left alone.
	another, err := newMachineCgroups(machineCgroupPrefix + uniqueName(t, "another"))
	require.NoError(t, err)
	other, err := newMachineCgroups(uniqueName(t, "cabpi-other"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = stale.remove(); _ = another.remove(); _ = other.remove() })
	for _, d := range stale.dirs {
		require.NoError(t, os.Mkdir(filepath.Join(d, "init.scope"), 0o755))
	}

	require.NoError(t, RemoveStaleCgroups(prefix))
	for _, d := range stale.dirs {
		assert.NoDirExists(t, d)
	}
	for _, d := range another.dirs {
		assert.DirExists(t, d, "another suite's machine")
	}
	for _, d := range other.dirs {
		assert.DirExists(t, d, "not a machine's")
	}
}
