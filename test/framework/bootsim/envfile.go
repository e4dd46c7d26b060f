package bootsim

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
)

// defaultPath is the PATH systemd gives system services on a merged-/usr system such as Flatcar
// and Fedora CoreOS. Nothing else of the test process's environment reaches the unit.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"

// invocationID stands in for the random 128-bit ID systemd gives each activation.
const invocationID = "b00751b00751b00751b00751b0075100"

// execEnvironment builds the environment of one command the way exec_invoke() merges it: the
// manager's default (PATH), the per-invocation variables, Environment=, then the
// EnvironmentFile= files, each overriding what came before. The files are read for every command,
// as systemd does, so an ExecStartPre= may write one that ExecStart= reads.
func (s *service) execEnvironment() ([]string, error) {
	env := []string{defaultPath, "INVOCATION_ID=" + invocationID}
	for _, kv := range s.Environment {
		env = envReplace(env, kv)
	}
	files, err := loadEnvironmentFiles(s.EnvironmentFiles)
	if err != nil {
		return nil, err
	}
	for _, kv := range files {
		env = envReplace(env, kv)
	}
	sort.Strings(env)
	return env, nil
}

// loadEnvironmentFiles is exec_context_load_environment(): each entry is an absolute path or glob,
// "-" makes it optional; a missing or unreadable mandatory file fails the command's spawn.
func loadEnvironmentFiles(entries []string) ([]string, error) {
	var env []string
	for _, entry := range entries {
		name, optional := strings.CutPrefix(entry, "-")
		paths := []string{name}
		if strings.ContainsAny(name, `*?[`) {
			matches, err := globMatches(name)
			if err != nil || len(matches) == 0 {
				if optional {
					continue
				}
				return nil, fmt.Errorf("%s: %w", name, fs.ErrNotExist)
			}
			paths = matches
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err == nil {
				var vars []string
				vars, err = parseEnvFile(string(data))
				for _, kv := range vars {
					env = envReplace(env, kv)
				}
			}
			if err != nil {
				if optional {
					continue
				}
				return nil, err
			}
		}
	}
	return env, nil
}

// errEnvFileUTF8 is why systemd refuses an environment file: a key or value that is not UTF-8.
var errEnvFileUTF8 = errors.New("invalid UTF-8 in an environment file")

// parseEnvFile ports parse_env_file_internal() and load_env_file() (src/basic/env-file.c):
// KEY=VALUE lines, "#" and ";" comments, values unquoted with shell-like '…' and "…", backslash
// escapes and continuations. Assignments with an invalid name are dropped, as
// strv_env_clean_with_callback() does; a later assignment replaces an earlier one.
func parseEnvFile(content string) ([]string, error) {
	const (
		preKey = iota
		key
		preValue
		value
		valueEscape
		singleQuoteValue
		doubleQuoteValue
		doubleQuoteValueEscape
		comment
		commentEscape
	)
	const newline, shellNeedEscape = "\n\r", "\"\\`$"
	var (
		env                  []string
		k, v                 []byte
		lastKeyWS, lastValWS = -1, -1
		state                = preKey
	)
	push := func() error {
		if lastKeyWS >= 0 {
			k = k[:lastKeyWS]
		}
		if !utf8Valid(string(k)) || !utf8Valid(string(v)) {
			return errEnvFileUTF8
		}
		if kv := string(k) + "=" + string(v); envAssignmentValid(kv) {
			env = envReplace(env, kv)
		}
		k, v = k[:0], nil
		return nil
	}
	for i := 0; i < len(content); i++ {
		c := content[i]
		isNL := strings.IndexByte(newline, c) >= 0
		switch state {
		case preKey:
			if c == '#' || c == ';' {
				state = comment
			} else if !isWhitespace(c) {
				state, lastKeyWS = key, -1
				k = append(k, c)
			}
		case key:
			switch {
			case isNL:
				state, k = preKey, k[:0]
			case c == '=':
				state, lastValWS = preValue, -1
			default:
				if !isWhitespace(c) {
					lastKeyWS = -1
				} else if lastKeyWS < 0 {
					lastKeyWS = len(k)
				}
				k = append(k, c)
			}
		case preValue:
			switch {
			case isNL:
				state = preKey
				if err := push(); err != nil {
					return nil, err
				}
			case c == '\'':
				state = singleQuoteValue
			case c == '"':
				state = doubleQuoteValue
			case c == '\\':
				state = valueEscape
			case !isWhitespace(c):
				state = value
				v = append(v, c)
			}
		case value:
			switch {
			case isNL:
				state = preKey
				if lastValWS >= 0 {
					v = v[:lastValWS]
				}
				if err := push(); err != nil {
					return nil, err
				}
			case c == '\\':
				state, lastValWS = valueEscape, -1
			default:
				if !isWhitespace(c) {
					lastValWS = -1
				} else if lastValWS < 0 {
					lastValWS = len(v)
				}
				v = append(v, c)
			}
		case valueEscape:
			state = value
			if !isNL { // an escaped newline is eaten
				v = append(v, c)
			}
		case singleQuoteValue:
			if c == '\'' {
				state = preValue
			} else {
				v = append(v, c)
			}
		case doubleQuoteValue:
			if c == '"' {
				state = preValue
			} else if c == '\\' {
				state = doubleQuoteValueEscape
			} else {
				v = append(v, c)
			}
		case doubleQuoteValueEscape:
			state = doubleQuoteValue
			if strings.IndexByte(shellNeedEscape, c) >= 0 {
				v = append(v, c)
			} else if c != '\n' {
				v = append(v, '\\', c) // kept as the shell keeps it
			}
		case comment:
			if c == '\\' {
				state = commentEscape
			} else if isNL {
				state = preKey
			}
		case commentEscape:
			if isNL {
				state = preKey
			} else {
				state = comment
			}
		}
	}
	switch state {
	case preValue, value, valueEscape, singleQuoteValue, doubleQuoteValue, doubleQuoteValueEscape:
		if state == value && lastValWS >= 0 {
			v = v[:lastValWS]
		}
		if err := push(); err != nil {
			return nil, err
		}
	}
	return env, nil
}
