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

package bootcheck

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"
)

// unitDir is where Ignition writes units and drop-ins.
const unitDir = "/etc/systemd/system"

// imageUnits are units that the images (Flatcar, Fedora CoreOS, the real-node suite's) ship and
// that cabpi's units depend on, but that a host does not have: Verify puts an empty service of each
// on systemd's unit path, standing for the image's. What the real ones do is the real-node suite's
// to prove (docs/nodes-in-tests.md).
var imageUnits = []string{"coreos-metadata.service", "afterburn.service", "containerd.service"}

// hostUnitDirs are the host's own unit directories, searched after the applied root's and the
// image's: they give systemd's targets (network-online.target, multi-user.target).
var hostUnitDirs = []string{"/usr/lib/systemd/system", "/lib/systemd/system"}

// File is one file of a unit as systemd loads it: the unit file or a drop-in, parsed by
// go-systemd's unit parser.
type File struct {
	Path    string // the path on the node
	Options []*unit.UnitOption
}

// Unit is a unit and its drop-ins, in the order systemd applies them.
type Unit struct {
	Name  string
	Files []File
}

// Values returns every value of section's name across the unit file and its drop-ins, in the
// order systemd reads them, each as written (dependencies and environment add up; an empty
// value is a reset, which the caller sees).
func (u Unit) Values(section, name string) []string {
	var values []string
	for _, f := range u.Files {
		for _, o := range f.Options {
			if o.Section == section && o.Name == name {
				values = append(values, o.Value)
			}
		}
	}
	return values
}

// Words returns the space-separated words of every value of section's name: the unit names of a
// dependency setting (After=a b), for example.
func (u Unit) Words(section, name string) []string {
	var words []string
	for _, v := range u.Values(section, name) {
		words = append(words, strings.Fields(v)...)
	}
	return words
}

// ReadUnit reads the unit name and its drop-ins under root (an applied Ignition config, see
// ignitionapply.Apply) as systemd finds them: systemd-analyze cat-config lists the unit file and
// the drop-ins of <name>.d (where Ignition writes them) in the order systemd applies them. Each
// is parsed with go-systemd's unit parser. cat-config does not list the drop-ins that systemd also
// takes from service.d and from a name's dash prefixes: Verify loads those.
func ReadUnit(t testing.TB, root, name string) Unit {
	t.Helper()
	u, err := readUnit(root, name)
	if err != nil {
		t.Fatalf("reading unit %s: %v", name, err)
	}
	return u
}

func readUnit(root, name string) (Unit, error) {
	out, err := systemdAnalyze(nil, "--root="+root, "cat-config", filepath.Join(strings.TrimPrefix(unitDir, "/etc/"), name))
	if err != nil {
		return Unit{}, err
	}
	// cat-config prints "# <path>" before each file's content; the paths are the host's, below
	// root. The files are read again from their paths (not split out of the output), so that the
	// parser sees each file exactly as written.
	u := Unit{Name: name}
	for _, line := range strings.Split(string(out), "\n") {
		hostPath, ok := strings.CutPrefix(line, "# ")
		if !ok || !strings.HasPrefix(hostPath, root+"/") {
			continue
		}
		data, err := os.ReadFile(hostPath)
		if err != nil {
			return Unit{}, err
		}
		opts, err := unit.DeserializeOptions(bytes.NewReader(data))
		if err != nil {
			return Unit{}, fmt.Errorf("parsing %s: %w", hostPath, err)
		}
		u.Files = append(u.Files, File{Path: strings.TrimPrefix(hostPath, root), Options: opts})
	}
	if len(u.Files) == 0 || u.Files[0].Path != filepath.Join(unitDir, name) {
		return Unit{}, fmt.Errorf("no unit file %s under %s (systemd-analyze cat-config printed:\n%s)", name, root, out)
	}
	return u, nil
}

// Verify runs systemd-analyze verify on units as the applied root under root has them, with the
// image's units (imageUnits) and the host's targets beside them: the real systemd loads each unit
// with its drop-ins, resolves its dependencies and checks its commands. It fails the test on
// anything systemd reports, a warning it would log and ignore included.
func Verify(t testing.TB, root string, units ...string) {
	t.Helper()
	if err := verify(t.TempDir(), root, units...); err != nil {
		t.Fatal(err)
	}
}

func verify(scratch, root string, units ...string) error {
	if len(units) == 0 {
		return errors.New("verify: no units named")
	}
	image := filepath.Join(scratch, "image-units")
	if err := os.MkdirAll(image, 0o755); err != nil {
		return err
	}
	for _, name := range imageUnits {
		stub := unit.Serialize([]*unit.UnitOption{
			unit.NewUnitOption("Unit", "Description", "stands for the image's "+name),
			unit.NewUnitOption("Service", "Type", "oneshot"),
			unit.NewUnitOption("Service", "ExecStart", "/bin/true"),
		})
		var b bytes.Buffer
		if _, err := b.ReadFrom(stub); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(image, name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	path := []string{filepath.Join(root, unitDir), image}
	for _, d := range hostUnitDirs {
		// /lib is a link to /usr/lib on a merged /usr: search the directory once.
		if real, err := filepath.EvalSymlinks(d); err == nil && !slices.Contains(path, real) {
			path = append(path, real)
		}
	}
	// No trailing ":": the host's /etc/systemd/system and /run/systemd stay out.
	env := []string{"SYSTEMD_UNIT_PATH=" + strings.Join(path, ":"), "SYSTEMD_LOG_COLOR=0"}
	out, err := systemdAnalyze(env, append([]string{"verify", "--man=no"}, units...)...)
	if err != nil {
		return fmt.Errorf("systemd-analyze verify %s: %w", strings.Join(units, " "), err)
	}
	if len(bytes.TrimSpace(out)) > 0 {
		return fmt.Errorf("systemd-analyze verify %s reported:\n%s", strings.Join(units, " "), out)
	}
	return nil
}

// Enabled reports whether the first boot enables unit under root: the real systemctl applies the
// presets Ignition wrote (systemctl --root preset), after the images' last preset, "disable *"
// (Flatcar and Fedora CoreOS enable only what a preset names), and is asked whether the unit is
// enabled.
func Enabled(t testing.TB, root, name string) bool {
	t.Helper()
	enabled, err := enabled(root, name)
	if err != nil {
		t.Fatal(err)
	}
	return enabled
}

func enabled(root, name string) (bool, error) {
	presets := filepath.Join(root, "etc/systemd/system-preset")
	if err := os.MkdirAll(presets, 0o755); err != nil {
		return false, err
	}
	last := filepath.Join(presets, "99-default.preset")
	if _, err := os.Lstat(last); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(last, []byte("disable *\n"), 0o644); err != nil {
			return false, err
		}
	}
	if out, err := exec.Command("systemctl", "--root="+root, "preset", name).CombinedOutput(); err != nil {
		return false, fmt.Errorf("systemctl --root preset %s: %w\n%s", name, err, out)
	}
	out, err := exec.Command("systemctl", "--root="+root, "is-enabled", name).Output()
	state := strings.TrimSpace(string(out))
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return state == "enabled", nil
	case errors.As(err, &exitErr) && state != "":
		return false, nil // "disabled" and the like: is-enabled exits non-zero
	default:
		return false, fmt.Errorf("systemctl --root is-enabled %s: %w", name, err)
	}
}

// systemdAnalyze runs the host's systemd-analyze (Debian's systemd package, make deps) and
// returns what it printed, stdout and stderr together.
func systemdAnalyze(env []string, args ...string) ([]byte, error) {
	bin, err := exec.LookPath("systemd-analyze")
	if err != nil {
		return nil, fmt.Errorf("the unit checks need systemd-analyze (Debian's systemd package; make deps): %w", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("%w\n%s", err, out)
	}
	return out, nil
}
