package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// waitRequeue is how soon a config waiting on something not watched is looked at again.
const waitRequeue = 30 * time.Second

// reconcile decides, in contract order, what this config needs now.
func (r *Reconciler) reconcile(ctx context.Context, s *scope) (ctrl.Result, error) {
	config := s.config

	// Delivered data stays delivered whatever the Cluster does next: the gates below are for
	// data not rendered yet (infrastructureProvisioned turns false around a clusterctl move).
	switch {
	case dataDelivered(config):
		if !conditions.IsTrue(config, cabpiv1.DataSecretAvailableCondition) {
			setDataSecretTrue(config)
		} // else kept as is: an OverPlatformLimit warning stays until the data changes
		if s.dataSecret == nil {
			return r.reconcileDataSecretGone(ctx, s)
		}
		return r.reconcileDelivered(ctx, s)

	case s.dataSecret != nil:
		// The Secret exists but the status does not say so. Most often the config came from a
		// cache that has not seen this controller's own status write yet: then the status must
		// not be written again from the stale copy (it would overwrite the condition the render
		// set, e.g. RenderedWithWarnings). Otherwise (a crash between the two writes, a status
		// lost in a move) trust the Secret, never render twice.
		if delivered, err := r.deliveredPerAPIServer(ctx, config); err != nil || delivered {
			return ctrl.Result{}, err
		}
		r.adoptDataSecret(ctx, s)
		return ctrl.Result{}, nil

	case !s.clusterInfrastructureProvisioned():
		setDataSecretFalse(config, cabpiv1.WaitingForClusterInfrastructureReason,
			"Waiting for Cluster status.initialization.infrastructureProvisioned to be true")
		return ctrl.Result{}, nil
	}

	switch role := s.role(); role {
	case ignition.RoleInit:
		return r.reconcileInit(ctx, s)
	default:
		if !s.controlPlaneInitialized() {
			setDataSecretFalse(config, cabpiv1.WaitingForControlPlaneInitializedReason,
				"Waiting for the Cluster's control plane to be initialized (condition ControlPlaneInitialized)")
			return ctrl.Result{RequeueAfter: waitRequeue}, nil
		}
		r.releaseInitLock(ctx, s.cluster)
		return r.reconcileJoin(ctx, s, role, newToken)
	}
}

// report is why a step stored no data, as the config's status says it: DataSecretAvailable's
// reason and message, and how soon the config is looked at again. A step returns a report or an
// error, never both; an error is retried with backoff, and says what the condition says
// meanwhile only when it is a conditionError.
type report struct {
	reason  string
	message string
	requeue time.Duration
	// warn emits a warning event (user-actionable errors), not for plain waiting.
	warn bool
	// renderError: the input does not render (or does not fit a Secret); the same input never
	// will, so it is not rendered again until it changes.
	renderError bool
}

// conditionError is an error, retried with backoff, for which DataSecretAvailable says meanwhile
// why no data was stored (a first render: a render again of delivered data leaves the condition
// as it is). message never carries secret material.
type conditionError struct {
	reason  string
	message string
	err     error
}

func (e *conditionError) Error() string { return e.err.Error() }
func (e *conditionError) Unwrap() error { return e.err }

// storedResult is the result of a reconcile that stored data rendered from in: data carrying a
// join token of ours is looked at again to refresh (Machine) or rotate (MachinePool) the token.
func (r *Reconciler) storedResult(in nodeInput) ctrl.Result {
	if in.joinToken {
		return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}
	}
	return ctrl.Result{}
}

// waitFor reports waiting for something not watched: looked at again after waitRequeue.
func waitFor(reason, message string) *report {
	return &report{reason: reason, message: message, requeue: waitRequeue}
}

// renderErrorRetry: a config that fails to render is looked at again after this long (for
// fixes in referenced Secrets and ConfigMaps the reference watch does not see, those without the
// cluster-name label); a spec change, or a change to a labelled reference, is seen at once.
const renderErrorRetry = 5 * time.Minute

// renderFailed maps a renderer error to the condition reason a user acts on.
func renderFailed(err error) *report {
	reason := cabpiv1.InvalidConfigReason
	if rerr := (*ignition.Error)(nil); errors.As(err, &rerr) {
		switch rerr.Kind {
		case ignition.ErrInvalidContainerLinuxConfig:
			reason = cabpiv1.InvalidContainerLinuxConfigReason
		case ignition.ErrInvalidButane, ignition.ErrVariantMismatch:
			reason = cabpiv1.InvalidButaneReason
			if rerr.Place.Part == ignition.PartContainerLinuxConfig { // a Container Linux Config for fcos
				reason = cabpiv1.InvalidContainerLinuxConfigReason
			}
		case ignition.ErrOwnedPathConflict:
			reason = cabpiv1.OwnedPathConflictReason
		case ignition.ErrUnsupportedKubernetesVersion:
			reason = cabpiv1.UnsupportedKubernetesVersionReason
		case ignition.ErrUnsupportedIgnitionVersion:
			reason = cabpiv1.UnsupportedIgnitionVersionReason
		}
	}
	return &report{reason: reason, message: fmt.Sprintf("Rendering failed: %v", err), requeue: renderErrorRetry, warn: true, renderError: true}
}

// storeFailed: the data Secret could not be written (retried with backoff).
func storeFailed(err error) error {
	return &conditionError{reason: cabpiv1.DataSecretInternalErrorReason, message: err.Error(), err: err}
}

// releaseInitLock drops the Cluster's init lock, if any, once its control plane is up. A lock
// is taken only while the control plane is not initialized, so once it is found gone this
// manager does not look again for that Cluster.
func (r *Reconciler) releaseInitLock(ctx context.Context, cluster *clusterv1.Cluster) {
	if _, done := r.unlocked.Load(cluster.UID); done {
		return
	}
	if r.InitLock.Unlock(ctx, cluster) {
		r.unlocked.Store(cluster.UID, struct{}{})
	}
}

// deliveredPerAPIServer reads the config from the API server, past the cache, and reports
// whether its status already records the data Secret.
func (r *Reconciler) deliveredPerAPIServer(ctx context.Context, config *cabpiv1.IgnitionConfig) (bool, error) {
	fresh, err := r.fromAPIServer(ctx, config)
	if fresh == nil || err != nil {
		return false, err
	}
	return dataDelivered(fresh), nil
}

// inputsRecordedPerAPIServer reads the config from the API server, past the cache, and reports
// whether its status already records hash as the digest of the delivered data's inputs.
func (r *Reconciler) inputsRecordedPerAPIServer(ctx context.Context, config *cabpiv1.IgnitionConfig, hash string) (bool, error) {
	fresh, err := r.fromAPIServer(ctx, config)
	if fresh == nil || err != nil {
		return false, err
	}
	return fresh.Status.DataInputsHash == hash, nil
}

// fromAPIServer reads config from the API server, past the cache; nil without an APIReader.
func (r *Reconciler) fromAPIServer(ctx context.Context, config *cabpiv1.IgnitionConfig) (*cabpiv1.IgnitionConfig, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	fresh := &cabpiv1.IgnitionConfig{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(config), fresh); err != nil {
		return nil, fmt.Errorf("reading IgnitionConfig %s: %w", client.ObjectKeyFromObject(config), err)
	}
	return fresh, nil
}

// dataDelivered is true when the config's status records its data Secret (the contract's
// status.initialization.dataSecretCreated and status.dataSecretName).
func dataDelivered(config *cabpiv1.IgnitionConfig) bool {
	return ptr.Deref(config.Status.Initialization.DataSecretCreated, false) && config.Status.DataSecretName != ""
}
