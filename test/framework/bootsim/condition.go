package bootsim

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// condition is one Condition*= or Assert*= setting.
type condition struct {
	Assert  bool
	Type    string // "PathExists", "FileNotEmpty", …
	Trigger bool   // "|": a triggering condition
	Negate  bool   // "!"
	Path    string
	Setting string // as written, for messages
}

// conditionTests are the simulated condition types, as src/shared/condition.c tests them. Each
// Condition type has an Assert twin.
var conditionTests = map[string]func(string) bool{
	"PathExists": func(p string) bool {
		_, err := os.Stat(p)
		return err == nil
	},
	"PathExistsGlob": func(p string) bool {
		matches, err := globMatches(p)
		return err == nil && len(matches) > 0
	},
	"PathIsDirectory": func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.IsDir()
	},
	"PathIsSymbolicLink": func(p string) bool {
		fi, err := os.Lstat(p)
		return err == nil && fi.Mode()&fs.ModeSymlink != 0
	},
	"FileNotEmpty": func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular() && fi.Size() > 0
	},
	"FileIsExecutable": func(p string) bool {
		fi, err := os.Stat(p)
		return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
	},
	"DirectoryNotEmpty": directoryNotEmpty,
}

// directoryNotEmpty is condition_test_directory_not_empty(): hidden and backup files do not count,
// and an error other than "missing" or "not a directory" counts as not empty.
func directoryNotEmpty(p string) bool {
	entries, err := os.ReadDir(p)
	if err != nil {
		return !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR)
	}
	for _, e := range entries {
		if !hiddenOrBackupFile(e.Name()) {
			return true
		}
	}
	return false
}

// hiddenOrBackupFile is hidden_or_backup_file() of src/basic/path-util.c.
func hiddenOrBackupFile(name string) bool {
	switch {
	case strings.HasPrefix(name, "."), name == "lost+found", name == "aquota.user", name == "aquota.group",
		strings.HasSuffix(name, "~"):
		return true
	}
	dot := strings.LastIndexByte(name, '.')
	if dot < 0 {
		return false
	}
	switch name[dot+1:] {
	case "ignore", "rpmnew", "rpmsave", "rpmorig", "dpkg-old", "dpkg-new", "dpkg-tmp", "dpkg-dist",
		"dpkg-bak", "dpkg-backup", "dpkg-remove", "ucf-new", "ucf-old", "ucf-dist", "swp", "bak", "old", "new":
		return true
	}
	return false
}

// applyCondition is config_parse_unit_condition_path(). An empty assignment resets the whole list,
// every type: "If any of these options is assigned the empty string, the list of conditions is
// reset completely, all previous condition settings (of any kind) will have no effect"
// (systemd.unit(5)); the same holds for assertions.
func (s *service) applyCondition(key, value string) error {
	c := condition{Assert: strings.HasPrefix(key, "Assert"), Setting: key + "=" + value}
	c.Type = strings.TrimPrefix(strings.TrimPrefix(key, "Condition"), "Assert")
	if _, ok := conditionTests[c.Type]; !ok {
		return notSimulated("%s=%s", key, value)
	}
	list := &s.Conditions
	if c.Assert {
		list = &s.Asserts
	}
	if value == "" {
		*list = nil
		return nil
	}
	v := value
	if strings.HasPrefix(v, "|") {
		c.Trigger, v = true, v[1:]
	}
	if strings.HasPrefix(v, "!") {
		c.Negate, v = true, v[1:]
	}
	p, err := expandSpecifiers(v)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(p, "/") {
		s.warnf("path in condition is not absolute, ignoring: %s", c.Setting)
		return nil
	}
	if c.Type == "PathExistsGlob" && strings.Contains(p, "{") {
		return notSimulated("brace expansion in %s", c.Setting)
	}
	c.Path = pathSimplify(p)
	*list = append(*list, c)
	return nil
}

// checkConditions is condition_test_list(): every regular condition must hold and, when there are
// triggering ("|") conditions, at least one of them. It returns why the list failed.
func checkConditions(list []condition) (ok bool, why string) {
	hasTrigger, triggered := false, false
	var unmet []string
	for _, c := range list {
		held := conditionTests[c.Type](c.Path) != c.Negate
		if !c.Trigger && !held {
			return false, c.Setting + " was not met"
		}
		if c.Trigger {
			hasTrigger = true
			triggered = triggered || held
			if !held {
				unmet = append(unmet, c.Setting)
			}
		}
	}
	if hasTrigger && !triggered {
		return false, "none of the triggering conditions was met: " + strings.Join(unmet, ", ")
	}
	return true, ""
}

// globMatches expands an absolute glob(3) pattern: like filepath.Glob, except that a wildcard does
// not match a leading dot, as in glob(3).
func globMatches(pattern string) ([]string, error) {
	paths := []string{"/"}
	for _, comp := range strings.Split(strings.TrimPrefix(pattern, "/"), "/") {
		if comp == "" {
			continue
		}
		var next []string
		for _, dir := range paths {
			if !strings.ContainsAny(comp, `*?[\`) {
				if _, err := os.Lstat(filepath.Join(dir, comp)); err == nil {
					next = append(next, filepath.Join(dir, comp))
				}
				continue
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				continue
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(comp, ".") {
					continue
				}
				ok, err := filepath.Match(comp, e.Name())
				if err != nil {
					return nil, err
				}
				if ok {
					next = append(next, filepath.Join(dir, e.Name()))
				}
			}
		}
		paths = next
	}
	sort.Strings(paths)
	return paths, nil
}
