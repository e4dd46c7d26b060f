// Package updatenode is `cabpi update-node`: the in-place Kubernetes update of the node it runs
// on, run by the Job that cabpi's in-place update extension creates in the workload cluster
// (pinned to the node, host network, root, /run/systemd and ignition.InPlaceStateDir mounted at
// their own paths). The update itself is ignition.InPlaceUpdateFor's script, which this command
// hands to the host's systemd as the transient unit ignition.InPlaceUnit: the kubelet restart
// in the update, and the loss of this Pod, do not stop it. The command waits for the unit and
// reports the script's result line in the Pod's termination message and its exit code.
package updatenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// DefaultTerminationLog is where the kubelet reads a container's termination message.
const DefaultTerminationLog = "/dev/termination-log"

// pollInterval is how often the unit's state is read while it runs.
const pollInterval = 2 * time.Second

// Options are the command's flags.
type Options struct {
	Version string
	Source  string
	Arch    string
	// BaseURL is the source's base URL ("" for the source's default).
	BaseURL        string
	Kubectl        bool
	TerminationLog string
}

// Main runs `cabpi update-node` with args. Progress goes to stderr; the result line, or what
// kept the update from giving one, to the termination log. It returns nil when the node is on
// the version, else an error carrying the result line.
func Main(args []string, stdout, stderr io.Writer) error {
	opts := Options{}
	fs := pflag.NewFlagSet("update-node", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&opts.Version, "version", "", "Kubernetes version to move the node to (v1.34.4)")
	fs.StringVar(&opts.Source, "source", "", "where the node's Kubernetes comes from: sysext or binaries (spec.kubernetes.source)")
	fs.StringVar(&opts.Arch, "arch", string(cabpiv1.ArchitectureAMD64), "the node's architecture: amd64 or arm64")
	fs.StringVar(&opts.BaseURL, "base-url", "", "the source's base URL (spec.kubernetes.sysext.baseURL or binaries.baseURL); default: the source's")
	fs.BoolVar(&opts.Kubectl, "kubectl", false, "with source binaries, kubectl too (spec.kubernetes.binaries.kubectl)")
	fs.StringVar(&opts.TerminationLog, "termination-log", DefaultTerminationLog, "file the result line is written to (the Pod's termination message)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cabpi update-node --version v1.34.4 --source sysext|binaries [--arch amd64|arm64] [--base-url URL] [--kubectl]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	update, err := updateFor(opts)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	r := &runner{stateDir: ignition.InPlaceStateDir, connect: connectSystemd, poll: pollInterval, log: stderr}
	line, err := r.run(ctx, update, opts.Version)
	return exitCoded(report(opts.TerminationLog, stderr, line, err))
}

// exitCoded gives the command's exit code to its outcome: ignition.InPlaceFailedExitCode for an
// update that failed on the node (its result line), which the update Job does not retry; 2 for
// anything that kept the update from giving a result (systemd not reached, interrupted), which
// the Job retries with a new Pod, and the node side resumes.
func exitCoded(err error) error {
	var result *ResultError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &result):
		return err
	}
	return &incompleteError{err: err}
}

// incompleteError: the update gave no result.
type incompleteError struct{ err error }

func (e *incompleteError) Error() string { return e.err.Error() }
func (e *incompleteError) Unwrap() error { return e.err }

// ExitCode is main's exit code for it.
func (e *incompleteError) ExitCode() int { return 2 }

// updateFor checks the flags and builds the update they ask for.
func updateFor(opts Options) (ignition.InPlaceUpdate, error) {
	if opts.Version == "" {
		return ignition.InPlaceUpdate{}, errors.New("--version is required")
	}
	k := cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSource(opts.Source), Arch: cabpiv1.Architecture(opts.Arch)}
	switch k.Source {
	case cabpiv1.KubernetesSourceSysext:
		k.Sysext = &cabpiv1.SysextSource{BaseURL: opts.BaseURL}
	case cabpiv1.KubernetesSourceBinaries:
		k.Binaries = &cabpiv1.BinariesSource{BaseURL: opts.BaseURL, Kubectl: opts.Kubectl}
	default:
		return ignition.InPlaceUpdate{}, fmt.Errorf("--source %q: use sysext or binaries", opts.Source)
	}
	if opts.Kubectl && k.Source != cabpiv1.KubernetesSourceBinaries {
		return ignition.InPlaceUpdate{}, errors.New("--kubectl is only read with --source binaries")
	}
	update, err := ignition.InPlaceUpdateFor(k, opts.Version)
	if err != nil {
		return ignition.InPlaceUpdate{}, fmt.Errorf("the update to %s: %w", opts.Version, err)
	}
	return update, nil
}

// report writes the result line to the termination log, or the error that kept the update from
// giving one. A termination log that cannot be written is said on stderr: the outcome is the
// exit code still.
func report(terminationLog string, stderr io.Writer, line string, outcome error) error {
	message := line
	if message == "" && outcome != nil {
		message = outcome.Error()
	}
	if terminationLog != "" {
		if err := os.WriteFile(terminationLog, []byte(message+"\n"), 0o644); err != nil {
			fmt.Fprintf(stderr, "update-node: writing the termination log: %v\n", err)
		}
	}
	return outcome
}

// ResultError is a result line other than the version's "ok": the update failed, and the line
// says why (and whether the node was rolled back).
type ResultError struct{ Line string }

func (e *ResultError) Error() string { return e.Line }

// ExitCode is main's exit code for it.
func (e *ResultError) ExitCode() int { return ignition.InPlaceFailedExitCode }

// unitState is what the runner reads of the update unit.
type unitState struct {
	// Active is systemd's ActiveState: active, activating, deactivating, reloading, inactive
	// or failed.
	Active string
	// JobPending: a job is queued or running for the unit (its start, until a oneshot's
	// process exits).
	JobPending bool
}

// ended reports whether the unit has finished: a transient oneshot is inactive (and unloaded)
// after a clean exit and failed after another, with no job left. Right after the start call
// the unit is still inactive, with its start job queued.
func (s unitState) ended() bool {
	return (s.Active == "inactive" || s.Active == "failed") && !s.JobPending
}

// systemd is what the runner asks of the host's systemd (dbusSystemd; a fake in tests).
type systemd interface {
	UnitState(ctx context.Context, unit string) (unitState, error)
	ResetFailed(ctx context.Context, unit string) error
	// StartTransient starts unit as a oneshot service running command, with nothing binding it
	// to the caller.
	StartTransient(ctx context.Context, unit, description string, command []string) error
	Close()
}

// runner hands the update to the host's systemd and waits for its result.
type runner struct {
	stateDir string
	connect  func(ctx context.Context) (systemd, error)
	poll     time.Duration
	log      io.Writer
	conn     systemd
}

// run writes the script, attaches to a run in flight or starts one, waits for the unit to end
// and reads its result line. The error is nil only for the version's "ok"; a *ResultError for
// another line.
func (r *runner) run(ctx context.Context, update ignition.InPlaceUpdate, version string) (string, error) {
	script := filepath.Join(r.stateDir, ignition.InPlaceScriptName)
	if err := writeScript(script, update.Script); err != nil {
		return "", err
	}
	if err := r.reconnect(ctx); err != nil {
		return "", err
	}
	defer func() { r.conn.Close() }()
	state, err := r.conn.UnitState(ctx, ignition.InPlaceUnit)
	if err != nil {
		return "", fmt.Errorf("reading the state of %s: %w", ignition.InPlaceUnit, err)
	}
	want := ignition.InPlaceResultOK + version
	if !state.ended() {
		// A retried Job (or a Pod that was lost) finds the run it started still going.
		r.logf("%s is %s: waiting for the update in flight", ignition.InPlaceUnit, state.Active)
		if state, err = r.wait(ctx); err != nil {
			return "", err
		}
		if line, err := r.result(); err == nil && line == want {
			return line, nil
		} else if err == nil {
			r.logf("the update in flight ended with %q: starting the update to %s", line, version)
		}
	}
	if state.Active == "failed" {
		// A failed transient unit stays loaded, and its name taken, until reset.
		if err := r.conn.ResetFailed(ctx, ignition.InPlaceUnit); err != nil {
			return "", fmt.Errorf("resetting the failed %s: %w", ignition.InPlaceUnit, err)
		}
	}
	resultPath := filepath.Join(r.stateDir, ignition.InPlaceResultName)
	if err := os.Remove(resultPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("removing the previous result: %w", err)
	}
	command := append([]string{"/bin/bash", script}, update.Args...)
	if err := r.conn.StartTransient(ctx, ignition.InPlaceUnit, "cabpi: in-place Kubernetes update to "+version, command); err != nil {
		return "", fmt.Errorf("starting %s: %w", ignition.InPlaceUnit, err)
	}
	r.logf("started %s: the update to %s (journalctl -u %s on the node)", ignition.InPlaceUnit, version, ignition.InPlaceUnit)
	if _, err := r.wait(ctx); err != nil {
		return "", err
	}
	line, err := r.result()
	if err != nil {
		return "", err
	}
	if line != want {
		return line, &ResultError{Line: line}
	}
	return line, nil
}

// wait polls the unit until it has ended, reconnecting when the connection drops (systemd
// reloads during the update).
func (r *runner) wait(ctx context.Context) (unitState, error) {
	for {
		state, err := r.conn.UnitState(ctx, ignition.InPlaceUnit)
		if err == nil && state.ended() {
			return state, nil
		}
		if err != nil {
			r.logf("reading the state of %s: %v; reconnecting", ignition.InPlaceUnit, err)
			r.conn.Close()
			if err := r.reconnect(ctx); err != nil {
				return unitState{}, err
			}
			continue
		}
		if err := r.sleep(ctx); err != nil {
			return unitState{}, err
		}
	}
}

// reconnect connects to systemd, trying again every poll until ctx ends.
func (r *runner) reconnect(ctx context.Context) error {
	for {
		conn, err := r.connect(ctx)
		if err == nil {
			r.conn = conn
			return nil
		}
		r.logf("connecting to systemd: %v", err)
		if err := r.sleep(ctx); err != nil {
			return fmt.Errorf("connecting to systemd: %w", err)
		}
	}
}

func (r *runner) sleep(ctx context.Context) error {
	timer := time.NewTimer(r.poll)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", ignition.InPlaceUnit, ctx.Err())
	case <-timer.C:
		return nil
	}
}

// result is the first line of the result file the script writes as it ends.
func (r *runner) result() (string, error) {
	data, err := os.ReadFile(filepath.Join(r.stateDir, ignition.InPlaceResultName))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s ended without a result (journalctl -u %s on the node)", ignition.InPlaceUnit, ignition.InPlaceUnit)
	}
	if err != nil {
		return "", fmt.Errorf("reading the update's result: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return line, nil
}

func (r *runner) logf(format string, args ...any) {
	fmt.Fprintf(r.log, "update-node: "+format+"\n", args...)
}

// writeScript writes the script beside its path and renames it into place: a run in flight
// keeps reading the file it opened (bash reads a script as it goes).
func writeScript(path string, script []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("creating the update's state directory: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("writing the update script: %w", err)
	}
	defer os.Remove(f.Name()) // nothing is left there once renamed
	err = writeSynced(f, script, 0o700)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("writing the update script: %w", err)
	}
	return nil
}

func writeSynced(f *os.File, data []byte, mode os.FileMode) error {
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Chmod(mode); err != nil {
		return err
	}
	return f.Sync()
}
