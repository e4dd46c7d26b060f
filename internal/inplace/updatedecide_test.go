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

package inplace

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// UpdateMachine with no API server: every branch of decideUpdate is a row below, from the facts
// one call gathers (the Machine, its Node, its update Jobs) to the action it takes.

const (
	updateFrom = "v1.33.13"
	updateTo   = "v1.34.4"
)

// updating is the facts of a worker Machine updated from updateFrom to updateTo, its Node Ready at
// updateFrom, no update Job yet, the control plane at updateTo; change edits them.
func updating(change ...func(*updateFacts)) updateFacts {
	m := &clusterv1.Machine{}
	m.Name, m.UID, m.Spec.Version = "w-1", "uid-1", updateTo
	node := &corev1.Node{}
	node.Name = "node-1"
	node.Status.NodeInfo.KubeletVersion = updateFrom
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	f := updateFacts{machine: m, version: updateTo, args: []string{"update-node"}, node: node, controlPlane: updateTo}
	for _, c := range change {
		c(&f)
	}
	return f
}

// ourJob is the update Job cabpi makes for the Machine of updating() to version, with the
// conditions its status has.
func ourJob(version string, conditions ...batchv1.JobConditionType) *batchv1.Job {
	j := updateJob("uid-1", "node-1", version, "example.invalid/cabpi", nil)
	for _, c := range conditions {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return j
}

func withJob(j *batchv1.Job) func(*updateFacts) { return func(f *updateFacts) { f.job = j } }

// nodeAt: the node's kubelet reports version, Ready or not.
func nodeAt(version string, ready bool) func(*updateFacts) {
	return func(f *updateFacts) {
		f.node.Status.NodeInfo.KubeletVersion = version
		if !ready {
			f.node.Status.Conditions[0].Status = corev1.ConditionFalse
		}
	}
}

func TestDecideUpdate(t *testing.T) {
	finishedOther := *ourJob("v1.34.3", batchv1.JobComplete)
	tests := []struct {
		name        string
		facts       updateFacts
		want        updateActionKind
		wantReason  string // contained in the action's reason
		wantRemoved int
		// wantOtherVersion: the version of the other update waited for.
		wantOtherVersion string
		// wantCPNeeded: the gathering reads the control plane's version (needsControlPlaneVersion):
		// whenever no Job of this update exists and the node is not done, before the decision.
		wantCPNeeded bool
	}{
		{name: "a source that is not updated in place", facts: updating(func(f *updateFacts) { f.argsErr = errors.New("the image source") }),
			want: actRefuse, wantReason: "the image source"},
		{name: "no Node yet", facts: updating(func(f *updateFacts) { f.node = nil }), want: actWaitForNode},

		{name: "start: no Job, the node on the old version", facts: updating(), want: actStart, wantCPNeeded: true},
		{name: "start: a newer patch of the control plane's minor", facts: updating(func(f *updateFacts) { f.controlPlane = "v1.34.1" }),
			want: actStart, wantCPNeeded: true},
		{name: "refused at start: a minor newer than the control plane", facts: updating(func(f *updateFacts) { f.controlPlane = "v1.33.13" }),
			want: actRefuse, wantReason: "newer than the control plane's", wantCPNeeded: true},
		{name: "refused at start: the node is newer than the Machine (a downgrade)", facts: updating(nodeAt("v1.35.0", true)),
			want: actRefuse, wantReason: "kubeadm does not downgrade", wantCPNeeded: true},
		{name: "start again: the node reports the version but is not Ready", facts: updating(nodeAt(updateTo, false)),
			want: actStart, wantCPNeeded: true},
		{name: "finished: no Job, the node Ready at the version", facts: updating(nodeAt(updateTo, true)), want: actFinished},

		{name: "an update of another version still runs", facts: updating(func(f *updateFacts) { f.others = []batchv1.Job{*ourJob("v1.34.3")} }),
			want: actWaitForOtherJob, wantOtherVersion: "v1.34.3", wantCPNeeded: true},
		{name: "a finished Job of another version is removed, then the update starts",
			facts: updating(func(f *updateFacts) { f.others = []batchv1.Job{finishedOther} }), want: actStart, wantRemoved: 1, wantCPNeeded: true},
		{name: "a Job of another version without cabpi's labels", facts: updating(func(f *updateFacts) {
			j := *ourJob("v1.34.3", batchv1.JobComplete)
			delete(j.Labels, "app.kubernetes.io/managed-by")
			f.others = []batchv1.Job{j}
		}), want: actRefuse, wantReason: "neither trusts nor deletes it", wantCPNeeded: true},

		{name: "a Job at the update's name without cabpi's labels", facts: updating(withJob(func() *batchv1.Job {
			j := ourJob(updateTo)
			j.Labels = nil
			return j
		}())), want: actRefuse, wantReason: "lacks the label"},
		{name: "a Job at the update's name pinned to another node", facts: updating(withJob(func() *batchv1.Job {
			j := ourJob(updateTo)
			j.Spec.Template.Spec.NodeName = "node-2"
			return j
		}())), want: actRefuse, wantReason: "not pinned to Node node-1"},
		{name: "a Job at the update's name for another version", facts: updating(withJob(func() *batchv1.Job {
			j := ourJob(updateTo)
			j.Annotations[VersionAnnotation] = "v1.99.0"
			return j
		}())), want: actRefuse, wantReason: "moves its node to v1.99.0"},

		{name: "the Job runs", facts: updating(withJob(ourJob(updateTo))), want: actRunning},
		{name: "the Job completed, the node reports the version", facts: updating(withJob(ourJob(updateTo, batchv1.JobComplete)), nodeAt(updateTo, true)),
			want: actSucceeded},
		{name: "the Job completed, the kubelet not back yet", facts: updating(withJob(ourJob(updateTo, batchv1.JobComplete))),
			want: actWaitForKubelet},
		{name: "the node side failed and rolled back", facts: updating(withJob(ourJob(updateTo, batchv1.JobFailed)),
			func(f *updateFacts) { f.jobEnd = jobEnd{why: "failed: digest", rolledBack: true} }), want: actRolledBack},
		{name: "the Job ended without the node side's result: the node is watched", facts: updating(withJob(ourJob(updateTo, batchv1.JobFailed)),
			func(f *updateFacts) { f.jobEnd = jobEnd{why: "DeadlineExceeded"} }), want: actJobEnded},
		{name: "the Job ended without the node side's result, the node got there", facts: updating(withJob(ourJob(updateTo, batchv1.JobFailed)),
			nodeAt(updateTo, true), func(f *updateFacts) { f.jobEnd = jobEnd{why: "DeadlineExceeded"} }), want: actSucceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideUpdate(tt.facts)
			assert.Equal(t, tt.want, got.kind, "action (reason %q)", got.reason)
			if tt.wantReason != "" {
				assert.Contains(t, got.reason, tt.wantReason)
			}
			assert.Equal(t, tt.wantOtherVersion, got.otherVersion)
			assert.Len(t, got.removeJobs, tt.wantRemoved, "Jobs removed")
			assert.Equal(t, tt.wantCPNeeded, needsControlPlaneVersion(tt.facts), "the control plane's version is read")
		})
	}
}

// The message of a rolled-back update names the node, the version, the node side's words, the
// Job that keeps the record and what to do.
func TestRolledBackMessage(t *testing.T) {
	f := updating(withJob(ourJob(updateTo, batchv1.JobFailed)), func(f *updateFacts) { f.jobEnd = jobEnd{why: "failed: digest", rolledBack: true} })
	msg := rolledBackMessage(f)
	for _, want := range []string{"Node node-1", updateTo, "failed: digest", UpdateNamespace + "/" + f.job.Name, "delete the Job", "delete the Machine"} {
		assert.Contains(t, msg, want)
	}
}
