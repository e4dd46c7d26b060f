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
	"strings"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// fresh starts the update u on a node with no journal.
func (n *Node) fresh(ctx context.Context, u Update, beforeKubelet bool) (Result, error) {
	if err := n.disk.remove(resultPath); err != nil {
		return Result{}, err
	}
	work, cancel := n.bounded(ctx)
	defer cancel()
	n.logf("updating Kubernetes (%s) to %s", u.Source(), u.Version)
	if err := n.confirm(work, u); err == nil {
		n.logf("kubeadm and the kubelet are %s already", u.Version)
		if err := n.waitHealthy(work); err != nil {
			if paused(ctx, err) {
				return Result{}, ErrPaused
			}
			return n.end(Result{Why: fmt.Sprintf("%s: %v", stepHealth, n.bounds(work, err))})
		}
		return n.succeeded(u)
	}
	n.logf("step: %s", stepFetch)
	if err := n.fetchUpdate(work, u); err != nil {
		if paused(ctx, err) {
			return Result{}, ErrPaused
		}
		// A final failure: what was staged goes (a new update downloads again).
		if err := n.disk.remove(stageDir); err != nil {
			return Result{}, err
		}
		var digest *nodelayout.DigestError
		if errors.As(err, &digest) {
			return n.end(Result{Why: err.Error()})
		}
		return n.end(Result{Why: fmt.Sprintf("%s: %v", stepFetch, n.bounds(work, err))})
	}
	from := "an unknown version"
	if out, err := n.host.Run(work, "kubelet", "--version"); err == nil {
		from = nodelayout.KubeletVersion(out)
	}
	j := &journal{Update: u, From: from}
	n.logf("step: %s", stepBackup)
	if err := n.backup(work, j); err != nil {
		// Nothing has changed yet: the backup goes, with the journal if it was written, and
		// what was staged (a final failure: a new update downloads again).
		for _, p := range []string{journalPath, backupDir, stageDir} {
			_ = n.disk.remove(p)
		}
		_ = n.removeBootUnits()
		if paused(ctx, err) {
			return Result{}, ErrPaused
		}
		return n.end(Result{Why: fmt.Sprintf("%s: %v", stepBackup, n.bounds(work, err))})
	}
	n.logf("backed up %s; swapping from %s to %s", from, from, u.Version)
	return n.forwardWithin(ctx, work, j, beforeKubelet)
}

// forward takes the backed-up node to the journal's update from its step on, within the
// update's bound; a step that fails rolls the node back.
func (n *Node) forward(ctx context.Context, j *journal, beforeKubelet bool) (Result, error) {
	work, cancel := n.bounded(ctx)
	defer cancel()
	return n.forwardWithin(ctx, work, j, beforeKubelet)
}

// forwardWithin is forward with work, ctx bounded, for the steps: ctx ending (SIGTERM) pauses,
// work ending (the bound) fails the step.
func (n *Node) forwardWithin(ctx, work context.Context, j *journal, beforeKubelet bool) (Result, error) {
	for _, s := range forwardSteps[next(j, forwardSteps):] {
		if beforeKubelet && s == stepRestart {
			return Result{}, ErrHandedOver
		}
		if err := n.record(j, s, false); err != nil {
			return Result{}, err
		}
		n.logf("step: %s", s)
		if err := n.do(work, j, s); err != nil {
			if paused(ctx, err) {
				return Result{}, ErrPaused
			}
			n.logf("%s failed: %v; rolling back to %s", s, err, j.From)
			j.RollingBack, j.Failed, j.Why = true, s, oneLine(n.bounds(work, err).Error())
			j.Step, j.Done = "", false
			return n.rollback(ctx, j, beforeKubelet)
		}
		if err := n.record(j, s, true); err != nil {
			return Result{}, err
		}
	}
	if err := n.clear(); err != nil {
		return Result{}, err
	}
	return n.succeeded(j.Update)
}

// rollback restores the backup and brings the kubelet up on it, from the journal's rollback
// step on. Its result is written when the rollback ends a failed update; a rollback of another
// update's journal returns Result{OK: true} and writes nothing.
func (n *Node) rollback(ctx context.Context, j *journal, beforeKubelet bool) (Result, error) {
	// The journal's step is a rollback step once rolling back (a failed forward step, or another
	// update's journal, starts the rollback from none).
	steps := rollbackSteps
	start := next(j, steps)
	for _, s := range steps[start:] {
		if beforeKubelet && s == stepRestart {
			return Result{}, ErrHandedOver
		}
		if err := n.record(j, s, false); err != nil {
			return Result{}, err
		}
		n.logf("step: %s (rolling back to %s)", s, j.From)
		if err := n.do(ctx, j, s); err != nil {
			if paused(ctx, err) {
				return Result{}, ErrPaused
			}
			why := fmt.Sprintf("rolling back to %s failed too: %s: %s", j.From, s, oneLine(err.Error()))
			if j.Failed != "" {
				why = fmt.Sprintf("%s: %s; %s", j.Failed, j.Why, why)
			} else {
				why = fmt.Sprintf("an interrupted update to %s (%s) could not be rolled back: %s: %s", j.Update.Version, j.Why, s, oneLine(err.Error()))
			}
			// The journal stays: the next run or boot tries the rollback again.
			return n.end(Result{Why: why})
		}
		if err := n.record(j, s, true); err != nil {
			return Result{}, err
		}
	}
	if err := n.clear(); err != nil {
		return Result{}, err
	}
	if j.Failed == "" {
		n.logf("rolled back the interrupted update to %s", j.Update.Version)
		return Result{OK: true}, nil
	}
	return n.end(Result{Why: fmt.Sprintf("%s: %s; rolled back to %s", j.Failed, j.Why, j.From)})
}

// ErrBoundExceeded: the update took longer than its bound.
var ErrBoundExceeded = errors.New("the update took longer than its bound")

// bounded is ctx with the update's bound, for its steps.
func (n *Node) bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, n.bound, ErrBoundExceeded)
}

// bounds says when err came from the bound passing.
func (n *Node) bounds(work context.Context, err error) error {
	if errors.Is(context.Cause(work), ErrBoundExceeded) {
		return fmt.Errorf("%w (the update's bound, %s, passed)", err, n.bound)
	}
	return err
}

// do runs one step.
func (n *Node) do(ctx context.Context, j *journal, s step) error {
	switch s {
	case stepSwap:
		return n.swap(ctx, j)
	case stepKubeadm:
		return n.kubeadmUpgrade(ctx)
	case stepRestart:
		_, err := n.host.Run(ctx, "systemctl", "restart", "kubelet.service")
		return err
	case stepHealth:
		return n.waitHealthy(ctx)
	case stepConfirm:
		return n.confirm(ctx, j.Update)
	case stepRestore:
		return n.restore(ctx, j)
	}
	return fmt.Errorf("no step %q", s)
}

// succeeded writes the version's "ok".
func (n *Node) succeeded(u Update) (Result, error) {
	return n.end(Result{OK: true, Version: u.Version})
}

// clear forgets a finished update: the journal first, so that the backup is never used alone,
// then the backup, the downloads and the boot units.
func (n *Node) clear() error {
	if err := n.disk.remove(journalPath); err != nil {
		return err
	}
	for _, p := range []string{backupDir, stageDir} {
		if err := n.disk.remove(p); err != nil {
			return err
		}
	}
	return n.removeBootUnits()
}

// waitHealthy waits for the kubelet's health endpoint to answer ok.
func (n *Node) waitHealthy(ctx context.Context) error {
	deadline := time.Now().Add(n.healthTimeout)
	for {
		err := n.host.Healthy(ctx)
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the kubelet did not answer ok on its health endpoint within %s: %w", n.healthTimeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(n.healthEvery):
		}
	}
}

// oneLine is an error's words on one line, at most 400 characters (a result line, a
// termination message).
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 400 {
		s = s[:400]
	}
	return s
}
