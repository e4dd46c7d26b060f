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
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// step is one step of an update or of its rollback.
type step string

const (
	stepFetch   step = "fetch"
	stepBackup  step = "backup"
	stepSwap    step = "swap"
	stepKubeadm step = "kubeadm upgrade node"
	stepRestart step = "kubelet restart"
	stepHealth  step = "kubelet health"
	stepConfirm step = "version check"
	stepRestore step = "restore"
)

// forwardSteps take a backed-up node to the new version; rollbackSteps back to the backup's.
var (
	forwardSteps  = []step{stepSwap, stepKubeadm, stepRestart, stepHealth, stepConfirm}
	rollbackSteps = []step{stepRestore, stepRestart, stepHealth}
)

// journal is what the node keeps of an update from its backup on: which update, from which
// version, which step it is at (before or after it), and whether it is rolling back and why.
type journal struct {
	Update Update `json:"update"`
	// From is the version the node ran before (the kubelet's), for the result's words.
	From   string     `json:"from"`
	Backup backupInfo `json:"backup"`
	Step   step       `json:"step"`
	// Done: the step ended; otherwise it started and may have done part of its work (every
	// step can run again).
	Done bool `json:"done"`
	// RollingBack: the step Failed failed for Why (or the journal was another update's), and
	// the backup is being restored.
	RollingBack bool   `json:"rollingBack,omitempty"`
	Failed      step   `json:"failed,omitempty"`
	Why         string `json:"why,omitempty"`
}

// backupInfo is what the backup holds, in backupDir.
type backupInfo struct {
	// Link is where the sysext link pointed.
	Link string `json:"link,omitempty"`
	// Binaries are the names of the release binaries that were in the bin directory (each
	// copied); Names every name the update swaps (one not backed up is removed on rollback).
	Binaries []string `json:"binaries,omitempty"`
	Names    []string `json:"names,omitempty"`
	// Transfers are the systemd-sysupdate transfer files of the Kubernetes component there were.
	Transfers []string `json:"transfers,omitempty"`
	// KubeletConfig, KubeletFlags: the kubelet's files kubeadm rewrites were there (copied).
	KubeletConfig bool `json:"kubeletConfig,omitempty"`
	KubeletFlags  bool `json:"kubeletFlags,omitempty"`
}

var (
	journalPath = path.Join(StateDir, JournalName)
	resultPath  = path.Join(StateDir, ResultName)
	backupDir   = path.Join(StateDir, "backup")
	stageDir    = path.Join(StateDir, "stage")
	lockPath    = path.Join(StateDir, "lock")
)

// readJournal is the journal, nil when there is none.
func (n *Node) readJournal() (*journal, error) {
	data, err := n.disk.readFile(journalPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the journal: %w", err)
	}
	j := &journal{}
	if err := json.Unmarshal(data, j); err != nil {
		return nil, fmt.Errorf("reading the journal %s: %w", journalPath, err)
	}
	return j, nil
}

// record writes the journal at step (started or done), durably: what the step did before is on
// the disk by now, since every step syncs what it changes.
func (n *Node) record(j *journal, s step, done bool) error {
	j.Step, j.Done = s, done
	data, err := json.Marshal(j)
	if err != nil {
		return err
	}
	if err := n.disk.writeFile(journalPath, data, 0o600); err != nil {
		return fmt.Errorf("writing the journal: %w", err)
	}
	state := "started"
	if done {
		state = "done"
	}
	n.logf("journal: %s %s", s, state)
	return nil
}

// next is the index in steps to go on from: the journal's step again when it did not end, the
// one after it when it did, the first when the journal's step is none of them.
func next(j *journal, steps []step) int {
	for i, s := range steps {
		if s == j.Step {
			if j.Done {
				return i + 1
			}
			return i
		}
	}
	return 0
}
