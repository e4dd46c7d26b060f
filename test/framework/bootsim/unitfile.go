package bootsim

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/coreos/go-systemd/v22/unit"
)

// unitDir is where Ignition writes units and drop-ins, and the only unit directory simulated.
const unitDir = "/etc/systemd/system"

// errNotSimulated marks settings and situations the simulator refuses rather than guesses.
var errNotSimulated = errors.New("not simulated")

func notSimulated(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errNotSimulated, fmt.Sprintf(format, args...))
}

// unitSource is one file of a unit: the unit file or a drop-in.
type unitSource struct {
	Path    string
	Content []byte
}

// service is a service unit after its file and drop-ins were applied, as systemd loads it.
type service struct {
	Name string

	Requires, Wants, After, Before []string
	WantedBy, RequiredBy           []string
	Conditions, Asserts            []condition

	Type            string // "simple", "exec" or "oneshot"
	typeSet         bool
	remainAfterExit bool

	Environment      []string // Environment= assignments, NAME=VALUE, a later one replacing an earlier one
	EnvironmentFiles []string // EnvironmentFile= entries, "-" prefix kept
	Exec             map[string][]execCommand

	// BadSetting is why systemd would refuse to load the unit ("bad-setting"); the unit then
	// cannot start.
	BadSetting string
	Warnings   []string
}

// execCommand is one command of an ExecStartPre=, ExecStart= or ExecStartPost= line.
type execCommand struct {
	Path          string   // executable, absolute and simplified
	Argv          []string // argv[0] first, before environment variable expansion
	IgnoreFailure bool     // "-" prefix
	NoEnvExpand   bool     // ":" prefix
}

// The Exec directives simulated, in the order a start runs them.
var execDirectives = []string{"ExecStartPre", "ExecStart", "ExecStartPost"}

// readUnitSources reads the unit file of name and its drop-ins from /etc/systemd/system, in the
// order systemd applies them: the unit file, then every *.conf drop-in sorted by file name across
// the drop-in directories, where a more specific directory's file shadows a same-named one in
// service.d (or in a dash-prefix directory). Masked drop-ins (links to /dev/null, empty files)
// contribute nothing.
func readUnitSources(root, name string) ([]unitSource, error) {
	main := filepath.Join(root, unitDir, name)
	if _, err := os.Lstat(main); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, notSimulated("%s has no unit file in %s (units elsewhere are not simulated)", name, unitDir)
		}
		return nil, err
	}
	masked, err := nullOrEmpty(main)
	if err != nil {
		return nil, err
	}
	if masked {
		return nil, notSimulated("%s is masked (%s links to /dev/null or is empty)", name, main)
	}
	content, err := os.ReadFile(main)
	if err != nil {
		return nil, err
	}
	sources := []unitSource{{Path: unitDir + "/" + name, Content: content}}

	chosen := map[string]string{} // drop-in file name -> path, the most specific directory winning
	for _, dir := range dropinDirs(name) {
		entries, err := os.ReadDir(filepath.Join(root, unitDir, dir))
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading drop-ins: %w", err)
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".conf") || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			if e.Type().IsRegular() || e.Type()&fs.ModeSymlink != 0 {
				chosen[e.Name()] = unitDir + "/" + dir + "/" + e.Name()
			}
		}
	}
	names := make([]string, 0, len(chosen))
	for n := range chosen {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := chosen[n]
		masked, err := nullOrEmpty(filepath.Join(root, p))
		if err != nil {
			return nil, err
		}
		if masked {
			continue
		}
		content, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return nil, fmt.Errorf("reading drop-in: %w", err)
		}
		sources = append(sources, unitSource{Path: p, Content: content})
	}
	return sources, nil
}

// dropinDirs lists the drop-in directories of a unit, least specific first: "service.d", then one
// per dash-separated prefix ("foo-.service.d" for foo-bar.service), then "<name>.d".
func dropinDirs(name string) []string {
	dot := strings.LastIndexByte(name, '.')
	prefix, typ := name[:dot], name[dot+1:]
	dirs := []string{typ + ".d"}
	for i := 1; i < len(prefix); i++ {
		if prefix[i] == '-' {
			dirs = append(dirs, prefix[:i+1]+"."+typ+".d")
		}
	}
	return append(dirs, name+".d")
}

// nullOrEmpty is null_or_empty_path(): a link to /dev/null or an empty file masks.
func nullOrEmpty(p string) (bool, error) {
	fi, err := os.Stat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return false, fmt.Errorf("%s is a dangling link: %w", p, err)
		}
		return false, err
	}
	if fi.Mode()&fs.ModeCharDevice != 0 {
		target, err := filepath.EvalSymlinks(p)
		return err == nil && target == "/dev/null", err
	}
	return fi.Mode().IsRegular() && fi.Size() == 0, nil
}

// parseService applies the unit file and drop-ins in order with systemd's rules: list settings
// accumulate and an empty assignment resets them (except dependencies, which systemd never
// resets), other settings take the last assignment.
func parseService(name string, sources []unitSource) (*service, error) {
	s := &service{Name: name, Exec: map[string][]execCommand{}}
	for _, src := range sources {
		opts, err := unit.DeserializeOptions(bytes.NewReader(src.Content))
		if err != nil {
			return nil, notSimulated("%s does not parse as a unit file: %v", src.Path, err)
		}
		for _, o := range opts {
			value, err := joinContinuations(o.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: %s=: %w", src.Path, o.Name, err)
			}
			if err := s.apply(o.Section, o.Name, value); err != nil {
				return nil, fmt.Errorf("%s: %w", src.Path, err)
			}
		}
	}
	s.finish()
	return s, nil
}

// joinContinuations turns the value go-systemd returns for continued lines ("a \\\n b") into
// what systemd uses: each backslash-newline becomes a space.
func joinContinuations(v string) (string, error) {
	if !strings.Contains(v, "\n") {
		return v, nil
	}
	lines := strings.Split(strings.TrimSuffix(v, "\n"), "\n")
	for _, l := range lines[1:] {
		if t := strings.TrimLeft(l, whitespace); t != "" && strings.ContainsRune("#;", rune(t[0])) {
			return "", notSimulated("a comment line inside a continued value")
		}
	}
	joined := ""
	for i, l := range lines {
		if i < len(lines)-1 || strings.HasSuffix(l, "\\") {
			l = strings.TrimSuffix(l, "\\") + " "
		}
		joined += l
	}
	return strings.TrimSpace(joined), nil
}

func (s *service) warnf(format string, args ...any) {
	s.Warnings = append(s.Warnings, fmt.Sprintf(format, args...))
}

func (s *service) apply(section, key, value string) error {
	switch section {
	case "Unit":
		return s.applyUnit(key, value)
	case "Service":
		return s.applyService(key, value)
	case "Install":
		return s.applyInstall(key, value)
	}
	if !strings.HasPrefix(section, "X-") {
		s.warnf("unknown section [%s], ignored by systemd", section)
	}
	return nil
}

func (s *service) applyUnit(key, value string) error {
	switch key {
	case "Description", "Documentation":
		return nil
	case "Requires":
		return appendDependencies(&s.Requires, value)
	case "Wants":
		return appendDependencies(&s.Wants, value)
	case "After":
		return appendDependencies(&s.After, value)
	case "Before":
		return appendDependencies(&s.Before, value)
	}
	if strings.HasPrefix(key, "Condition") || strings.HasPrefix(key, "Assert") {
		return s.applyCondition(key, value)
	}
	return notSimulated("[Unit] %s=%s", key, value)
}

// appendDependencies adds the unit names of a dependency setting. An empty assignment does not
// reset dependencies: systemd's config_parse_unit_deps() has no reset.
func appendDependencies(list *[]string, value string) error {
	for {
		w, rest, found, err := extractFirstWord(value, extractRetainEscape)
		if err != nil || !found {
			return err
		}
		name, err := expandSpecifiers(w)
		if err != nil {
			return err
		}
		*list = append(*list, name)
		value = rest
	}
}

func (s *service) applyService(key, value string) error {
	switch key {
	case "Type":
		switch value {
		case "simple", "exec", "oneshot":
			s.Type, s.typeSet = value, true
		case "forking", "notify", "notify-reload", "dbus", "idle":
			return notSimulated("Type=%s", value)
		default:
			s.warnf("failed to parse service type, ignoring: %s", value)
		}
		return nil
	case "RemainAfterExit":
		if b, ok := parseBoolean(value); ok {
			s.remainAfterExit = b
		} else {
			s.warnf("failed to parse RemainAfterExit=, ignoring: %s", value)
		}
		return nil
	case "Environment":
		return s.applyEnvironment(value)
	case "EnvironmentFile":
		return s.applyEnvironmentFile(value)
	case "SyslogIdentifier", "KillMode":
		return nil // where output is logged and how the unit is stopped: no effect on the start
	case "StandardInput":
		if value == "" || value == "null" {
			return nil
		}
	case "StandardOutput", "StandardError":
		switch value {
		case "", "inherit", "null", "tty", "journal", "kmsg", "journal+console", "kmsg+console", "syslog", "syslog+console":
			return nil // output goes elsewhere; the simulator captures it in Step.Output either way
		}
	case "User", "Group":
		if value == "" || value == "root" || value == "0" {
			return nil
		}
	case "WorkingDirectory":
		if value == "" || value == "/" || value == "-/" {
			return nil
		}
	case "Restart":
		if value == "" || value == "no" {
			return nil
		}
	}
	if strings.HasPrefix(key, "Exec") {
		for _, d := range execDirectives {
			if key == d {
				return s.applyExec(key, value)
			}
		}
	}
	return notSimulated("[Service] %s=%s", key, value)
}

func (s *service) applyInstall(key, value string) error {
	switch key {
	case "WantedBy":
		return appendDependencies(&s.WantedBy, value)
	case "RequiredBy":
		return appendDependencies(&s.RequiredBy, value)
	}
	return nil // Alias=, Also=, …: only systemctl enable reads [Install]
}

// applyEnvironment is config_parse_environ(): space-separated assignments, quotes group, C
// escapes decode, no variable expansion; an invalid assignment is ignored, a syntax error ignores
// the rest of the line, an empty assignment resets.
func (s *service) applyEnvironment(value string) error {
	if value == "" {
		s.Environment = nil
		return nil
	}
	for {
		w, rest, found, err := extractFirstWord(value, extractUnquote|extractCUnescape)
		if err != nil {
			s.warnf("invalid syntax, ignoring: Environment=%s", value)
			return nil
		}
		if !found {
			return nil
		}
		value = rest
		assignment, err := expandSpecifiers(w)
		if err != nil {
			return err
		}
		if !envAssignmentValid(assignment) {
			s.warnf("invalid environment assignment, ignoring: %s", assignment)
			continue
		}
		s.Environment = envReplace(s.Environment, assignment)
	}
}

// envReplace sets a NAME=VALUE assignment in env, replacing one of the same name.
func envReplace(env []string, assignment string) []string {
	name, _, _ := strings.Cut(assignment, "=")
	for i, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			out := append(env[:i:i], env[i+1:]...)
			return append(out, assignment)
		}
	}
	return append(env, assignment)
}

// applyEnvironmentFile is config_parse_unit_env_file(): the path (or glob), optionally prefixed
// with "-", must be absolute.
func (s *service) applyEnvironmentFile(value string) error {
	if value == "" {
		s.EnvironmentFiles = nil
		return nil
	}
	v, err := expandSpecifiers(value)
	if err != nil {
		return err
	}
	if p := strings.TrimPrefix(v, "-"); !strings.HasPrefix(p, "/") {
		s.warnf("path %q is not absolute, ignoring: EnvironmentFile=%s", p, value)
		return nil
	}
	s.EnvironmentFiles = append(s.EnvironmentFiles, v)
	return nil
}

// applyExec appends the commands of an Exec line; an empty assignment resets the list.
func (s *service) applyExec(key, value string) error {
	if strings.TrimLeft(value, whitespace) == "" {
		s.Exec[key] = nil
		return nil
	}
	cmds, warnings, bad, err := parseExecLine(value)
	if err != nil {
		return fmt.Errorf("%s=%s: %w", key, value, err)
	}
	for _, w := range warnings {
		s.warnf("%s=%s: %s", key, value, w)
	}
	if bad != "" && s.BadSetting == "" {
		s.BadSetting = fmt.Sprintf("%s=%s: %s", key, value, bad)
	}
	s.Exec[key] = append(s.Exec[key], cmds...)
	return nil
}

// finish fills in defaults and checks what service_verify() checks.
func (s *service) finish() {
	if !s.typeSet {
		s.Type = "oneshot"
		if len(s.Exec["ExecStart"]) > 0 {
			s.Type = "simple"
		}
	}
	if s.BadSetting != "" {
		return
	}
	switch start := s.Exec["ExecStart"]; {
	case len(start) == 0:
		s.BadSetting = "Service has no ExecStart=, ExecStop=, or SuccessAction=. Refusing."
	case s.Type != "oneshot" && len(start) > 1:
		s.BadSetting = "Service has more than one ExecStart= setting, which is only allowed for Type=oneshot services. Refusing."
	}
}
