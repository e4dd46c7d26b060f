package updatenode

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// response is one answer of the fake to UnitState: a state, or an error (the connection
// dropped). finish: the script ends as it is given (the fake writes the run's result).
type response struct {
	state  unitState
	err    error
	finish bool
}

var (
	inactive   = response{state: unitState{Active: "inactive"}}
	failed     = response{state: unitState{Active: "failed"}}
	activating = response{state: unitState{Active: "activating", JobPending: true}}
	// queued: just started, the start job not yet run.
	queued  = response{state: unitState{Active: "inactive", JobPending: true}}
	dropped = response{err: errors.New("read unix @->/run/systemd/private: use of closed network connection")}
)

func ends(r response) response { r.finish = true; return r }

// fakeSystemd answers UnitState from before until the unit is started, from after once it is;
// the last answer of each repeats. A finishing answer writes result (none when "") as the
// script would.
type fakeSystemd struct {
	t             *testing.T
	stateDir      string
	before, after []response
	result        string
	startErr      error

	started     [][]string
	resetFailed int
	connects    int
	closes      int
}

func (f *fakeSystemd) connect(context.Context) (systemd, error) {
	f.connects++
	return f, nil
}

func (f *fakeSystemd) UnitState(_ context.Context, unit string) (unitState, error) {
	assert.Equal(f.t, ignition.InPlaceUnit, unit)
	answers := &f.before
	if len(f.started) > 0 {
		answers = &f.after
	}
	require.NotEmpty(f.t, *answers)
	r := (*answers)[0]
	if len(*answers) > 1 {
		*answers = (*answers)[1:]
	}
	if r.finish && f.result != "" {
		require.NoError(f.t, os.WriteFile(filepath.Join(f.stateDir, ignition.InPlaceResultName), []byte(f.result+"\n"), 0o644))
	}
	return r.state, r.err
}

func (f *fakeSystemd) ResetFailed(_ context.Context, unit string) error {
	assert.Equal(f.t, ignition.InPlaceUnit, unit)
	f.resetFailed++
	return nil
}

func (f *fakeSystemd) StartTransient(_ context.Context, unit, _ string, command []string) error {
	assert.Equal(f.t, ignition.InPlaceUnit, unit)
	if f.startErr != nil {
		return f.startErr
	}
	f.started = append(f.started, command)
	return nil
}

func (f *fakeSystemd) Close() { f.closes++ }

// The runner hands the update to systemd, or attaches to a run in flight, waits for the unit to
// end through reconnections, and reports the result line.
func TestRun(t *testing.T) {
	const version = "v1.34.4"
	update := ignition.InPlaceUpdate{Script: []byte("#!/bin/bash\necho update\n"), Args: []string{"sysext", version, "x.raw"}}
	cases := []struct {
		name          string
		before, after []response
		// previous is a result file left by an earlier run.
		previous string
		result   string
		startErr error

		wantLine    string
		wantErr     string // "" for none
		wantStarted bool
		wantReset   int
		wantConnect int
	}{
		{name: "idle unit: started, ok", before: []response{inactive}, after: []response{queued, activating, activating, ends(inactive)},
			result: "ok v1.34.4", wantLine: "ok v1.34.4", wantStarted: true, wantConnect: 1},
		{name: "the result of an earlier run is not read", before: []response{inactive}, after: []response{queued, ends(inactive)},
			previous: "ok v1.34.4", wantErr: "ended without a result", wantStarted: true, wantConnect: 1},
		{name: "just started, still inactive with its job queued: waited for",
			before: []response{inactive}, after: []response{queued, queued, activating, ends(failed)},
			result: "failed: kubeadm upgrade node: boom; rolled back to v1.33.2", wantLine: "failed: kubeadm upgrade node: boom; rolled back to v1.33.2",
			wantErr: "failed: kubeadm upgrade node: boom; rolled back to v1.33.2", wantStarted: true, wantConnect: 1},
		{name: "failed unit: reset, then started", before: []response{failed}, after: []response{activating, ends(inactive)},
			result: "ok v1.34.4", wantLine: "ok v1.34.4", wantStarted: true, wantReset: 1, wantConnect: 1},
		{name: "in flight: attached, not started", before: []response{activating, activating, ends(inactive)},
			result: "ok v1.34.4", wantLine: "ok v1.34.4", wantConnect: 1},
		{name: "in flight, ended failed: a run of its own", before: []response{activating, ends(failed)}, after: []response{activating, ends(inactive)},
			result: "failed: fetch: x", wantLine: "failed: fetch: x", wantErr: "failed: fetch: x", wantStarted: true, wantReset: 1, wantConnect: 1},
		{name: "in flight to another version: a run of its own", before: []response{activating, ends(inactive)}, after: []response{activating, ends(inactive)},
			result: "ok v1.33.2", wantLine: "ok v1.33.2", wantErr: "ok v1.33.2", wantStarted: true, wantConnect: 1},
		{name: "connection dropped during the daemon-reload: reconnected", before: []response{inactive},
			after:  []response{activating, dropped, dropped, activating, ends(inactive)},
			result: "ok v1.34.4", wantLine: "ok v1.34.4", wantStarted: true, wantConnect: 3},
		{name: "rolled back", before: []response{inactive}, after: []response{activating, ends(failed)},
			result: "failed: kubelet restart: x; rolled back to v1.33.2", wantLine: "failed: kubelet restart: x; rolled back to v1.33.2",
			wantErr: "failed: kubelet restart: x; rolled back to v1.33.2", wantStarted: true, wantConnect: 1},
		{name: "no result", before: []response{inactive}, after: []response{ends(failed)},
			wantErr: "cabpi-kubernetes-update.service ended without a result", wantStarted: true, wantConnect: 1},
		{name: "start refused", before: []response{inactive}, startErr: errors.New("Unit cabpi-kubernetes-update.service already exists."),
			wantErr: "starting cabpi-kubernetes-update.service: Unit cabpi-kubernetes-update.service already exists.", wantConnect: 1},
		{name: "first state unreadable", before: []response{dropped}, wantErr: "reading the state of cabpi-kubernetes-update.service", wantConnect: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "cabpi-update")
			fake := &fakeSystemd{t: t, stateDir: stateDir, before: tc.before, after: tc.after, result: tc.result, startErr: tc.startErr}
			if tc.previous != "" {
				require.NoError(t, os.MkdirAll(stateDir, 0o700))
				require.NoError(t, os.WriteFile(filepath.Join(stateDir, ignition.InPlaceResultName), []byte(tc.previous+"\n"), 0o644))
			}
			var log bytes.Buffer
			r := &runner{stateDir: stateDir, connect: fake.connect, poll: time.Millisecond, log: &log}
			line, err := r.run(context.Background(), update, version)

			assert.Equal(t, tc.wantLine, line)
			if tc.wantErr == "" {
				require.NoError(t, err, log.String())
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
			}
			script := filepath.Join(stateDir, ignition.InPlaceScriptName)
			if tc.wantStarted {
				require.Len(t, fake.started, 1)
				assert.Equal(t, []string{"/bin/bash", script, "sysext", version, "x.raw"}, fake.started[0])
			} else {
				assert.Empty(t, fake.started)
			}
			assert.Equal(t, tc.wantReset, fake.resetFailed, "ResetFailed")
			assert.Equal(t, tc.wantConnect, fake.connects, "connections")
			assert.Equal(t, fake.connects, fake.closes, "every connection closed")
			written, err := os.ReadFile(script)
			require.NoError(t, err)
			assert.Equal(t, update.Script, written)
			info, err := os.Stat(script)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
			entries, err := os.ReadDir(stateDir)
			require.NoError(t, err)
			for _, e := range entries {
				assert.Contains(t, []string{ignition.InPlaceScriptName, ignition.InPlaceResultName}, e.Name(), "no temporary file left")
			}
		})
	}
}

// A run that outlives its context (the Pod is being stopped) returns, leaving the unit running.
func TestRunStopsWithItsContext(t *testing.T) {
	stateDir := t.TempDir()
	fake := &fakeSystemd{t: t, stateDir: stateDir, before: []response{inactive}, after: []response{activating}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r := &runner{stateDir: stateDir, connect: fake.connect, poll: time.Millisecond, log: &bytes.Buffer{}}
	_, err := r.run(ctx, ignition.InPlaceUpdate{Script: []byte("x")}, "v1.34.4")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, fake.started, 1)
}

// The termination message is the result line, or the error that kept the update from giving one.
func TestReport(t *testing.T) {
	for _, tc := range []struct {
		name    string
		line    string
		outcome error
		want    string
	}{
		{name: "ok", line: "ok v1.34.4", want: "ok v1.34.4\n"},
		{name: "failed", line: "failed: fetch: x", outcome: &ResultError{Line: "failed: fetch: x"}, want: "failed: fetch: x\n"},
		{name: "no result", outcome: errors.New("starting the unit: denied"), want: "starting the unit: denied\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "termination-log")
			err := report(log, &bytes.Buffer{}, tc.line, tc.outcome)
			assert.Equal(t, tc.outcome, err)
			data, rerr := os.ReadFile(log)
			require.NoError(t, rerr)
			assert.Equal(t, tc.want, string(data))
		})
	}
}

// The flags build the update the lead's Job asks for; what cannot be updated in place is
// refused before systemd is asked anything.
func TestUpdateFor(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     Options
		wantArgs []string
		wantErr  string
	}{
		{name: "sysext", opts: Options{Version: "v1.34.4", Source: "sysext", Arch: "arm64", BaseURL: "https://mirror.example/ext"},
			wantArgs: []string{"sysext", "v1.34.4", "kubernetes-v1.34.4-arm64.raw", "https://mirror.example/ext/kubernetes-v1.34.4-arm64.raw",
				"https://mirror.example/ext/kubernetes/SHA256SUMS"}},
		{name: "binaries with kubectl, default base", opts: Options{Version: "v1.34.4", Source: "binaries", Arch: "amd64", Kubectl: true},
			wantArgs: []string{"binaries", "v1.34.4", "https://dl.k8s.io/release/v1.34.4/bin/linux/amd64", "kubeadm", "kubelet", "kubectl"}},
		{name: "no version", opts: Options{Source: "sysext"}, wantErr: "--version is required"},
		{name: "image", opts: Options{Version: "v1.34.4", Source: "image"}, wantErr: `--source "image": use sysext or binaries`},
		{name: "kubectl with sysext", opts: Options{Version: "v1.34.4", Source: "sysext", Kubectl: true}, wantErr: "--kubectl is only read with --source binaries"},
		{name: "a version sysext does not have", opts: Options{Version: "v1.35.0-rc.1", Source: "sysext"}, wantErr: "not a release the sysext layout has"},
		{name: "an arch", opts: Options{Version: "v1.34.4", Source: "binaries", Arch: "riscv64"}, wantErr: `arch "riscv64" is not amd64 or arm64`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			update, err := updateFor(tc.opts)
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantArgs, update.Args)
			assert.NotEmpty(t, update.Script)
		})
	}
}

// Flags that are wrong are refused by Main before anything is written or started.
func TestMainRefusesBadFlags(t *testing.T) {
	var stderr bytes.Buffer
	err := Main([]string{"--source", "binaries"}, &bytes.Buffer{}, &stderr)
	require.EqualError(t, err, "--version is required")
	err = Main([]string{"--version", "v1.34.4", "--source", "sysext", "extra"}, &bytes.Buffer{}, &stderr)
	require.ErrorContains(t, err, "unexpected arguments")
	err = Main([]string{"--nope"}, &bytes.Buffer{}, &stderr)
	require.ErrorContains(t, err, "unknown flag")
}
