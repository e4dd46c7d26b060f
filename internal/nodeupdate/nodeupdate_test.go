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
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

var sources = map[string]cabpiv1.KubernetesSpec{
	"sysext": {Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{BaseURL: mirror, Sysupdate: true}},
	"binaries": {Source: cabpiv1.KubernetesSourceBinaries,
		Binaries: &cabpiv1.BinariesSource{BaseURL: mirror, Kubectl: true}},
}

func TestApplySucceeds(t *testing.T) {
	for name, k := range sources {
		t.Run(name, func(t *testing.T) {
			tn := newTestNode(t, k)
			res, err := tn.node().Apply(context.Background(), tn.update)
			require.NoError(t, err)
			assert.Equal(t, Result{OK: true, Version: newVersion}, res)
			assert.Equal(t, "ok "+newVersion, tn.result())
			tn.assertAt(newVersion)
			if k.Source == cabpiv1.KubernetesSourceSysext {
				l, err := nodelayout.SysextFor(k, newVersion)
				require.NoError(t, err)
				transfers, err := tn.node().transfers()
				require.NoError(t, err)
				assert.Equal(t, []string{l.Transfer}, transfers, "sysupdate's transfer file is the new minor's alone")
			}
			// Again: the node is at the version; nothing is fetched or swapped.
			calls := len(tn.host.calls)
			res, err = tn.node().Apply(context.Background(), tn.update)
			require.NoError(t, err)
			assert.True(t, res.OK)
			assert.NotContains(t, tn.host.calls[calls:], "kubeadm upgrade node --certificate-renewal=false")
		})
	}
}

// Every step the update journals, cut by the power before and after it (and in the middle of
// the backup): on the next boot, the resume unit (before the kubelet) and the finish unit
// (after) take the node to the new version, or, cut before the backup was journaled, leave
// it on the old one and the next run updates it.
func TestPowerCutAtEveryPointResumes(t *testing.T) {
	for name, k := range sources {
		cmds := []string{"kubelet --version", "systemctl restart kubelet.service", "kubeadm upgrade node --certificate-renewal=false", "kubeadm version -o short"}
		if k.Source == cabpiv1.KubernetesSourceSysext {
			cmds = append(cmds, "systemd-sysext refresh", "systemctl daemon-reload")
		}
		for _, cmd := range cmds {
			for _, after := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/after=%v", name, cmd, after), func(t *testing.T) {
					tn := newTestNode(t, k)
					if after {
						tn.host.crashAfter = cmd
					} else {
						tn.host.crashAt = cmd
					}
					at := cut(func() { _, _ = tn.node().Apply(context.Background(), tn.update) })
					require.NotEmpty(t, at, "the power was cut")
					tn.reboot()
					bootAndFinish(t, tn)
					res, err := tn.node().Apply(context.Background(), tn.update)
					require.NoError(t, err)
					assert.Equal(t, "ok "+newVersion, res.Line())
					tn.assertAt(newVersion)
				})
			}
		}
	}
}

// Every journal write is a point the power can be cut at, too: after each, the boot units
// finish the update.
func TestPowerCutAfterEveryJournalWrite(t *testing.T) {
	for name, k := range sources {
		for n := 1; ; n++ {
			tn := newTestNode(t, k)
			writes := 0
			node := New(tn.host, tn.mirror, Options{Root: tn.root, HealthTimeout: 1, HealthEvery: 1, Synced: func(p string) {
				if p == filepath.Dir(journalPath) && tn.node().disk.exists(journalPath) {
					writes++
					if writes == n {
						panic(crash{at: fmt.Sprintf("journal write %d", n)})
					}
				}
			}})
			at := cut(func() { _, _ = node.Apply(context.Background(), tn.update) })
			if at == "" {
				require.Greater(t, n, 5, "%s: the update writes its journal more than a few times", name)
				break
			}
			t.Run(fmt.Sprintf("%s/%s", name, at), func(t *testing.T) {
				tn.reboot()
				bootAndFinish(t, tn)
				res, err := tn.node().Apply(context.Background(), tn.update)
				require.NoError(t, err)
				assert.Equal(t, "ok "+newVersion, res.Line())
				tn.assertAt(newVersion)
			})
		}
	}
}

// bootAndFinish runs what the next boot runs: the resume unit, the kubelet, the finish unit, each
// only while the journal is there (their ConditionPathExists).
func bootAndFinish(t *testing.T, tn *testNode) {
	t.Helper()
	if !tn.node().disk.exists(journalPath) {
		tn.host.running = tn.host.binaryVersion("kubelet")
		return
	}
	for _, unit := range []string{ResumeUnit, FinishUnit} {
		assert.FileExists(t, filepath.Join(tn.root, wantsDir, unit), "%s is enabled while the journal is there", unit)
	}
	_, err := tn.node().Resume(context.Background())
	if !errors.Is(err, ErrHandedOver) {
		require.NoError(t, err)
	}
	// The kubelet starts after the resume unit, on what is there now.
	tn.host.running = tn.host.binaryVersion("kubelet")
	if tn.node().disk.exists(journalPath) {
		_, err = tn.node().Finish(context.Background())
		require.NoError(t, err)
	}
}

// A kubelet that never answers on the new version: the update rolls back, and a power cut at
// any point of the rollback still ends on the old version, reported failed.
func TestFailedUpdateRollsBackThroughPowerCuts(t *testing.T) {
	for name, k := range sources {
		for _, cmd := range []string{"", "systemctl restart kubelet.service", "systemctl daemon-reload"} {
			t.Run(fmt.Sprintf("%s/cut at %q", name, cmd), func(t *testing.T) {
				tn := newTestNode(t, k)
				tn.host.broken[newVersion] = true
				// The cut comes at cmd's second call: the rollback's restart; the restore's
				// daemon-reload on sysext nodes (the swap's is the first; binaries nodes reload
				// once, in the restore, and are not cut).
				seen := 0
				at := cut(func() {
					node := tn.node()
					node.host = &countingHost{fakeHost: tn.host, cmd: cmd, after: 1, seen: &seen}
					res, err := node.Apply(context.Background(), tn.update)
					require.NoError(t, err)
					assert.False(t, res.OK)
				})
				if at != "" {
					tn.reboot()
					bootAndFinish(t, tn)
				}
				assert.Contains(t, tn.result(), "failed: kubelet health: ")
				assert.Contains(t, tn.result(), "rolled back to "+oldVersion)
				tn.assertAt(oldVersion)
				if k.Source == cabpiv1.KubernetesSourceSysext {
					l, err := nodelayout.SysextFor(k, oldVersion)
					require.NoError(t, err)
					transfers, err := tn.node().transfers()
					require.NoError(t, err)
					assert.Equal(t, []string{l.Transfer}, transfers, "sysupdate's transfer file is the old minor's again")
				}
			})
		}
	}
}

// countingHost cuts the power at the (after+1)th call of cmd.
type countingHost struct {
	*fakeHost
	cmd   string
	after int
	seen  *int
}

func (h *countingHost) Run(ctx context.Context, name string, args ...string) (string, error) {
	if words(name, args) == h.cmd {
		if *h.seen == h.after {
			panic(crash{at: "the rollback's " + h.cmd})
		}
		*h.seen++
	}
	return h.fakeHost.Run(ctx, name, args...)
}

func TestDigestMismatchChangesNothing(t *testing.T) {
	for name, k := range sources {
		t.Run(name, func(t *testing.T) {
			tn := newTestNode(t, k)
			var tampered string
			if k.Source == cabpiv1.KubernetesSourceSysext {
				l, err := nodelayout.SysextFor(k, newVersion)
				require.NoError(t, err)
				tn.mirror[l.ImageURL] = []byte("something else\n")
				tampered = l.Image
			} else {
				b := nodelayout.BinariesFor(k, newVersion)
				tn.mirror[b.URL("kubelet")] = []byte("something else\n")
				tampered = "kubelet"
			}
			res, err := tn.node().Apply(context.Background(), tn.update)
			require.NoError(t, err)
			assert.False(t, res.OK)
			assert.Contains(t, res.Why, tampered+" does not match its pinned SHA-256")
			tn.assertAt(oldVersion)
			if k.Source == cabpiv1.KubernetesSourceSysext {
				l, _ := nodelayout.SysextFor(k, newVersion)
				assert.NoFileExists(t, filepath.Join(tn.root, l.ImagePath), "the tampered image is not kept where the link could point")
			}
			assert.NotContains(t, tn.host.calls, "kubeadm upgrade node --certificate-renewal=false")
		})
	}
}

// An update that pins no digest for what it would run is refused before anything changes: the
// node never falls back to the mirror's own lists.
func TestMissingPinChangesNothing(t *testing.T) {
	k := sources["binaries"]
	tn := newTestNode(t, k)
	rel := nodelayout.BinariesFor(k, newVersion).Downloads()[0].Rel
	delete(tn.update.Digests, rel)
	_, err := ParseUpdate(mustJSON(t, tn.update))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kubeadm does not match its pinned SHA-256 (the update pins no SHA-256 for "+rel+")")
	res, err := tn.node().Apply(context.Background(), tn.update)
	require.NoError(t, err)
	assert.Contains(t, res.Why, "the update pins no SHA-256 for "+rel)
	tn.assertAt(oldVersion)
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// SIGTERM (the node shutting down) pauses the update: no result, the journal kept; the next
// run goes on from it.
func TestSIGTERMPauses(t *testing.T) {
	for name, k := range sources {
		t.Run(name, func(t *testing.T) {
			tn := newTestNode(t, k)
			ctx, cancel := context.WithCancel(context.Background())
			node := tn.node()
			node.host = &cancelingHost{fakeHost: tn.host, cmd: "kubeadm upgrade node --certificate-renewal=false", cancel: cancel}
			_, err := node.Apply(ctx, tn.update)
			tn.assertPausedThenFinished(err)
		})
	}
}

// cancelingHost ends the context while cmd runs (SIGTERM), which fails it.
type cancelingHost struct {
	*fakeHost
	cmd    string
	cancel context.CancelFunc
}

func (h *cancelingHost) Run(ctx context.Context, name string, args ...string) (string, error) {
	if words(name, args) == h.cmd {
		h.cancel()
		return "", ctx.Err()
	}
	return h.fakeHost.Run(ctx, name, args...)
}

// An interrupted update to another version is rolled back before the update asked for.
func TestAnotherUpdatesJournalIsRolledBackFirst(t *testing.T) {
	k := sources["binaries"]
	tn := newTestNode(t, k)
	tn.host.crashAfter = "kubeadm upgrade node --certificate-renewal=false"
	require.NotEmpty(t, cut(func() { _, _ = tn.node().Apply(context.Background(), tn.update) }))
	tn.host.crashAfter = ""
	other := Update{Version: "v1.33.14", Kubernetes: k, Digests: nodelayout.Digests{}}
	for _, d := range nodelayout.BinariesFor(k, other.Version).Downloads() {
		data := []byte(other.Version + "\n")
		tn.mirror[d.URL] = data
		other.Digests[d.Rel] = digestOf(data)
	}
	res, err := tn.node().Apply(context.Background(), other)
	require.NoError(t, err)
	assert.Equal(t, "ok v1.33.14", res.Line())
	// kubeadm upgrade node ran for the other update from the old version, not from the new one.
	tn.assertAt(other.Version)
}

// Every file a step changes is on the disk before the journal says the step is done, and the
// backup goes only after the journal.
func TestSyncedBeforeTheJournalMovesOn(t *testing.T) {
	k := sources["binaries"]
	tn := newTestNode(t, k)
	_, err := tn.node().Apply(context.Background(), tn.update)
	require.NoError(t, err)
	index := func(p string, from int) int {
		i := slices.Index(tn.synced[from:], p)
		if i < 0 {
			return -1
		}
		return from + i
	}
	journalDir := filepath.Dir(journalPath)
	for _, name := range []string{"kubeadm", "kubelet", "kubectl"} {
		bin := filepath.Join(nodelayout.BinDir, name)
		i := index(bin, 0)
		require.GreaterOrEqual(t, i, 0, "%s synced", bin)
		require.GreaterOrEqual(t, index(nodelayout.BinDir, i), 0, "%s's directory synced after it", bin)
		backup := filepath.Join(backupDir, "bin", name)
		b := index(backup, 0)
		require.GreaterOrEqual(t, b, 0, "its backup synced")
		assert.Less(t, b, i, "backed up before it is swapped")
	}
	kubeletConfig := index(nodelayout.KubeletConfig, index(filepath.Join(backupDir, "kubelet-config"), 0)+1)
	require.GreaterOrEqual(t, kubeletConfig, 0, "what kubeadm rewrote is synced")
	// The journal's removal (its directory synced with it gone) comes before the backup's.
	last := -1
	for i, p := range tn.synced {
		if p == journalDir {
			last = i
		}
	}
	require.GreaterOrEqual(t, last, 0)
	_, err = os.Stat(filepath.Join(tn.root, backupDir))
	assert.True(t, os.IsNotExist(err))
}

// An update that outlasts its bound (a kubelet that never answers on the new version, waited for
// longer than the bound allows) fails the step in flight and rolls back, saying so.
func TestBoundExceededRollsBack(t *testing.T) {
	tn := newTestNode(t, sources["binaries"])
	tn.host.broken[newVersion] = true
	node := New(tn.host, tn.mirror, Options{Root: tn.root, HealthTimeout: time.Hour, HealthEvery: time.Millisecond, Bound: 2 * time.Second})
	res, err := node.Apply(context.Background(), tn.update)
	require.NoError(t, err, "the bound is no pause")
	assert.False(t, res.OK)
	assert.Contains(t, res.Why, "kubelet health: ")
	assert.Contains(t, res.Why, "(the update's bound, 2s, passed); rolled back to "+oldVersion)
	tn.assertAt(oldVersion)
}

// A shutdown signals every process of the unit: a command of the update stopped by that signal
// before the update's own context ends is a pause too, not a failure rolled back.
func TestACommandStoppedByASignalPauses(t *testing.T) {
	tn := newTestNode(t, sources["binaries"])
	node := tn.node()
	node.host = &interruptingHost{fakeHost: tn.host, cmd: "kubeadm upgrade node --certificate-renewal=false"}
	_, err := node.Apply(context.Background(), tn.update)
	tn.assertPausedThenFinished(err)
}

// interruptingHost: cmd is stopped by a signal, as the node host reports it.
type interruptingHost struct {
	*fakeHost
	cmd string
}

func (h *interruptingHost) Run(ctx context.Context, name string, args ...string) (string, error) {
	if words(name, args) == h.cmd {
		return "", fmt.Errorf("%s: %w (terminated)", h.cmd, ErrInterrupted)
	}
	return h.fakeHost.Run(ctx, name, args...)
}

// assertPausedThenFinished: the update ended paused (err), with no result, its journal kept and
// nothing rolled back; the next run finishes it.
func (tn *testNode) assertPausedThenFinished(err error) {
	t := tn.t
	t.Helper()
	require.ErrorIs(t, err, ErrPaused)
	assert.Empty(t, tn.result(), "a paused update has no result")
	j, err := tn.node().readJournal()
	require.NoError(t, err)
	require.NotNil(t, j, "the journal stays")
	assert.False(t, j.RollingBack, "a pause is not a failure")
	res, err := tn.node().Apply(context.Background(), tn.update)
	require.NoError(t, err)
	assert.Equal(t, "ok "+newVersion, res.Line())
	tn.assertAt(newVersion)
}
