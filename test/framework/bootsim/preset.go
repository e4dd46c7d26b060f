package bootsim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// presetDir is where Ignition writes its preset file (20-ignition.preset). Vendor presets in
// /usr/lib/systemd/system-preset are the host's, not the node's, so they are not read.
const presetDir = "/etc/systemd/system-preset"

// presetEnabled reports whether the presets enable unit, as systemctl preset decides on first
// boot: the *.preset files sorted by name, the first line whose glob matches the unit wins. It
// also returns that line. A unit no line matches counts as not enabled, as on Flatcar and Fedora
// CoreOS, whose vendor presets end with "disable *".
func presetEnabled(root, unit string) (enabled bool, by string, warnings []string, err error) {
	files, err := filepath.Glob(filepath.Join(root, presetDir, "*.preset"))
	if err != nil {
		return false, "", nil, err
	}
	sort.Slice(files, func(i, j int) bool { return filepath.Base(files[i]) < filepath.Base(files[j]) })
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue // a dangling link
		}
		if err != nil {
			return false, "", nil, fmt.Errorf("reading presets: %w", err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			l := strings.TrimSpace(line)
			if l == "" || strings.ContainsRune("#;", rune(l[0])) {
				continue
			}
			action, pattern, ok := parsePresetLine(l)
			if !ok {
				warnings = append(warnings, fmt.Sprintf("%s: couldn't parse preset line, ignoring: %s", filepath.Base(f), l))
				continue
			}
			if presetMatch(pattern, unit) {
				return action == "enable", filepath.Base(f) + ": " + l, warnings, nil
			}
		}
	}
	return false, "", warnings, nil
}

// parsePresetLine reads "enable PATTERN [INSTANCES…]", "disable PATTERN" or "ignore PATTERN".
func parsePresetLine(l string) (action, pattern string, ok bool) {
	for _, a := range []string{"enable", "disable", "ignore"} {
		rest, found := strings.CutPrefix(l, a)
		if !found || rest == "" || !isWhitespace(rest[0]) {
			continue
		}
		rest = strings.TrimLeft(rest, whitespace)
		if a == "enable" { // the pattern is the first word; instances may follow
			rest, _, _ = strings.Cut(rest, " ")
		}
		return a, rest, rest != ""
	}
	return "", "", false
}

// presetMatch is fnmatch(pattern, unit, FNM_NOESCAPE): backslashes are ordinary characters.
func presetMatch(pattern, unit string) bool {
	ok, err := path.Match(strings.ReplaceAll(pattern, `\`, `\\`), unit)
	return err == nil && ok
}
