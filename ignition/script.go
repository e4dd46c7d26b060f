package ignition

import (
	"embed"
	"errors"
	"fmt"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// The fixed shell of /etc/kubeadm.sh lives in scripts/*.sh so it can be read (and linted) as
// shell; only the user's commands are spliced in between.
//
//go:embed scripts/*.sh
var scripts embed.FS

// kubeadmScript composes /etc/kubeadm.sh: header, pre-kubeadm commands, the kubeadm step of the
// role, the success sentinel (which also removes /etc/kubeadm.yml), post-kubeadm commands. The
// kubeadm step stays a line of its own starting with `kubeadm init` or `kubeadm join`: CAPD's
// bootstrap hooks find it by that text.
//
// The commands are spliced in as text, so one that does not end where it seems to would take
// the lines after it along: checkCommands rejects those before. The empty line after the
// pre-kubeadm commands is a second guard: a trailing backslash that got through joins that
// empty line, not the kubeadm step.
func kubeadmScript(role Role, pre, post []string) (string, error) {
	step := "kubeadm-join.sh"
	if role == RoleInit {
		step = "kubeadm-init.sh"
	}
	var b strings.Builder
	for _, part := range []struct {
		file  string
		lines []string
		// guard adds an empty line after lines, if there are any.
		guard bool
	}{
		{file: "header.sh"},
		{lines: pre, guard: true},
		{file: step},
		{file: "sentinel.sh"},
		{lines: post},
	} {
		if part.file != "" {
			data, err := scripts.ReadFile("scripts/" + part.file)
			if err != nil {
				return "", fmt.Errorf("reading embedded script %s: %w", part.file, err)
			}
			b.Write(data)
			continue
		}
		for _, line := range part.lines {
			b.WriteString(line)
			b.WriteByte('\n')
		}
		if part.guard && len(part.lines) > 0 {
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}

// checkCommands rejects a pre- or post-kubeadm command that is not a complete bash statement
// list. Spliced into the script, an unclosed quote or here-document, a trailing `&&` or `|`, an
// `if` without `fi` or a trailing line continuation would swallow the lines after it: the kubeadm
// step could be skipped and the success sentinel still be written, telling Cluster API that a
// node bootstrapped when kubeadm never ran.
func checkCommands(pre, post []string) *Error {
	for _, list := range []struct {
		field    string
		commands []string
	}{
		{"preKubeadmCommands", pre},
		{"postKubeadmCommands", post},
	} {
		for i, command := range list.commands {
			if err := completeCommand(command); err != nil {
				return errorf(ErrInvalidInput, fmt.Sprintf("%s[%d]", list.field, i), "not a complete shell command: %v", err)
			}
		}
	}
	return nil
}

// errLineContinuation: the command ends with a backslash that escapes the newline after it.
var errLineContinuation = errors.New("it ends with a line continuation (a backslash at the end), " +
	"which would join it with the next line of the bootstrap script")

// completeCommand parses command as bash. A trailing line continuation is not a syntax error
// (the parser joins it with nothing), so command is parsed a second time followed by one more
// statement: that statement must stay a statement of its own.
func completeCommand(command string) error {
	parser := syntax.NewParser(syntax.Variant(syntax.LangBash))
	alone, err := parser.Parse(strings.NewReader(command+"\n"), "")
	if err != nil {
		return err
	}
	followed, err := parser.Parse(strings.NewReader(command+"\ntrue\n"), "")
	if err != nil {
		return err
	}
	if len(followed.Stmts) != len(alone.Stmts)+1 {
		return errLineContinuation
	}
	return nil
}
