package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
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

// report records rep on the config: DataSecretAvailable False with its reason (and, for a
// failure the user can fix, a warning event), and the result that looks at the config again.
func (r *Reconciler) report(config *cabpiv1.IgnitionConfig, rep *report) ctrl.Result {
	if rep.warn {
		r.fail(config, rep.reason, rep.message)
	} else {
		setDataSecretFalse(config, rep.reason, rep.message)
	}
	return ctrl.Result{RequeueAfter: rep.requeue}
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

// reportError records err on the config when it is a conditionError, and returns it for a
// retry with backoff.
func (r *Reconciler) reportError(config *cabpiv1.IgnitionConfig, err error) (ctrl.Result, error) {
	var ce *conditionError
	if errors.As(err, &ce) {
		setDataSecretFalse(config, ce.reason, ce.message)
	}
	return ctrl.Result{}, err
}

// notStored ends a reconcile whose step stored no data: with its error, or its report.
func (r *Reconciler) notStored(config *cabpiv1.IgnitionConfig, rep *report, err error) (ctrl.Result, error) {
	if err != nil {
		return r.reportError(config, err)
	}
	return r.report(config, rep), nil
}

// storedResult is the result of a reconcile that stored data rendered from in: data carrying a
// join token of ours is looked at again to refresh (Machine) or rotate (MachinePool) the token.
func (r *Reconciler) storedResult(in nodeInput) ctrl.Result {
	if in.joinToken {
		return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}
	}
	return ctrl.Result{}
}

// fail reports a failure the user can fix: DataSecretAvailable False with reason, a warning
// event, and the failure counted (cabpi_failures_total) by reason.
func (r *Reconciler) fail(config *cabpiv1.IgnitionConfig, reason, message string) {
	setDataSecretFalse(config, reason, message)
	r.warnFailure(config, reason, message)
}

// warnFailure is a failure the user can fix whose condition the caller sets (or keeps): a
// warning event, and the failure counted by reason.
func (r *Reconciler) warnFailure(config *cabpiv1.IgnitionConfig, reason, message string) {
	r.warn(config, reason, message)
	metrics.Failure(reason)
}

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
	if rerr, ok := err.(*ignition.Error); ok {
		switch rerr.Kind {
		case ignition.ErrInvalidContainerLinuxConfig:
			reason = cabpiv1.InvalidContainerLinuxConfigReason
		case ignition.ErrInvalidButane, ignition.ErrVariantMismatch:
			reason = cabpiv1.InvalidButaneReason
			if rerr.Field == "containerLinuxConfig" { // a Container Linux Config for fcos
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

func setDataSecretFalse(config *cabpiv1.IgnitionConfig, reason, message string) {
	conditions.Set(config, metav1.Condition{
		Type: cabpiv1.DataSecretAvailableCondition, Status: metav1.ConditionFalse, Reason: reason,
		Message: bounded(message, maxConditionMessage),
	})
}

func setDataSecretTrue(config *cabpiv1.IgnitionConfig) {
	conditions.Set(config, metav1.Condition{
		Type: cabpiv1.DataSecretAvailableCondition, Status: metav1.ConditionTrue, Reason: cabpiv1.DataSecretAvailableReason,
	})
}

func builderPredicates(p predicate.Predicate) builder.Predicates { return builder.WithPredicates(p) }

// reportStored records data rendered from in and just stored, rendered in took:
// DataSecretAvailable True, with OverPlatformLimit and a warning event when the data is larger
// than the platform takes even compressed, and the render's duration and size in the metrics.
func (r *Reconciler) reportStored(ctx context.Context, s *scope, in nodeInput, out ignition.Output, took time.Duration) {
	metrics.ObserveRender(s.roleLabel(in.Role), string(configinput.Variant(&s.config.Spec)), took, out.Size.Bytes)
	platform := s.platform()
	ctrl.LoggerFrom(ctx).Info("Rendered bootstrap data", "role", in.Role, "platform", platform,
		"ignitionVersion", out.SpecVersion, "bytes", out.Size.Bytes, "gzipBytes", out.Size.GzipBytes,
		"compressed", out.Size.Compressed, "wrapped", out.Size.Wrapped)
	overLimit := configinput.OverPlatformLimit(out, platform)
	warnings := warningsMessage(out.Warnings)
	reason := cabpiv1.DataSecretAvailableReason
	switch {
	case overLimit != "":
		reason = cabpiv1.OverPlatformLimitReason
	case warnings != "":
		reason = cabpiv1.RenderedWithWarningsReason
	}
	if reason == cabpiv1.DataSecretAvailableReason {
		setDataSecretTrue(s.config)
		return
	}
	msg := strings.TrimSpace(overLimit + "\n" + warnings)
	conditions.Set(s.config, metav1.Condition{
		Type: cabpiv1.DataSecretAvailableCondition, Status: metav1.ConditionTrue,
		Reason: reason, Message: bounded(msg, maxConditionMessage),
	})
	if overLimit != "" {
		r.warn(s.config, cabpiv1.OverPlatformLimitReason, overLimit)
	}
	if warnings != "" {
		r.warn(s.config, cabpiv1.RenderedWithWarningsReason, warnings)
	}
}

// warningsMessage lists a render's warnings for a condition message and an event, one per
// line; "" for none. Warnings name keys and places in the user's documents, never values.
func warningsMessage(warnings []ignition.Warning) string {
	if len(warnings) == 0 {
		return ""
	}
	lines := make([]string, 0, len(warnings)+1)
	lines = append(lines, fmt.Sprintf("Rendered with %d warning(s) (strict makes them errors):", len(warnings)))
	for _, w := range warnings {
		lines = append(lines, "spec."+w.String())
	}
	return strings.Join(lines, "\n")
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
