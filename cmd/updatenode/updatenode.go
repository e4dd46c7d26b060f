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

// Package updatenode is `cabpi update-node`, flags and I/O for package nodeupdate (the in-place
// update's node side, docs/adr/043):
//
//	cabpi update-node --update JSON      the update Job's Pod: hands the update to the host's
//	                                     systemd and reports its result
//	cabpi update-node apply              on the host (the transient unit the Pod starts)
//	cabpi update-node resume | finish    on the host, at boot (the units an update installs)
package updatenode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodeupdate"
)

// DefaultTerminationLog is where the kubelet reads a container's termination message.
const DefaultTerminationLog = "/dev/termination-log"

// pollInterval is how often the unit's state is read while it runs.
const pollInterval = 2 * time.Second

// Main runs `cabpi update-node` with args.
func Main(args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 {
		switch args[0] {
		case "apply", "resume", "finish":
			if len(args) > 1 {
				return fmt.Errorf("unexpected arguments %q", args[1:])
			}
			return onHost(args[0], stderr)
		}
	}
	var update, terminationLog string
	fs := pflag.NewFlagSet("update-node", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&update, "update", "", `the update, as JSON: {"version": "v1.34.4", "kubernetes": {spec.kubernetes}}`)
	fs.StringVar(&terminationLog, "termination-log", DefaultTerminationLog, "file the result line is written to (the Pod's termination message)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cabpi update-node --update JSON | apply | resume | finish")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if update == "" {
		return errors.New("--update is required")
	}
	u, err := nodeupdate.ParseUpdate([]byte(update))
	if err != nil {
		return err
	}
	program, err := os.Executable()
	if err != nil {
		return fmt.Errorf("finding the program to run on the node: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	h := &nodeupdate.Handover{StateDir: nodeupdate.StateDir, Program: program, Connect: nodeupdate.ConnectSystemd, Poll: pollInterval, Log: stderr}
	line, err := h.Run(ctx, u)
	return exitCoded(report(terminationLog, stderr, line, err))
}

// onHost runs the node side: apply the update the Pod wrote, or resume or finish the journal's.
// SIGTERM (a shutdown) pauses it.
func onHost(mode string, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	node := nodeupdate.New(nodeupdate.NewHost(), nodeupdate.NewFetcher(), nodeupdate.Options{Log: stderr})
	var res nodeupdate.Result
	var err error
	switch mode {
	case "apply":
		data, rerr := os.ReadFile(filepath.Join(nodeupdate.StateDir, nodeupdate.UpdateName))
		if rerr != nil {
			return fmt.Errorf("reading the update: %w", rerr)
		}
		u, perr := nodeupdate.ParseUpdate(data)
		if perr != nil {
			return perr
		}
		res, err = node.Apply(ctx, u)
	case "resume":
		res, err = node.Resume(ctx)
	case "finish":
		res, err = node.Finish(ctx)
	}
	switch {
	case errors.Is(err, nodeupdate.ErrHandedOver), errors.Is(err, nodeupdate.ErrNoJournal):
		fmt.Fprintln(stderr, "update-node:", err)
		return nil
	case errors.Is(err, nodeupdate.ErrPaused):
		return &incompleteError{err: err}
	case err != nil:
		return err
	case !res.OK:
		return &nodeupdate.ResultError{Line: res.Line()}
	}
	return nil
}

// exitCoded gives the command's exit code to its outcome: nodeupdate.FailedExitCode for an
// update that failed on the node (its result), which the update Job does not retry; 2 for
// anything that kept the update from giving a result (systemd not reached, interrupted), which
// the Job retries with a new Pod, and the node side goes on from its journal.
func exitCoded(err error) error {
	var result *nodeupdate.ResultError
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
