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
	"strings"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// The protocol between the update Job's Pod (cabpi update-node) and the node.
const (
	// StateDir is the update's state directory on the node, mounted into the Pod at the same
	// path: ProgramName, UpdateName, the journal, backup, downloads and ResultName.
	StateDir = nodelayout.UpdateStateDir
	// Unit is the transient unit the Pod starts: ProgramName's `update-node apply`.
	Unit = nodelayout.UpdateUnit
	// ResumeUnit and FinishUnit finish an update a reboot interrupted: before the kubelet the
	// file steps, after it the kubelet's. The backup step installs them; clearing removes them.
	ResumeUnit = nodelayout.UpdateResumeUnit
	FinishUnit = nodelayout.UpdateFinishUnit
	// ProgramName is the cabpi binary the Pod copies into StateDir for the host to run.
	ProgramName = "cabpi"
	// UpdateName is the desired update, as JSON (Update), written by the Pod.
	UpdateName = "update.json"
	// ResultName is the result's file: one line, Result's.
	ResultName = "result"
	// JournalName is the journal's file.
	JournalName = "journal.json"
	// FailedExitCode is cabpi update-node's exit code for an update that failed on the node
	// (digests, kubeadm upgrade node, the kubelet), rolled back or never swapped: the update Job
	// does not retry it. Any other failure of the command exits otherwise, and the Job retries.
	FailedExitCode = 1
)

// Update is what the Job asks the node for: the Machine's version and its IgnitionConfig's
// Kubernetes source, as data, and the SHA-256 each download is checked against before anything
// is swapped in (the extension's ignition.KubernetesPins: cabpi's catalogue and the user's
// digests, never the mirror's lists).
type Update struct {
	Version    string                 `json:"version"`
	Kubernetes cabpiv1.KubernetesSpec `json:"kubernetes"`
	Digests    nodelayout.Digests     `json:"digests"`
}

// downloads are the files the update fetches, each pinned in Digests.
func (u Update) downloads() ([]nodelayout.Download, error) {
	if u.Source() == cabpiv1.KubernetesSourceSysext {
		l, err := nodelayout.SysextFor(u.Kubernetes, u.Version)
		if err != nil {
			return nil, err
		}
		return l.Downloads(u.Kubernetes.Sysext != nil && u.Kubernetes.Sysext.Sysupdate), nil
	}
	return nodelayout.BinariesFor(u.Kubernetes, u.Version).Downloads(), nil
}

// pin is the digest d is checked against.
func (u Update) pin(d nodelayout.Download) (string, error) {
	sum, ok := u.Digests[d.Rel]
	if !ok || !nodelayout.IsSHA256(sum) {
		return "", &nodelayout.DigestError{Name: d.Name, Why: "the update pins no SHA-256 for " + d.Rel}
	}
	return sum, nil
}

// Source is the update's Kubernetes source: sysext or binaries.
func (u Update) Source() cabpiv1.KubernetesSource { return u.Kubernetes.Source }

// Validate checks what the node side needs of an update: a version and a source it can swap.
// The extension checks the rest (ignition.CheckInPlace) before it creates the Job.
func (u Update) Validate() error {
	if u.Version == "" {
		return errors.New("the update has no version")
	}
	switch u.Source() {
	case cabpiv1.KubernetesSourceSysext:
		if _, err := nodelayout.SysextFor(u.Kubernetes, u.Version); err != nil {
			return err
		}
	case cabpiv1.KubernetesSourceBinaries:
	default:
		return fmt.Errorf("source %q cannot be updated in place: use sysext or binaries", u.Source())
	}
	// What runs must be pinned: an update without pins is not swapped in.
	downloads, err := u.downloads()
	if err != nil {
		return err
	}
	for _, d := range downloads {
		if _, err := u.pin(d); d.Runs && err != nil {
			return err
		}
	}
	return nil
}

// ParseUpdate reads an Update's JSON and validates it.
func ParseUpdate(data []byte) (Update, error) {
	var u Update
	if err := json.Unmarshal(data, &u); err != nil {
		return Update{}, fmt.Errorf("the update: %w", err)
	}
	if err := u.Validate(); err != nil {
		return Update{}, err
	}
	return u, nil
}

// Result is how an update ended: on Version, or failed for Why (rolled back or never swapped).
type Result struct {
	OK      bool
	Version string
	Why     string
}

const (
	okPrefix     = "ok "
	failedPrefix = "failed: "
)

// Line is the result's line: "ok <version>" or "failed: <why>".
func (r Result) Line() string {
	if r.OK {
		return okPrefix + r.Version
	}
	return failedPrefix + r.Why
}

// ParseResult reads a result line.
func ParseResult(line string) (Result, error) {
	line = strings.TrimSpace(line)
	if v, ok := strings.CutPrefix(line, okPrefix); ok && v != "" {
		return Result{OK: true, Version: v}, nil
	}
	if why, ok := strings.CutPrefix(line, failedPrefix); ok {
		return Result{Why: why}, nil
	}
	return Result{}, fmt.Errorf("%q is not an update's result", line)
}
