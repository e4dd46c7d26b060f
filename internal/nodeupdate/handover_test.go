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
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

const programContent = "the cabpi binary\n"

// program is a stand-in for the Pod's own binary.
func program(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cabpi")
	require.NoError(t, os.WriteFile(p, []byte(programContent), 0o755))
	return p
}

// response is one answer of the fake to UnitState: a state, or an error (the connection
// dropped). finish: the script ends as it is given (the fake writes the run's result).
type response struct {
	state  UnitState
	err    error
	finish bool
}

var (
	inactive   = response{state: UnitState{Active: "inactive"}}
	failed     = response{state: UnitState{Active: "failed"}}
	activating = response{state: UnitState{Active: "activating", JobPending: true}}
	// queued: just started, the start job not yet run.
	queued  = response{state: UnitState{Active: "inactive", JobPending: true}}
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

func (f *fakeSystemd) connect(context.Context) (Systemd, error) {
	f.connects++
	return f, nil
}

func (f *fakeSystemd) UnitState(_ context.Context, unit string) (UnitState, error) {
	assert.Equal(f.t, Unit, unit)
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
		require.NoError(f.t, os.WriteFile(filepath.Join(f.stateDir, ResultName), []byte(f.result+"\n"), 0o644))
	}
	return r.state, r.err
}

func (f *fakeSystemd) ResetFailed(_ context.Context, unit string) error {
	assert.Equal(f.t, Unit, unit)
	f.resetFailed++
	return nil
}

func (f *fakeSystemd) StartTransient(_ context.Context, unit, _ string, command []string) error {
	assert.Equal(f.t, Unit, unit)
	if f.startErr != nil {
		return f.startErr
	}
	f.started = append(f.started, command)
	return nil
}

func (f *fakeSystemd) Close() { f.closes++ }

// The handover hands the update to systemd, or attaches to a run in flight, waits for the unit to
// end through reconnections, and reports the result line.
func TestHandover(t *testing.T) {
	const version = "v1.34.4"
	update := Update{Version: version, Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext},
		Digests: nodelayout.Digests{nodelayout.SysextImageName(version, cabpiv1.ArchitectureAMD64): strings.Repeat("a", 64)}}
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
				require.NoError(t, os.WriteFile(filepath.Join(stateDir, ResultName), []byte(tc.previous+"\n"), 0o644))
			}
			var log bytes.Buffer
			h := &Handover{StateDir: stateDir, Program: program(t), Connect: fake.connect, Poll: time.Millisecond, Log: &log}
			line, err := h.Run(context.Background(), update)

			assert.Equal(t, tc.wantLine, line)
			if tc.wantErr == "" {
				require.NoError(t, err, log.String())
			} else {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
			}
			installed := filepath.Join(stateDir, ProgramName)
			if tc.wantStarted {
				require.Len(t, fake.started, 1)
				assert.Equal(t, []string{installed, "update-node", "apply"}, fake.started[0])
			} else {
				assert.Empty(t, fake.started)
			}
			assert.Equal(t, tc.wantReset, fake.resetFailed, "ResetFailed")
			assert.Equal(t, tc.wantConnect, fake.connects, "connections")
			assert.Equal(t, fake.connects, fake.closes, "every connection closed")
			written, err := os.ReadFile(installed)
			require.NoError(t, err)
			assert.Equal(t, []byte(programContent), written, "the program is installed for the host")
			info, err := os.Stat(installed)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
			asked, err := os.ReadFile(filepath.Join(stateDir, UpdateName))
			require.NoError(t, err)
			parsed, err := ParseUpdate(asked)
			require.NoError(t, err)
			assert.Equal(t, update, parsed, "the update is handed over as data")
			entries, err := os.ReadDir(stateDir)
			require.NoError(t, err)
			for _, e := range entries {
				assert.Contains(t, []string{ProgramName, UpdateName, ResultName}, e.Name(), "no temporary file left")
			}
		})
	}
}

// A run that outlives its context (the Pod is being stopped) returns, leaving the unit running.
func TestHandoverStopsWithItsContext(t *testing.T) {
	stateDir := t.TempDir()
	fake := &fakeSystemd{t: t, stateDir: stateDir, before: []response{inactive}, after: []response{activating}}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	h := &Handover{StateDir: stateDir, Program: program(t), Connect: fake.connect, Poll: time.Millisecond, Log: &bytes.Buffer{}}
	k := cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries}
	pins, _ := nodelayout.Pins(nodelayout.BinariesFor(k, "v1.34.4").Downloads(), nil) // the catalogue's
	_, err := h.Run(ctx, Update{Version: "v1.34.4", Kubernetes: k, Digests: pins})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Len(t, fake.started, 1)
}
