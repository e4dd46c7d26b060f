package bootsim

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"unicode"
)

// exitExec is systemd's EXIT_EXEC (203): the command could not be executed.
const exitExec = 203

// maxOutput bounds Step.Output; the head and the tail of longer output are kept.
const maxOutput = 8 << 10

// runner runs a service's start job. outputFile creates the file a command's output goes to: a
// file rather than a pipe, so that a process left running in the background cannot hold Wait up.
type runner struct {
	svc        *service
	outputFile func() (*os.File, error)

	steps []Step
	env   []string // environment of the last command spawned
}

// start runs the start job: conditions, assertions, then ExecStartPre=, ExecStart= and
// ExecStartPost= in order, stopping at the first failure not ignored with "-". It returns the
// Result and why it is not "success".
func (r *runner) start() (result, why string, err error) {
	s := r.svc
	if env, err := s.execEnvironment(); err == nil {
		r.env = env // what the commands would have got, should none run
	}
	if s.BadSetting != "" {
		return ResultFailed, "bad-setting: " + s.BadSetting, nil
	}
	if ok, why := checkConditions(s.Conditions); !ok {
		return ResultSkipped, why, nil
	}
	if ok, why := checkConditions(s.Asserts); !ok {
		return ResultFailed, "assertion failed: " + why, nil
	}
	for i, cmd := range s.Exec["ExecStartPre"] {
		if failed, err := r.runControl(fmt.Sprintf("ExecStartPre[%d]", i), cmd); failed != "" || err != nil {
			return ResultFailed, failed, err
		}
	}
	if s.Type != "oneshot" {
		failed, err := r.runMain(s.Exec["ExecStart"][0])
		if failed != "" || err != nil {
			return ResultFailed, failed, err
		}
		return ResultSuccess, "", nil
	}
	for i, cmd := range s.Exec["ExecStart"] {
		if failed, err := r.runControl(fmt.Sprintf("ExecStart[%d]", i), cmd); failed != "" || err != nil {
			return ResultFailed, failed, err
		}
	}
	for i, cmd := range s.Exec["ExecStartPost"] {
		if failed, err := r.runControl(fmt.Sprintf("ExecStartPost[%d]", i), cmd); failed != "" || err != nil {
			return ResultFailed, failed, err
		}
	}
	return ResultSuccess, "", nil
}

// runControl runs a command to completion and returns why it fails the unit, or "" (success, or a
// failure ignored with "-").
func (r *runner) runControl(directive string, cmd execCommand) (string, error) {
	step, proc, fatal, err := r.spawn(directive, cmd)
	if err != nil {
		return "", err
	}
	if proc != nil {
		r.wait(proc, &step)
	}
	r.steps = append(r.steps, step)
	if fatal {
		return directive + ": " + step.Output, nil
	}
	return failure(step, cmd, false), nil
}

// runMain runs ExecStart= of a Type=simple or Type=exec service. There ExecStartPost= starts as
// soon as the main process is (simple: forked; exec: executed) and runs alongside it; a failing
// ExecStartPost= stops the unit, killing the main process; the unit fails when the main process
// exits uncleanly. The simulation waits for the main process to exit.
func (r *runner) runMain(cmd execCommand) (string, error) {
	const directive = "ExecStart[0]"
	step, proc, fatal, err := r.spawn(directive, cmd)
	if err != nil {
		return "", err
	}
	if fatal {
		r.steps = append(r.steps, step)
		return directive + ": " + step.Output, nil
	}
	if proc == nil && r.svc.Type == "exec" {
		// execve() failed, so the start job fails before ExecStartPost= (unless "-" ignores it).
		if failed := failure(step, cmd, true); failed != "" {
			r.steps = append(r.steps, step)
			return failed, nil
		}
	}
	main := len(r.steps)
	r.steps = append(r.steps, step) // completed once the main process exited
	var postFailed string
	for i, post := range r.svc.Exec["ExecStartPost"] {
		if postFailed, err = r.runControl(fmt.Sprintf("ExecStartPost[%d]", i), post); postFailed != "" || err != nil {
			break
		}
	}
	if proc != nil {
		if postFailed != "" || err != nil {
			_ = proc.cmd.Process.Kill()
		}
		r.wait(proc, &step)
		r.steps[main] = step
	}
	if err != nil || postFailed != "" {
		return postFailed, err
	}
	return failure(step, cmd, true), nil
}

// failure says why a finished step fails the unit, or "". A daemon (the main process of a service
// other than Type=oneshot) also exits cleanly on SIGHUP, SIGINT, SIGTERM and SIGPIPE
// (is_clean_exit() with EXIT_CLEAN_DAEMON).
func failure(step Step, cmd execCommand, daemon bool) string {
	if cmd.IgnoreFailure || step.ExitCode == 0 && step.Signal == "" {
		return ""
	}
	switch {
	case step.Signal != "":
		if daemon && (step.Signal == "SIGHUP" || step.Signal == "SIGINT" || step.Signal == "SIGTERM" || step.Signal == "SIGPIPE") {
			return ""
		}
		return fmt.Sprintf("%s: killed by signal %s", step.Directive, step.Signal)
	case step.ExitCode == exitExec:
		return fmt.Sprintf("%s: exit status %d/EXEC (%s)", step.Directive, exitExec, step.Output)
	}
	return fmt.Sprintf("%s: exit status %d", step.Directive, step.ExitCode)
}

// process is a started command.
type process struct {
	cmd *exec.Cmd
	out *os.File
}

// spawn prepares and starts one command as exec_spawn() and exec_invoke() do. The environment
// files are loaded first: failing that, nothing runs and the unit fails whatever the prefix (fatal).
// Then variables are expanded (unless ":"), the executable located, and it is executed as root in
// /, in a new session, with stdin from /dev/null and the computed environment only. A command that
// cannot be executed gets exit status 203 and no process, except that "-" skips a missing one.
func (r *runner) spawn(directive string, cmd execCommand) (step Step, proc *process, fatal bool, err error) {
	step = Step{Directive: directive, Argv: cmd.Argv}
	env, loadErr := r.svc.execEnvironment()
	if loadErr != nil {
		step.ExitCode, step.Output = -1, "Failed to load environment files: "+errnoText(loadErr)
		return step, nil, true, nil
	}
	r.env = env
	if !cmd.NoEnvExpand {
		step.Argv = replaceEnvArgv(cmd.Argv, env)
	}

	if errno := locateExecutable(cmd.Path); errno != nil {
		if cmd.IgnoreFailure && errors.Is(errno, syscall.ENOENT) {
			step.Output = fmt.Sprintf("Executable %s missing, skipping: %s", cmd.Path, errnoText(errno))
			return step, nil, false, nil
		}
		step.ExitCode, step.Output = exitExec, fmt.Sprintf("Failed to locate executable %s: %s", cmd.Path, errnoText(errno))
		return step, nil, false, nil
	}

	out, err := r.outputFile()
	if err != nil {
		return step, nil, false, fmt.Errorf("creating the output file of %s: %w", directive, err)
	}
	c := &exec.Cmd{
		Path:        cmd.Path,
		Args:        step.Argv,
		Env:         env,
		Dir:         "/",
		Stdout:      out,
		Stderr:      out,
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if err := c.Start(); err != nil {
		out.Close()
		step.ExitCode, step.Output = exitExec, fmt.Sprintf("Failed to execute %s: %s", cmd.Path, errnoText(err))
		return step, nil, false, nil
	}
	return step, &process{cmd: c, out: out}, false, nil
}

// wait waits for a started command and completes its step.
func (r *runner) wait(proc *process, step *Step) {
	_ = proc.cmd.Wait() // the status is in ProcessState
	defer proc.out.Close()
	if ws, ok := proc.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		step.ExitCode, step.Signal = -1, signalName(ws.Signal())
	} else {
		step.ExitCode = proc.cmd.ProcessState.ExitCode()
	}
	if _, err := proc.out.Seek(0, io.SeekStart); err != nil {
		step.Output = fmt.Sprintf("(output unreadable: %v)", err)
		return
	}
	data, err := io.ReadAll(proc.out)
	if err != nil {
		step.Output = fmt.Sprintf("(output unreadable: %v)", err)
		return
	}
	step.Output = truncateOutput(string(data))
}

func signalName(sig syscall.Signal) string {
	names := map[syscall.Signal]string{
		syscall.SIGHUP: "SIGHUP", syscall.SIGINT: "SIGINT", syscall.SIGQUIT: "SIGQUIT", syscall.SIGILL: "SIGILL",
		syscall.SIGABRT: "SIGABRT", syscall.SIGBUS: "SIGBUS", syscall.SIGFPE: "SIGFPE", syscall.SIGKILL: "SIGKILL",
		syscall.SIGUSR1: "SIGUSR1", syscall.SIGSEGV: "SIGSEGV", syscall.SIGUSR2: "SIGUSR2", syscall.SIGPIPE: "SIGPIPE",
		syscall.SIGALRM: "SIGALRM", syscall.SIGTERM: "SIGTERM",
	}
	if n, ok := names[sig]; ok {
		return n
	}
	return fmt.Sprintf("signal %d", int(sig))
}

// locateExecutable is find_executable_full() for an absolute path: a regular file the caller may
// execute. On a noexec mount access(X_OK) fails with EACCES, even for root.
func locateExecutable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return syscall.EISDIR
	}
	if !fi.Mode().IsRegular() {
		return syscall.EBADFD
	}
	const xOK = 1
	return syscall.Access(path, xOK)
}

// errnoText renders an error the way systemd's %m does: strerror, capitalized.
func errnoText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		msg := errno.Error()
		return string(unicode.ToUpper(rune(msg[0]))) + msg[1:]
	}
	return err.Error()
}

// truncateOutput keeps the head and the tail of long output: the tail usually says what failed.
func truncateOutput(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	head, tail := s[:maxOutput/4], s[len(s)-maxOutput*3/4:]
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", head, len(s)-len(head)-len(tail), tail)
}
