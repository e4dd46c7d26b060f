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
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"syscall"
	"time"
)

// Host is what the update asks of the node besides its files: its commands (kubeadm, kubelet,
// kubectl, systemctl, systemd-sysext) and its kubelet's health endpoint.
type Host interface {
	// Run runs a command of the node and returns its combined output.
	Run(ctx context.Context, name string, args ...string) (string, error)
	// Healthy asks the kubelet's health endpoint once: nil when it answers ok.
	Healthy(ctx context.Context) error
}

// Fetcher downloads what the update needs.
type Fetcher interface {
	// Get returns the body at url; a *NotFoundError when the server says it has none.
	Get(ctx context.Context, url string) (io.ReadCloser, error)
}

// NotFoundError: the server has nothing at URL (an HTTP 4xx).
type NotFoundError struct {
	URL    string
	Status int
}

func (e *NotFoundError) Error() string { return fmt.Sprintf("%s: HTTP %d", e.URL, e.Status) }

// Node runs updates on one node. Create it with New.
type Node struct {
	disk  disk
	host  Host
	fetch Fetcher
	log   io.Writer
	// healthTimeout bounds the wait for the restarted kubelet's health; healthEvery paces it.
	healthTimeout, healthEvery time.Duration
	// bound is the longest an update's way forward may take (Bound).
	bound time.Duration
	// program is the path of the cabpi binary the boot units run.
	program string
}

// Options are what New needs besides the host and the fetcher.
type Options struct {
	// Root prefixes every path of the node: empty on the node, a temporary directory in tests.
	Root string
	// Synced is told every path synced, in order (tests).
	Synced        func(nodePath string)
	Log           io.Writer
	HealthTimeout time.Duration
	HealthEvery   time.Duration
	// Bound replaces Bound (tests).
	Bound time.Duration
}

// Bound is the longest the way forward of an update may take on the node, from its downloads to
// the version check: past it the step in flight fails and the node rolls back. The update Job's
// deadline is above it (internal/inplace), so that the Job never ends before the node does.
const Bound = 30 * time.Minute

// defaultHealthTimeout is how long the restarted kubelet may take to answer ok.
const defaultHealthTimeout = 2 * time.Minute

// New is a Node of the host.
func New(host Host, fetch Fetcher, opts Options) *Node {
	n := &Node{disk: disk{root: opts.Root, synced: opts.Synced}, host: host, fetch: fetch, log: opts.Log,
		healthTimeout: opts.HealthTimeout, healthEvery: opts.HealthEvery, program: StateDir + "/" + ProgramName}
	if n.log == nil {
		n.log = io.Discard
	}
	if n.healthTimeout == 0 {
		n.healthTimeout = defaultHealthTimeout
	}
	if n.healthEvery == 0 {
		n.healthEvery = 2 * time.Second
	}
	n.bound = opts.Bound
	if n.bound == 0 {
		n.bound = Bound
	}
	return n
}

// ErrPaused: the update stopped (SIGTERM, its context ended) between or within steps; the
// journal says where, and the next run, or the next boot, goes on from there.
var ErrPaused = errors.New("the update was paused; the next run or boot goes on from its journal")

// ErrHandedOver: before the kubelet, at boot, the file steps of an interrupted update are done;
// FinishUnit, after the kubelet, does the rest.
var ErrHandedOver = errors.New("the file steps are done; the kubelet's follow after it starts")

// ErrNoJournal: there is no interrupted update to resume.
var ErrNoJournal = errors.New("no update to resume")

// Apply takes the node to u (or finishes or rolls back the update its journal records first)
// and returns the result it wrote. An error is ErrPaused, or something that kept the update
// from running at all (its lock, its state directory); no result is written then.
func (n *Node) Apply(ctx context.Context, u Update) (Result, error) {
	if err := u.Validate(); err != nil {
		return n.end(Result{Why: err.Error()})
	}
	return n.run(ctx, &u, false)
}

// Resume is the boot unit's, before the kubelet starts: the file steps of the journal's update
// (or of its rollback) to their end, then ErrHandedOver; ErrNoJournal when there is none.
func (n *Node) Resume(ctx context.Context) (Result, error) { return n.run(ctx, nil, true) }

// Finish is the boot unit's after the kubelet started: the rest of the journal's update (or of
// its rollback), and its result.
func (n *Node) Finish(ctx context.Context) (Result, error) { return n.run(ctx, nil, false) }

// run holds the lock and decides from the journal: none, the same update (forward), or a
// rollback (of a failed step, or of another update's journal, after which want goes on).
// beforeKubelet stops at the kubelet's restart with ErrHandedOver.
func (n *Node) run(ctx context.Context, want *Update, beforeKubelet bool) (Result, error) {
	unlock, err := n.lock()
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	j, err := n.readJournal()
	if err != nil {
		return Result{}, err
	}
	if j == nil {
		if want == nil {
			return Result{}, ErrNoJournal
		}
		return n.fresh(ctx, *want, beforeKubelet)
	}
	if want == nil {
		want = &j.Update
	}
	if !n.disk.exists(backupDir) {
		return n.end(Result{Why: fmt.Sprintf("the journal (%s, %s) has no backup beside it, so the update can neither go on nor roll back", j.Update.Version, j.Step)})
	}
	if !j.RollingBack && sameUpdate(j.Update, *want) {
		n.logf("going on with the update to %s from its journal (%s)", j.Update.Version, j.Step)
		return n.forward(ctx, j, beforeKubelet)
	}
	if !j.RollingBack {
		n.logf("rolling back the interrupted update to %s (%s) before the update to %s", j.Update.Version, j.Step, want.Version)
		j.RollingBack, j.Failed, j.Why = true, "", "interrupted by the update to "+want.Version
		j.Step, j.Done = "", false
	}
	res, err := n.rollback(ctx, j, beforeKubelet)
	if err != nil || j.Failed != "" || !res.OK {
		return res, err
	}
	return n.fresh(ctx, *want, beforeKubelet)
}

// sameUpdate: the two ask for the same version from the same place.
func sameUpdate(a, b Update) bool { return reflect.DeepEqual(a, b) }

// lock takes the state directory's lock (one update at a time on a node).
func (n *Node) lock() (func(), error) {
	if err := n.disk.mkdirAll(StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("the state directory: %w", err)
	}
	f, err := os.OpenFile(n.disk.path(lockPath), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("the update's lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("the update's lock: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

// end writes the result, durably, and returns it.
func (n *Node) end(r Result) (Result, error) {
	if err := n.disk.writeFile(resultPath, []byte(r.Line()+"\n"), 0o600); err != nil {
		return Result{}, fmt.Errorf("writing the result: %w", err)
	}
	n.logf("%s", r.Line())
	return r, nil
}

func (n *Node) logf(format string, args ...any) {
	fmt.Fprintf(n.log, "cabpi: "+format+"\n", args...)
}

// ErrInterrupted: a command of a step was stopped by a signal from outside (a shutdown signals
// every process of the unit, and may reach the command before this process's own SIGTERM ends
// its context): a pause, not a failure.
var ErrInterrupted = errors.New("interrupted")

// paused tells a step cut short by ctx (SIGTERM), or by a signal to its command, from a failure.
func paused(ctx context.Context, err error) bool {
	return err != nil && (ctx.Err() != nil || errors.Is(err, ErrInterrupted))
}
