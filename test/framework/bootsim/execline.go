package bootsim

import "strings"

// parseExecLine is config_parse_exec(): one or more commands separated by a lone ";", each with
// optional prefixes and an absolute executable path, words split and unquoted with C escapes and
// specifiers resolved. It returns the commands, warnings systemd would log, and why systemd would
// refuse to load the unit (an invalid line without the "-" prefix).
func parseExecLine(value string) (cmds []execCommand, warnings []string, bad string, err error) {
	p := value
	for {
		first, rest, found, warning, err := extractFirstWordAndWarn(p, extractUnquote|extractCUnescape)
		if warning != "" {
			warnings = append(warnings, warning)
		}
		if err != nil {
			return cmds, append(warnings, "invalid syntax, ignoring the rest of the line: "+err.Error()), "", nil
		}
		if !found {
			return cmds, warnings, "", nil
		}
		p = rest
		if first == ";" {
			continue
		}

		var cmd execCommand
		separateArgv0, privilege := false, ""
		f := first
	prefixes:
		for f != "" {
			switch {
			case f[0] == '-' && !cmd.IgnoreFailure:
				cmd.IgnoreFailure = true
			case f[0] == '@' && !separateArgv0:
				separateArgv0 = true
			case f[0] == ':' && !cmd.NoEnvExpand:
				cmd.NoEnvExpand = true
			case f[0] == '+' && privilege == "":
				privilege = "+"
			case f[0] == '!' && privilege == "":
				privilege = "!"
			case f[0] == '!' && privilege == "!":
				privilege = "!!"
			default:
				break prefixes
			}
			f = f[1:]
		}
		// "+", "!" and "!!" lift the sandboxing and credentials the unit configures; the simulator
		// accepts neither, so they change nothing here.
		if strings.HasPrefix(f, "|") {
			return nil, nil, "", notSimulated("the \"|\" prefix (run via the shell)")
		}
		invalid := func(msg string) ([]execCommand, []string, string, error) {
			if cmd.IgnoreFailure {
				return cmds, append(warnings, msg+", ignoring"), "", nil
			}
			return cmds, warnings, msg, nil
		}
		path, err := expandSpecifiers(f)
		if err != nil {
			return nil, nil, "", err
		}
		switch {
		case path == "":
			return invalid("empty path in command line")
		case !stringIsSafe(path):
			return invalid("executable name contains special characters: " + path)
		case strings.HasSuffix(path, "/"):
			return invalid("executable path specifies a directory: " + path)
		case strings.HasPrefix(path, "/") && !pathIsValid(path), !strings.HasPrefix(path, "/") && !filenameIsValid(path):
			return invalid("neither a valid executable name nor an absolute path: " + path)
		case !strings.HasPrefix(path, "/"):
			return nil, nil, "", notSimulated("the executable %q is not an absolute path (systemd would search a fixed path)", path)
		}
		if !separateArgv0 {
			cmd.Argv = append(cmd.Argv, path)
		}
		cmd.Path = pathSimplify(path)

		semicolon := false
		for p != "" {
			if p[0] == ';' && (len(p) == 1 || isWhitespace(p[1])) {
				p, semicolon = strings.TrimLeft(p[1:], whitespace), true
				break
			}
			if strings.HasPrefix(p, `\;`) && (len(p) == 2 || isWhitespace(p[2])) {
				p = strings.TrimLeft(p[2:], whitespace)
				cmd.Argv = append(cmd.Argv, ";")
				continue
			}
			w, rest, found, warning, err := extractFirstWordAndWarn(p, extractUnquote|extractCUnescape)
			if warning != "" {
				warnings = append(warnings, warning)
			}
			if err != nil {
				return invalid(err.Error())
			}
			if !found {
				break
			}
			p = rest
			if w, err = expandSpecifiers(w); err != nil {
				return nil, nil, "", err
			}
			cmd.Argv = append(cmd.Argv, w)
		}
		if len(cmd.Argv) == 0 {
			return invalid("empty executable name or zeroeth argument")
		}
		cmds = append(cmds, cmd)
		if !semicolon {
			return cmds, warnings, "", nil
		}
	}
}
