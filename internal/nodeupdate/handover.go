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

package nodeupdate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The Pod's side (cabpi update-node, run by the update Job with StateDir and the host's systemd
// socket mounted): it copies the cabpi binary it runs into StateDir, writes the update there as
// data, and hands it to the host's systemd as the transient unit Unit, which outlives the
// kubelet's restart and the Pod; then it waits for the unit and reads the result.

// UnitState is what the handover reads of the update unit.
type UnitState struct {
	// Active is systemd's ActiveState: active, activating, deactivating, reloading, inactive
	// or failed.
	Active string
	// JobPending: a job is queued or running for the unit (its start, until a oneshot's
	// process exits).
	JobPending bool
}

// Ended reports whether the unit has finished: a transient oneshot is inactive (and unloaded)
// after a clean exit and failed after another, with no job left. Right after the start call
// the unit is still inactive, with its start job queued.
func (s UnitState) Ended() bool {
	return (s.Active == "inactive" || s.Active == "failed") && !s.JobPending
}

// Systemd is what the handover asks of the host's systemd (ConnectSystemd; a fake in tests).
type Systemd interface {
	UnitState(ctx context.Context, unit string) (UnitState, error)
	ResetFailed(ctx context.Context, unit string) error
	// StartTransient starts unit as a oneshot service running command, with nothing binding it
	// to the caller.
	StartTransient(ctx context.Context, unit, description string, command []string) error
	Close()
}

// Handover hands an update to the host and waits for its result.
type Handover struct {
	// StateDir is the update's state directory as the Pod and the host both see it (StateDir).
	StateDir string
	// Program is the cabpi binary to copy there for the host to run (the Pod's own).
	Program string
	Connect func(ctx context.Context) (Systemd, error)
	Poll    time.Duration
	Log     io.Writer
	conn    Systemd
}

// ResultError is a result other than the version's "ok": the update failed on the node, and
// the line says why (and whether the node was rolled back).
type ResultError struct{ Line string }

func (e *ResultError) Error() string { return e.Line }

// ExitCode is cabpi's exit code for it.
func (e *ResultError) ExitCode() int { return FailedExitCode }

// Run installs the program and the update, attaches to a run in flight or starts one, waits for
// the unit to end and reads its result line. The error is nil only for the version's "ok"; a
// *ResultError for another result.
func (h *Handover) Run(ctx context.Context, u Update) (string, error) {
	if err := h.install(u); err != nil {
		return "", err
	}
	if err := h.reconnect(ctx); err != nil {
		return "", err
	}
	defer func() { h.conn.Close() }()
	state, err := h.conn.UnitState(ctx, Unit)
	if err != nil {
		return "", fmt.Errorf("reading the state of %s: %w", Unit, err)
	}
	want := Result{OK: true, Version: u.Version}.Line()
	if !state.Ended() {
		// A retried Job (or a Pod that was lost) finds the run it started still going.
		h.logf("%s is %s: waiting for the update in flight", Unit, state.Active)
		if state, err = h.wait(ctx); err != nil {
			return "", err
		}
		if line, err := h.result(); err == nil && line == want {
			return line, nil
		} else if err == nil {
			h.logf("the update in flight ended with %q: starting the update to %s", line, u.Version)
		}
	}
	if state.Active == "failed" {
		// A failed transient unit stays loaded, and its name taken, until reset.
		if err := h.conn.ResetFailed(ctx, Unit); err != nil {
			return "", fmt.Errorf("resetting the failed %s: %w", Unit, err)
		}
	}
	if err := os.Remove(filepath.Join(h.StateDir, ResultName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("removing the previous result: %w", err)
	}
	command := []string{filepath.Join(h.StateDir, ProgramName), "update-node", "apply"}
	if err := h.conn.StartTransient(ctx, Unit, "cabpi: in-place Kubernetes update to "+u.Version, command); err != nil {
		return "", fmt.Errorf("starting %s: %w", Unit, err)
	}
	h.logf("started %s: the update to %s (journalctl -u %s on the node)", Unit, u.Version, Unit)
	if _, err := h.wait(ctx); err != nil {
		return "", err
	}
	line, err := h.result()
	if err != nil {
		return "", err
	}
	if line != want {
		return line, &ResultError{Line: line}
	}
	return line, nil
}

// install writes the program and the update into the state directory, each beside its path
// and renamed into place: a run in flight keeps the program it started.
func (h *Handover) install(u Update) error {
	if err := os.MkdirAll(h.StateDir, 0o700); err != nil {
		return fmt.Errorf("creating the update's state directory: %w", err)
	}
	d := disk{root: h.StateDir}
	program, err := os.Open(h.Program)
	if err != nil {
		return fmt.Errorf("reading the program to run on the node: %w", err)
	}
	defer program.Close()
	if err := d.writeFrom("/"+ProgramName, program, 0o700); err != nil {
		return fmt.Errorf("installing the program on the node: %w", err)
	}
	data, err := json.Marshal(u)
	if err != nil {
		return err
	}
	if err := d.writeFile("/"+UpdateName, data, 0o600); err != nil {
		return fmt.Errorf("writing the update: %w", err)
	}
	return nil
}

// wait polls the unit until it has ended, reconnecting when the connection drops (systemd
// reloads during the update).
func (h *Handover) wait(ctx context.Context) (UnitState, error) {
	for {
		state, err := h.conn.UnitState(ctx, Unit)
		if err == nil && state.Ended() {
			return state, nil
		}
		if err != nil {
			h.logf("reading the state of %s: %v; reconnecting", Unit, err)
			h.conn.Close()
			if err := h.reconnect(ctx); err != nil {
				return UnitState{}, err
			}
			continue
		}
		if err := h.sleep(ctx); err != nil {
			return UnitState{}, err
		}
	}
}

// reconnect connects to systemd, trying again every poll until ctx ends.
func (h *Handover) reconnect(ctx context.Context) error {
	for {
		conn, err := h.Connect(ctx)
		if err == nil {
			h.conn = conn
			return nil
		}
		h.logf("connecting to systemd: %v", err)
		if err := h.sleep(ctx); err != nil {
			return fmt.Errorf("connecting to systemd: %w", err)
		}
	}
}

func (h *Handover) sleep(ctx context.Context) error {
	timer := time.NewTimer(h.Poll)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for %s: %w", Unit, ctx.Err())
	case <-timer.C:
		return nil
	}
}

// result is the first line of the result file the node side writes as it ends.
func (h *Handover) result() (string, error) {
	data, err := os.ReadFile(filepath.Join(h.StateDir, ResultName))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("%s ended without a result (journalctl -u %s on the node)", Unit, Unit)
	}
	if err != nil {
		return "", fmt.Errorf("reading the update's result: %w", err)
	}
	line, _, _ := strings.Cut(string(data), "\n")
	return line, nil
}

func (h *Handover) logf(format string, args ...any) {
	if h.Log != nil {
		fmt.Fprintf(h.Log, "update-node: "+format+"\n", args...)
	}
}
