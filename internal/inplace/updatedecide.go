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
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodeupdate"
)

// The decision of UpdateMachine: what one call does, from what was gathered (updateFacts:
// gather.go reads the management cluster, gatherWorkload the workload cluster), with no client
// and no clock. Every branch is a row of updatedecide_test.go; update.go carries the action out.

// updateFacts are what one UpdateMachine call decides from, as the API servers have them.
type updateFacts struct {
	machine *clusterv1.Machine
	// version is the Machine's spec.version: the version the node moves to.
	version string
	// args are cabpi update-node's arguments for the Machine's IgnitionConfig's source; argsErr
	// says why that source cannot be updated in place.
	args    []string
	argsErr error
	// node is the Machine's Node; nil while the Machine has no nodeRef.
	node *corev1.Node
	// job is the Job of this update (jobName of the Machine and version); nil when there is none.
	job *batchv1.Job
	// others are the Machine's other update Jobs (of another version).
	others []batchv1.Job
	// controlPlane is the version the kubelet may not be of a newer minor than; read only when
	// an update is to start (no job, the node not done), "" otherwise.
	controlPlane string
	// jobEnd is why a failed job failed, and whether the node side ended it (its exit code).
	jobEnd jobEnd
}

// jobEnd is how a failed update Job ended (jobFailure).
type jobEnd struct {
	why        string
	rolledBack bool
}

// nodeDone: the node's kubelet reports the version exactly (Cluster API compares the strings)
// and the node is Ready.
func (f updateFacts) nodeDone() bool {
	return f.node != nil && f.node.Status.NodeInfo.KubeletVersion == f.version && nodeReady(f.node)
}

// updateActionKind is what one UpdateMachine call does.
type updateActionKind int

const (
	// actRefuse: answer Failure and write nothing (a request or a state cabpi does not act on).
	actRefuse updateActionKind = iota
	// actWaitForNode: the Machine has no Node yet; ask again soon.
	actWaitForNode
	// actWaitForOtherJob: an update of the Machine to another version still runs; let it end.
	actWaitForOtherJob
	// actFinished: no Job and the node runs the version: uncordon, answer done.
	actFinished
	// actStart: cordon, drain before a minor upgrade (drain.go), create the Job.
	actStart
	// actRunning: the Job runs; ask again.
	actRunning
	// actWaitForKubelet: the Job completed, the Node does not report the version yet.
	actWaitForKubelet
	// actSucceeded: the node runs the version and the Job ended: uncordon, remove the Job, say so.
	actSucceeded
	// actJobEnded: the Job failed without the node side's result (its deadline, its Pods lost);
	// the unit on the node outlives it, so the node is watched: say so once, keep polling.
	actJobEnded
	// actRolledBack: the node side failed the update and put the node back: uncordon, say so
	// once, answer Failure.
	actRolledBack
)

var updateActionNames = map[updateActionKind]string{
	actRefuse: "refuse", actWaitForNode: "wait for node", actWaitForOtherJob: "wait for other Job", actFinished: "finished",
	actStart: "start", actRunning: "running", actWaitForKubelet: "wait for kubelet", actSucceeded: "succeeded",
	actJobEnded: "Job ended", actRolledBack: "rolled back",
}

func (k updateActionKind) String() string { return updateActionNames[k] }

// updateAction is what decideUpdate returns.
type updateAction struct {
	kind updateActionKind
	// reason says why, for actRefuse.
	reason string
	// otherVersion is the version the running update of another version moves the node to,
	// for actWaitForOtherJob.
	otherVersion string
	// removeJobs are the Machine's finished Jobs of other versions, removed before the action.
	removeJobs []*batchv1.Job
}

// decideUpdate is the decision of one UpdateMachine call.
func decideUpdate(f updateFacts) updateAction {
	refuse := func(format string, args ...any) updateAction {
		return updateAction{kind: actRefuse, reason: fmt.Sprintf(format, args...)}
	}
	if f.argsErr != nil {
		return refuse("Machine %s: %v", f.machine.Name, f.argsErr)
	}
	if f.node == nil {
		return updateAction{kind: actWaitForNode}
	}
	var remove []*batchv1.Job
	for i := range f.others {
		other := &f.others[i]
		if why := notOurs(other, f.machine, f.node.Name); why != "" {
			return refuse("Job %s/%s %s: cabpi neither trusts nor deletes it", other.Namespace, other.Name, why)
		}
		if jobActive(other) {
			return updateAction{kind: actWaitForOtherJob, otherVersion: other.Annotations[VersionAnnotation]}
		}
		remove = append(remove, other)
	}
	act := func(kind updateActionKind) updateAction { return updateAction{kind: kind, removeJobs: remove} }

	if f.job == nil {
		if f.nodeDone() {
			return act(actFinished)
		}
		// The rule of the CanUpdate hooks, again, from the node as it is: its kubelet's version
		// to the Machine's, within the control plane's skew.
		if why := versionDeclined(f.node.Status.NodeInfo.KubeletVersion, f.version, f.controlPlane); why != "" {
			return refuse("Node %s runs %s: %s", f.node.Name, f.node.Status.NodeInfo.KubeletVersion, why)
		}
		return act(actStart)
	}
	if why := notOurs(f.job, f.machine, f.node.Name); why != "" {
		return refuse("Job %s/%s %s: cabpi neither trusts nor deletes it", f.job.Namespace, f.job.Name, why)
	}
	if v := f.job.Annotations[VersionAnnotation]; v != f.version {
		return refuse("Job %s/%s moves its node to %s, not %s: cabpi neither trusts nor deletes it", f.job.Namespace, f.job.Name, v, f.version)
	}
	switch {
	case jobFinished(f.job, batchv1.JobComplete) && f.nodeDone():
		return act(actSucceeded)
	case jobFinished(f.job, batchv1.JobComplete):
		return act(actWaitForKubelet)
	case jobFinished(f.job, batchv1.JobFailed) && f.jobEnd.rolledBack:
		return act(actRolledBack)
	case jobFinished(f.job, batchv1.JobFailed) && f.nodeDone():
		// Ended without the node side's result, but the node got there on its own.
		return act(actSucceeded)
	case jobFinished(f.job, batchv1.JobFailed):
		return act(actJobEnded)
	}
	return act(actRunning)
}

// needsControlPlaneVersion: the decision reads the control plane's version (an update is to
// start), so the gathering reads it.
func needsControlPlaneVersion(f updateFacts) bool {
	return f.argsErr == nil && f.node != nil && f.job == nil && !f.nodeDone()
}

// rolledBackMessage is what Cluster API and the Machine's event are told of an update the node
// side failed.
func rolledBackMessage(f updateFacts) string {
	return fmt.Sprintf("updating Node %s to %s failed: %s. The Job %s/%s keeps the record (its Pod's log and the node's "+
		"journalctl -u %s); delete the Job to try again once the cause is fixed, or delete the Machine to replace it",
		f.node.Name, f.version, f.jobEnd.why, UpdateNamespace, f.job.Name, nodeupdate.Unit)
}
