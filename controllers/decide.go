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

package controllers

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// The decision: what one reconcile of an IgnitionConfig does, from what was gathered (facts,
// gather.go), with no client and no clock of its own. Every rule of the BootstrapConfig contract
// that this provider follows is a branch of decide, and a row of decide_test.go.

// actionKind is what a reconcile does.
type actionKind int

const (
	// actKeep: nothing to write but the status notes; look again after requeue.
	actKeep actionKind = iota
	// actWait: no data yet, for a reason outside the config (DataSecretAvailable False, no event).
	actWait
	// actFail: no data, for a reason the user acts on (False, a warning event, counted).
	actFail
	// actInit: render kubeadm init (init.go), under the Cluster's init lock.
	actInit
	// actControlPlaneJoin and actWorkerJoin: render a join with the config's next join token
	// (join.go): a first render, or a render again before provisioning once the token is gone.
	actControlPlaneJoin
	actWorkerJoin
	// actRerender: the delivered data's inputs changed before its owner started provisioning;
	// render it again in place, keeping its join token (delivered.go).
	actRerender
	// actRefreshToken: extend the delivered data's join token until the node joins.
	actRefreshToken
	// actRotatePoolToken: a MachinePool's data gets its next join token (machinepool.go).
	actRotatePoolToken
	// actTokenLost: the token of data a provisioned machine took is gone; the Machine cannot
	// join and must be replaced (actFail with reason JoinTokenLost).
	actTokenLost
	// actAdopt: a data Secret the status does not record is recorded, never rendered again
	// (an ownerless one only once its owner started provisioning).
	actAdopt
	// actForgetDataSecret: the data Secret was deleted before the node joined; the status
	// forgets it, so the next reconcile renders it again.
	actForgetDataSecret
	// actInPlaceUpdate: Cluster API updates the config's Machine in place; nothing is written,
	// not even the status.
	actInPlaceUpdate
)

var actionNames = map[actionKind]string{
	actKeep: "keep", actWait: "wait", actFail: "fail", actInit: "init",
	actControlPlaneJoin: "control-plane join", actWorkerJoin: "worker join", actRerender: "re-render",
	actRefreshToken: "refresh token", actRotatePoolToken: "rotate pool token", actTokenLost: "token lost",
	actAdopt: "adopt", actForgetDataSecret: "forget data Secret", actInPlaceUpdate: "in-place update",
}

func (k actionKind) String() string { return actionNames[k] }

// action is what decide returns: one kind, with what that kind needs.
type action struct {
	kind actionKind
	// reason and message: DataSecretAvailable's, for actWait, actFail and actTokenLost.
	reason, message string
	// requeue: how soon the config is looked at again when the action leaves it as it is (0:
	// only on a watched change).
	requeue time.Duration
	// role of the data to render (actInit, the joins, actRerender).
	role ignition.Role
	// rerender is the input the delivered data is rendered again from (actRerender).
	rerender *nodeInput
	// currentTokenUsable: the pool's current token still joins (actRotatePoolToken): a rotation
	// that fails then keeps the data and its condition.
	currentTokenUsable bool
	// token is the delivered data's join token Secret in the workload cluster (actRefreshToken).
	token *corev1.Secret
	// delivered says what the status of delivered data is to say, whatever the action.
	delivered deliveredNotes
}

// deliveredNotes is what delivered data's status says besides the action: each is a fact the
// status records, decided here, written by the outcome (outcome.go).
type deliveredNotes struct {
	// available: DataSecretAvailable turns True (it is not, or no longer says RerenderFailed).
	available bool
	// certificates: CertificatesAvailable True (a control-plane Machine's data is delivered).
	certificates bool
	// rerenderFailed: the inputs changed but do not build or render: DataSecretAvailable stays
	// True, reason RerenderFailed, with why.
	rerenderFailed *notStored
	// recordHash: the digest of data delivered before digests were recorded.
	recordHash string
	// recordSpecHash: the spec digest (status.dataSpecHash) of a spec change reported, or of
	// data delivered before spec digests were recorded.
	recordSpecHash string
	// noteSpecChange: an event says once that a spec changed after provisioning is not rendered.
	noteSpecChange bool
	// forgetToken: the token needs nothing more (the node joined); forget its expiration.
	forgetToken bool
}

// notStored is why no data was stored, as the status says it: DataSecretAvailable's reason and
// message, when to look again, and what it means.
type notStored struct {
	reason  string
	message string
	requeue time.Duration
	// userError: the user fixes it; a warning event says so and it is counted
	// (cabpi_failures_total). Plain waiting is neither.
	userError bool
	// neverRenders: the same input never renders (or never fits a Secret): it is not rendered
	// again until it changes.
	neverRenders bool
}

// policy is the reconciler's configuration the decision uses.
type policy struct {
	tokenTTL                 time.Duration
	referenceRecheckInterval time.Duration
}

// Timing follows CABPK: look every TTL/3, so a token gets at least two chances to be extended
// before it expires, and extend once less than 5/6 of the TTL is left. A pool's token is replaced
// once less than half of it is left: instances created from the data must still join.
func (p policy) tokenCheckInterval() time.Duration { return p.tokenTTL / 3 }
func (p policy) refreshWhenLeft() time.Duration    { return p.tokenTTL * 5 / 6 }
func (p policy) rotateWhenLeft() time.Duration     { return p.tokenTTL / 2 }

// waitRequeue is how soon a config waiting on something not watched is looked at again.
const waitRequeue = 30 * time.Second

// renderErrorRetry: a config that fails to render is looked at again after this long (for
// fixes in referenced Secrets and ConfigMaps the reference watch does not see, those without the
// cluster-name label); a spec change, or a change to a labelled reference, is seen at once.
const renderErrorRetry = 5 * time.Minute

// decide is the BootstrapConfig contract as this provider follows it, in order.
func decide(f facts, p policy) action {
	switch {
	case f.inPlaceUpdate:
		// Cluster API's MachineSet controller applied the new spec with the UpdateInProgress
		// annotation, and its update extension brings the node to it; the annotation goes once
		// it is done. Until then the data, the join token and the status are left as they are:
		// the change is the extension's to apply, not a change of the data, and not a failure.
		// (Cluster API updates only Machines whose node joined in place, so there is data; a
		// config annotated by hand before is rendered once the annotation is gone.)
		return action{kind: actInPlaceUpdate}
	case f.conflict != "":
		return action{kind: actFail, reason: cabpiv1.DataSecretConflictReason, message: f.conflict, requeue: waitRequeue}
	case f.delivered && !f.dataSecret && f.machineJoined:
		// The node booted from that data long ago and needs it no more: nothing to render again
		// (its role may have changed since, e.g. from kubeadm init to join).
		return action{kind: actKeep}
	case f.delivered && !f.dataSecret:
		// Before the node joined the infrastructure may still need it: rendered again next time.
		return action{kind: actForgetDataSecret, reason: cabpiv1.DataSecretInternalErrorReason,
			message: "The data Secret was deleted; rendering it again", requeue: time.Second}
	case f.delivered:
		// Delivered data stays delivered whatever the Cluster does next: the gates below are
		// for data not rendered yet (infrastructureProvisioned turns false around a move).
		return decideDelivered(f, p)
	case f.dataSecret && (!f.dataSecretUnowned || f.ownerProvisioningStarted):
		// The Secret exists but the status does not say so: a crash between the two writes, a
		// status lost in a move, or a cache behind this controller's own status write. Never
		// rendered twice. An ownerless one is taken as it is only once the owner started
		// provisioning, when the machine may have booted from it; before, anyone who may create
		// Secrets here could have planted it: it is rendered over below (docs/adr/044).
		return action{kind: actAdopt}
	case !f.infrastructureProvisioned:
		return action{kind: actWait, reason: cabpiv1.WaitingForClusterInfrastructureReason,
			message: "Waiting for Cluster status.initialization.infrastructureProvisioned to be true"}
	case f.role == ignition.RoleInit:
		return action{kind: actInit, role: ignition.RoleInit}
	case !f.controlPlaneInitialized:
		return action{kind: actWait, reason: cabpiv1.WaitingForControlPlaneInitializedReason, requeue: waitRequeue,
			message: "Waiting for the Cluster's control plane to be initialized (condition ControlPlaneInitialized)"}
	}
	switch verdict, cp := joinSkew(f.role, f.machineVersion, f.controlPlaneVersions); verdict {
	case skewAheadOfControlPlane:
		return action{kind: actWait, reason: cabpiv1.WaitingForControlPlaneVersionReason, requeue: waitRequeue,
			message: fmt.Sprintf("Waiting for the control plane to reach the Machine's Kubernetes minor: the Machine has %s, the control plane %s "+
				"(a worker must not be newer than any control-plane machine, and a control plane upgrades one minor at a time); "+
				"rendered once the control plane is upgraded", f.machineVersion, cp)}
	case skewBehindKubeadm:
		return action{kind: actFail, reason: cabpiv1.KubeadmVersionSkewReason, requeue: renderErrorRetry,
			message: fmt.Sprintf("The Machine's Kubernetes %s is more than one minor behind the control plane's %s: kubeadm joins a node "+
				"only at the control plane's minor or the one before it; give the Machine (its MachineDeployment or MachinePool) a version kubeadm can join", f.machineVersion, cp)}
	}
	return joinAction(f.role)
}

func joinAction(role ignition.Role) action {
	if role == ignition.RoleControlPlaneJoin {
		return action{kind: actControlPlaneJoin, role: role}
	}
	return action{kind: actWorkerJoin, role: ignition.RoleWorkerJoin}
}

// decideDelivered looks after data already delivered: rendered again in place when its inputs
// changed before the owner started provisioning (docs/adr/015), its join token kept usable
// otherwise.
func decideDelivered(f facts, p policy) action {
	notes := deliveredNotes{
		available:    !f.dataSecretAvailableTrue,
		certificates: f.controlPlane,
		forgetToken:  f.tokenID != "" && f.machineJoined,
	}
	var recheck time.Duration
	if f.inputs != nil && f.inputs.unwatched {
		recheck = p.referenceRecheckInterval
	}
	switch in := f.inputs; {
	case f.ownerProvisioningStarted:
		// What changed is compared with the spec last rendered or reported (status.dataSpecHash)
		// less what an in-place update changes: a spec that differs from it only there was
		// applied to the node by the update extension, and is not reported. The digest, not
		// the UpdateInProgress annotation, says so: a reconcile may never see the annotation
		// (Cluster API can add and remove it between two reconciles), and a change made with it
		// stays one after it is gone. Data delivered before digests were recorded takes the
		// current spec's (every change before was rendered or reported: the generation is
		// observed), or reports the change as before.
		notes.noteSpecChange = f.specChangedAfterProvisioning && f.specHash != f.recordedSpecHash
		if notes.noteSpecChange || f.recordedSpecHash == "" {
			notes.recordSpecHash = f.specHash
		}
	case in == nil:
		// Not looked at: around a clusterctl move (the workload cluster, which the join token
		// needs, is not reachable), or the role would change (init data is never turned into a
		// join, nor data of an unknown role).
	case in.notBuilt != nil && f.recordedHash == "":
		// Delivered before digests were recorded, and its inputs do not build now: left alone.
	case in.notBuilt != nil:
		notes.rerenderFailed = in.notBuilt
		recheck = lowestNonZero(recheck, in.notBuilt.requeue)
	case in.input.hash == f.recordedHash:
		notes.available = notes.available || f.dataSecretAvailableReason == cabpiv1.RerenderFailedReason
	case f.recordedHash == "":
		// Recorded, not rendered: data delivered before digests were recorded is taken to be
		// what the current inputs give.
		notes.recordHash = in.input.hash
	case in.input.hash == f.failedHash:
		// Reported when it failed; rendered again once the inputs change.
	default:
		return action{kind: actRerender, role: in.input.Role, rerender: &in.input, requeue: recheck, delivered: notes}
	}

	a := decideToken(f, p)
	a.delivered = notes
	if a.kind == actKeep {
		a.requeue = lowestNonZero(a.requeue, recheck)
	}
	return a
}

// decideToken keeps the join token of delivered data usable: refreshed until a Machine's node
// joined (then left to expire), rotated for MachinePools, which keep creating instances from the
// same data.
func decideToken(f facts, p policy) action {
	keep := action{kind: actKeep, requeue: p.tokenCheckInterval()}
	switch t := f.token; {
	case f.tokenID == "":
		// kubeadm init, or a join with a user-provided discovery: no token of ours to look after.
		return action{kind: actKeep}
	case f.machineJoined:
		return action{kind: actKeep}
	case !f.infrastructureProvisioned:
		// The workload cluster is not reachable through the ClusterCache until it is again
		// (around a clusterctl move): look at the token then, keep the data as delivered.
		return keep
	case t.state == tokenFarFromExpiry, t.state == tokenNotRead:
		return keep
	case t.state == tokenGone && f.machinePool:
		return action{kind: actRotatePoolToken}
	case t.state == tokenGone && !f.ownerProvisioningStarted:
		// Nothing has booted with the data yet: new data with a fresh token, in place.
		return joinAction(f.role)
	case t.state == tokenGone:
		return action{kind: actTokenLost, reason: cabpiv1.JoinTokenLostReason, requeue: p.tokenCheckInterval(),
			message: "The join token " + f.tokenID + " of the bootstrap data was deleted or expired before the node joined, " +
				"and the machine was already provisioned with that data, so it cannot join: delete the Machine so that it is replaced"}
	case f.machinePool && t.expiration.Before(f.now.Add(p.rotateWhenLeft())):
		return action{kind: actRotatePoolToken, currentTokenUsable: t.expiration.After(f.now)}
	case f.machinePool, t.expiration.After(f.now.Add(p.refreshWhenLeft())):
		return keep
	}
	return action{kind: actRefreshToken, token: f.token.secret}
}

// lowestNonZero is the sooner of two requeues, 0 meaning none.
func lowestNonZero(a, b time.Duration) time.Duration {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}
