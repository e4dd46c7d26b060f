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

// kubeadmScript composes /etc/kubeadm.sh. The fixed parts live in scripts/*.sh and carry few
// comments, because every byte counts against the platforms' user-data limits; the reasons are
// here and in docs/adr/007-bootstrap-unit-and-sentinel.md.
//
//   - header.sh: bash with -euo pipefail, so any failure stops the script before the sentinel;
//     /opt/bin appended to PATH, because images that add kubeadm to Flatcar's read-only /usr put
//     it there and systemd does not search it (system binaries keep precedence).
//   - with a Kubernetes source other than the image (kubernetes.go), its step: the sysext is
//     merged, or the release binaries (checked by Ignition against their pins) are installed, and kubeadm
//     and the kubelet are of the Machine's version; before the user's commands, which may use them.
//   - metadata.sh and its call, when the node is named from metadata: the named attributes are
//     substituted into /etc/kubeadm.yml, before the user's commands see it.
//   - attempt.sh, the role's attempt-worker.sh or attempt-control-plane.sh, and the call
//     (attempt.go, docs/adr/034-interrupted-first-boot.md): a first attempt keeps a copy of what
//     Ignition wrote below /etc/kubernetes and /var/lib/kubelet and marks itself on the disk; a
//     run that finds an interrupted attempt's mark decides from what kubeadm and the kubelet left
//     whether kubeadm had finished (done: a worker whose kubelet has its certificate), can resume
//     over what it left (resume: a control-plane node whose etcd member has data), or is reset
//     with kubeadm reset and the copy (run). The role's file defines cabpi_left, that decision
//     for the role, so that a worker's script carries no control plane's step. Metadata, the
//     source step and the substitution come first: each is safe to repeat, and kubeadm reset
//     needs the source's kubeadm. cabpi_attempt sets CABPI_KUBEADM (run, resume or done) and, to
//     resume, CABPI_SKIP_PHASES; a first attempt writes the kubelet's hold (KubeletHoldPath); it
//     starts the kubelet itself when kubeadm will not.
//   - etcd-voter.sh and its call, for a control-plane join only: a resumed join whose etcd member
//     already votes skips kubeadm's etcd join (resumePhases.voterSkip).
//   - the pre-kubeadm commands, in a subshell, unless kubeadm had finished, so that nothing they do to the shell (set +e,
//     traps, functions or aliases named kubeadm, PATH) reaches the kubeadm step. They share that
//     one subshell, so a variable one exports is seen by the next.
//   - the kubeadm step of the role, which first removes whatever stands at the sentinel's path:
//     the sentinel means kubeadm exited 0, whatever the commands before did. The kubeadm line
//     stays a line of its own starting with `kubeadm init` or `kubeadm join`: CAPD's bootstrap
//     hooks find it by that text.
//   - sentinel.sh: first the mark that kubeadm succeeded, synced to the disk (a power cut from
//     there on finishes without kubeadm), and the attempt's mark, copy and kubelet hold removed; then the sentinel of the Cluster API contract, then /etc/kubeadm.yml
//     is removed: it holds the join token, and without it kubeadm.service (ConditionPathExists)
//     does not run on the next boot. After a failure it stays, so the next boot tries again. The
//     state directory goes last: a power cut at any point between finds either the config and
//     the mark that kubeadm succeeded, or neither.
//   - the post-kubeadm commands.
//
// The commands are spliced in as text, so one that does not end where it seems to would take
// the lines after it along: checkCommands rejects those before. The empty line after the
// pre-kubeadm commands is a second guard: a trailing backslash that got through joins that
// empty line, not the closing parenthesis.
func kubeadmScript(role Role, verbosity *int32, inst *kubernetesInstall, substitutions []string, resume resumePhases, pre, post []string) (string, error) {
	step := "kubeadm-join.sh"
	if role == RoleInit {
		step = "kubeadm-init.sh"
	}
	var b strings.Builder
	writeScript := func(name string) error {
		data, err := scripts.ReadFile("scripts/" + name)
		if err != nil {
			return fmt.Errorf("reading embedded script %s: %w", name, err)
		}
		b.Write(data)
		return nil
	}
	if err := writeScript("header.sh"); err != nil {
		return "", err
	}
	if inst != nil && inst.stepCall != "" {
		for _, name := range inst.stepFiles {
			if err := writeScript(name); err != nil {
				return "", err
			}
		}
		b.WriteString(inst.stepCall)
	}
	if len(substitutions) > 0 {
		if err := writeScript("metadata.sh"); err != nil {
			return "", err
		}
		call, err := shellCall(append([]string{"cabpi_substitute_metadata", KubeadmConfigPath}, substitutions...))
		if err != nil {
			return "", err
		}
		b.WriteString(call)
	}
	left := "attempt-control-plane.sh"
	if role == RoleWorkerJoin {
		left = "attempt-worker.sh"
	}
	attempt := []string{"attempt.sh", left}
	calls := [][]string{{"cabpi_attempt", resume.skip}}
	if resume.voterSkip != "" {
		attempt = append(attempt, "etcd-voter.sh")
		calls = append(calls, []string{"cabpi_skip_etcd_join", resume.voterSkip})
	}
	for _, name := range attempt {
		if err := writeScript(name); err != nil {
			return "", err
		}
	}
	for _, words := range calls {
		call, err := shellCall(words)
		if err != nil {
			return "", err
		}
		b.WriteString(call)
	}
	if len(pre) > 0 {
		b.WriteString("if [[ $CABPI_KUBEADM != done ]]; then\n(\n")
		for _, line := range pre {
			b.WriteString(line)
			b.WriteByte('\n')
		}
		b.WriteString("\n)\nfi\n")
	}
	if verbosity != nil {
		// Read by the kubeadm step as --v (a number: nothing to quote).
		fmt.Fprintf(&b, "CABPI_KUBEADM_VERBOSITY=%d\n", *verbosity)
	}
	if err := writeScript(step); err != nil {
		return "", err
	}
	if err := writeScript("sentinel.sh"); err != nil {
		return "", err
	}
	for _, line := range post {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return b.String(), nil
}

// shellCall prints a simple command from a syntax tree, each word quoted as bash needs.
func shellCall(words []string) (string, error) {
	call := &syntax.CallExpr{}
	for _, w := range words {
		quoted, err := syntax.Quote(w, syntax.LangBash)
		if err != nil {
			return "", fmt.Errorf("quoting %q: %w", w, err)
		}
		call.Args = append(call.Args, &syntax.Word{Parts: []syntax.WordPart{&syntax.Lit{Value: quoted}}})
	}
	var b strings.Builder
	if err := syntax.NewPrinter().Print(&b, &syntax.File{Stmts: []*syntax.Stmt{{Cmd: call}}}); err != nil {
		return "", fmt.Errorf("printing a shell command: %w", err)
	}
	return b.String(), nil
}

// checkCommands rejects a pre- or post-kubeadm command that is not a complete bash statement
// list. Spliced into the script, an unclosed quote or here-document, a trailing `&&` or `|`, an
// `if` without `fi` or a trailing line continuation would swallow the lines after it: the kubeadm
// step could be skipped and the success sentinel still be written, telling Cluster API that a
// node bootstrapped when kubeadm never ran.
func checkCommands(pre, post []string) []*Error {
	var errs []*Error
	for _, list := range []struct {
		part     Part
		commands []string
	}{
		{PartPreKubeadmCommand, pre},
		{PartPostKubeadmCommand, post},
	} {
		for i, command := range list.commands {
			if err := completeCommand(command); err != nil {
				errs = append(errs, errorf(ErrInvalidInput, Entry(list.part, i), "not a complete shell command: %v", err))
			}
		}
	}
	return errs
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
