package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// What a reconcile writes to the config's status and events, from what its steps returned
// (reconcile.go: report, conditionError).

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
