package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// inputsChange is what reconcileDataInputs found of delivered data's inputs.
type inputsChange struct {
	// rerender is the input the data is to be rendered from again; nil when the data stays.
	rerender *nodeInput
	// recheck is how soon to look at the inputs again though no watch may tell of a change (0:
	// no need): they read a Secret or ConfigMap without the cluster-name label, or cannot be
	// built or rendered yet.
	recheck time.Duration
}

// reconcileDataInputs decides whether delivered data is to be rendered again, in place, because
// its inputs changed before the owner started provisioning (docs/adr/015). The inputs are built
// as for the first render and their digest compared with status.dataInputsHash; only a changed
// digest is rendered again.
//
// Inputs that cannot be built leave the delivered data alone: it still boots, so
// DataSecretAvailable stays True, with reason RerenderFailed and the failure in its message.
func (r *Reconciler) reconcileDataInputs(ctx context.Context, s *scope) (inputsChange, error) {
	config := s.config
	if s.ownerProvisioningStarted() {
		r.noteChangeAfterProvisioning(s)
		return inputsChange{}, nil
	}
	if !s.clusterInfrastructureProvisioned() {
		// Around a clusterctl move: the workload cluster (the join token) is not reachable.
		// The data stays as delivered until it is.
		return inputsChange{}, nil
	}

	role := s.role()
	if delivered := s.dataRole(); delivered != role {
		// The role of delivered data never changes: a control-plane Machine that got kubeadm init
		// may be seen with its Cluster's control plane initialized (by itself) before it is seen
		// provisioned. Init data is never turned into a join, nor data of an unknown role.
		ctrl.LoggerFrom(ctx).V(4).Info("Not rendering the data again: its role would change", "dataRole", delivered, "role", role)
		return inputsChange{}, nil
	}
	restore := keepConditions(config)
	refs := r.resolver(s)
	in, rep, err := r.buildInput(ctx, s, role, lookUpCertificates, refs)
	if rep != nil || err != nil {
		// What buildInput says is about rendering data, and this data is delivered.
		restore()
	}
	if err != nil {
		return inputsChange{}, err
	}
	var change inputsChange
	if refs.unwatched {
		change.recheck = r.ReferenceRecheckInterval
	}
	recorded := config.Status.DataInputsHash
	if rep != nil {
		if recorded == "" {
			ctrl.LoggerFrom(ctx).V(1).Info("Inputs of data delivered before digests were recorded cannot be built; leaving it alone",
				"reason", rep.reason, "message", rep.message)
			return change, nil
		}
		r.reportRerenderFailed(s, rep)
		change.recheck = lowestNonZero(change.recheck, rep.requeue)
		return change, nil
	}

	key := client.ObjectKeyFromObject(config)
	switch {
	case in.hash == recorded:
		if conditions.GetReason(config, cabpiv1.DataSecretAvailableCondition) == cabpiv1.RerenderFailedReason {
			setDataSecretTrue(config) // the inputs are back to what the data was rendered from
		}
		return change, nil
	case recorded == "":
		// Recorded, not rendered: the data was delivered before digests were recorded, and is
		// taken to be what the current inputs give.
		config.Status.DataInputsHash = in.hash
		return change, nil
	case r.memory.failedWas(key, in.hash):
		return change, nil // reported when it failed; rendered again once the inputs change
	}
	// The config read may be older than the status patch that recorded data just rendered
	// again from these inputs: the API server's copy says, so that the same inputs are not
	// rendered a second time (by this manager, or by one started since).
	recordedNow, err := r.inputsRecordedPerAPIServer(ctx, config, in.hash)
	if err != nil {
		return inputsChange{}, err
	}
	if recordedNow {
		return change, nil // nothing to write: the API server has it already
	}
	change.rerender = &in
	return change, nil
}

// lowestNonZero is the sooner of two requeues, 0 meaning none.
func lowestNonZero(a, b time.Duration) time.Duration {
	return util.LowestNonZeroResult(ctrl.Result{RequeueAfter: a}, ctrl.Result{RequeueAfter: b}).RequeueAfter
}

// rerender renders the data again from in and updates the data Secret in place: same name, same
// UID and, for a join, the same join token, so that a machine which took the earlier data
// before its owner reported provisioning still joins. It returns why nothing was stored (a
// report, or an error to retry with backoff); it leaves the conditions to its caller.
func (r *Reconciler) rerender(ctx context.Context, s *scope, in nodeInput) (*report, error) {
	var (
		rep *report
		err error
	)
	if in.Role == ignition.RoleInit {
		// The init lock is this Machine's since its data was first stored; it stays so.
		rep, err = r.renderAndStore(ctx, s, in)
	} else {
		rep, err = r.renderJoin(ctx, s, in, keepToken)
	}
	if rep != nil || err != nil {
		return rep, err
	}
	metrics.Rerender()
	ctrl.LoggerFrom(ctx).Info("Inputs changed before the owner started provisioning; rendered the data again in place",
		"dataInputsHash", in.hash)
	if r.Recorder != nil {
		r.Recorder.Eventf(s.config, nil, corev1.EventTypeNormal, cabpiv1.RerenderedEventReason, "Render",
			"The inputs changed before the %s started provisioning: data Secret %s rendered again in place", s.kind(), dataSecretName(s.config))
	}
	return nil, nil
}

// rerenderFailed records that changed inputs were not rendered: inputs that never render are
// remembered (not rendered again until they change), and the condition and an event say why.
func (r *Reconciler) rerenderFailed(s *scope, in nodeInput, rep *report) {
	if rep.renderError {
		r.memory.failed(client.ObjectKeyFromObject(s.config), in.hash)
	}
	r.reportRerenderFailed(s, rep)
}

// reportRerenderFailed says, on DataSecretAvailable (kept True: the delivered data still boots)
// and in a warning event for what the user must fix, why changed inputs were not rendered.
// The event is emitted when the message changes, not at every reconcile.
func (r *Reconciler) reportRerenderFailed(s *scope, rep *report) {
	msg := bounded(fmt.Sprintf("The inputs changed, but the data cannot be rendered again from them (%s): %s. "+
		"The data Secret keeps the data rendered before", rep.reason, rep.message), maxConditionMessage)
	var before metav1.Condition // a copy: Get points into the conditions Set changes
	if c := conditions.Get(s.config, cabpiv1.DataSecretAvailableCondition); c != nil {
		before = *c
	}
	conditions.Set(s.config, metav1.Condition{
		Type: cabpiv1.DataSecretAvailableCondition, Status: metav1.ConditionTrue,
		Reason: cabpiv1.RerenderFailedReason, Message: msg,
	})
	if rep.warn && (before.Reason != cabpiv1.RerenderFailedReason || before.Message != msg) {
		r.warnFailure(s.config, cabpiv1.RerenderFailedReason, msg)
	}
}

// noteChangeAfterProvisioning says once per spec change, in an event, that a spec changed after
// the owner started provisioning is not rendered: a generation not yet observed
// (status.observedGeneration), and not yet noted by this manager. Changes to referenced objects
// are not noted (their digest is not computed after the line).
func (r *Reconciler) noteChangeAfterProvisioning(s *scope) {
	c := s.config
	if r.Recorder == nil || c.Status.ObservedGeneration == 0 || c.Generation == c.Status.ObservedGeneration ||
		!r.memory.firstNote(client.ObjectKeyFromObject(c), c.Generation) {
		return
	}
	if s.isMachinePool() {
		r.Recorder.Eventf(c, nil, corev1.EventTypeNormal, cabpiv1.NotRerenderedEventReason, "Render",
			"The spec changed after the MachinePool started provisioning: data Secret %s is rendered again from it at the next join-token rotation, for instances created after it",
			dataSecretName(c))
		return
	}
	r.Recorder.Eventf(c, nil, corev1.EventTypeWarning, cabpiv1.NotRerenderedEventReason, "Render",
		"The spec changed after the Machine started provisioning: data Secret %s is not rendered again; change the MachineDeployment's template to roll out new data",
		dataSecretName(c))
}

// keepConditions saves the conditions buildInput may set, and returns what puts them back.
func keepConditions(config *cabpiv1.IgnitionConfig) (restore func()) {
	types := []string{cabpiv1.DataSecretAvailableCondition, cabpiv1.CertificatesAvailableCondition}
	saved := make([]*metav1.Condition, len(types))
	for i, t := range types {
		if c := conditions.Get(config, t); c != nil {
			saved[i] = c.DeepCopy()
		}
	}
	return func() {
		for i, t := range types {
			if saved[i] == nil {
				conditions.Delete(config, t)
			} else {
				conditions.Set(config, *saved[i])
			}
		}
	}
}
