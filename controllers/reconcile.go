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
	"sigs.k8s.io/cluster-api/util"
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

	// A data Secret restored without owner (backup, move) is adopted before anything else.
	existing, err := r.getDataSecret(ctx, config, s.cluster.Name)
	s.dataSecret = existing
	if errors.Is(err, errDataSecretConflict) {
		r.fail(config, cabpiv1.DataSecretConflictReason, err.Error())
		return ctrl.Result{RequeueAfter: waitRequeue}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}

	// Delivered data stays delivered whatever the Cluster does next: the gates below are for
	// data not rendered yet (infrastructureProvisioned turns false around a clusterctl move).
	switch {
	case dataDelivered(config):
		if !conditions.IsTrue(config, cabpiv1.DataSecretAvailableCondition) {
			setDataSecretTrue(config)
		} // else kept as is: an OverPlatformLimit warning stays until the data changes

		if existing == nil {
			return r.reconcileJoinToken(ctx, s, existing)
		}
		// Inputs changed before the owner started provisioning: the data is rendered again.
		inputs, rendered, err := r.reconcileDataInputs(ctx, s)
		if err != nil || rendered {
			return inputs, err
		}
		res, err := r.reconcileJoinToken(ctx, s, existing)
		return util.LowestNonZeroResult(res, inputs), err

	case existing != nil:
		// The Secret exists but the status does not say so. Most often the config came from a
		// cache that has not seen this controller's own status write yet: then the status must
		// not be written again from the stale copy (it would overwrite the condition the render
		// set, e.g. RenderedWithWarnings). Otherwise (a crash between the two writes, a status
		// lost in a move) trust the Secret, never render twice.
		if delivered, err := r.deliveredPerAPIServer(ctx, config); err != nil || delivered {
			return ctrl.Result{}, err
		}
		if err := r.adoptDataSecret(ctx, s, existing); err != nil {
			return ctrl.Result{}, err
		}
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
		return r.reconcileJoin(ctx, s, role)
	}
}

// outcome is what a render step wants reported: nil means the data Secret was written.
type outcome struct {
	reason  string
	message string
	requeue time.Duration
	// warn emits a warning event (user-actionable errors), not for plain waiting.
	warn bool
	// renderError: the input does not render (or does not fit a Secret); the same input never
	// will, so it is not rendered again until it changes.
	renderError bool
}

func (o *outcome) apply(r *Reconciler, config *cabpiv1.IgnitionConfig) ctrl.Result {
	if o.warn {
		r.fail(config, o.reason, o.message)
	} else {
		setDataSecretFalse(config, o.reason, o.message)
	}
	return ctrl.Result{RequeueAfter: o.requeue}
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

func waitFor(reason, message string) *outcome {
	return &outcome{reason: reason, message: message, requeue: waitRequeue}
}

// renderErrorRetry: a config that fails to render is looked at again after this long (for
// fixes in referenced Secrets and ConfigMaps the reference watch does not see, those without the
// cluster-name label); a spec change, or a change to a labelled reference, is seen at once.
const renderErrorRetry = 5 * time.Minute

// renderFailed maps a renderer error to the condition reason a user acts on.
func renderFailed(err error) *outcome {
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
	return &outcome{reason: reason, message: fmt.Sprintf("Rendering failed: %v", err), requeue: renderErrorRetry, warn: true, renderError: true}
}

// storeFailed: the data Secret could not be written (retried with backoff).
func storeFailed(err error) *outcome {
	return &outcome{reason: cabpiv1.DataSecretInternalErrorReason, message: err.Error()}
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

// reportStored records data just stored, rendered in took: DataSecretAvailable True, with
// OverPlatformLimit and a warning event when the data is larger than the platform takes even
// compressed, and the render's duration and size in the metrics.
func (r *Reconciler) reportStored(ctx context.Context, s *scope, out ignition.Output, took time.Duration) {
	metrics.ObserveRender(s.roleLabel(s.role()), string(configinput.Variant(&s.config.Spec)), took, out.Size.Bytes)
	platform := s.platform()
	ctrl.LoggerFrom(ctx).Info("Rendered bootstrap data", "role", s.role(), "platform", platform,
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
	if r.APIReader == nil {
		return false, nil
	}
	fresh := &cabpiv1.IgnitionConfig{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(config), fresh); err != nil {
		return false, fmt.Errorf("reading IgnitionConfig %s: %w", client.ObjectKeyFromObject(config), err)
	}
	return dataDelivered(fresh), nil
}

// dataDelivered is true when the config's status records its data Secret (the contract's
// status.initialization.dataSecretCreated and status.dataSecretName).
func dataDelivered(config *cabpiv1.IgnitionConfig) bool {
	return ptr.Deref(config.Status.Initialization.DataSecretCreated, false) && config.Status.DataSecretName != ""
}
