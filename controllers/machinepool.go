package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// reconcilePoolToken rotates the join token of a MachinePool's delivered data once it expires
// within half its TTL: the pool's data must stay usable for the instances it creates next.
func (r *Reconciler) reconcilePoolToken(ctx context.Context, s *scope, expiration, now time.Time) (ctrl.Result, error) {
	if expiration.Before(now.Add(r.TokenTTL / 2)) {
		ctrl.LoggerFrom(ctx).Info("Rotating the MachinePool's join token", "tokenID", s.currentTokenID())
		return r.rotatePoolToken(ctx, s, expiration.After(now))
	}
	return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
}

// rotatePoolToken gives a MachinePool a fresh join token and rewrites its data Secret in place:
// the pool keeps creating instances from that Secret long after the first nodes joined. The old
// token is left to expire, so instances booting from the previous data still join.
//
// A rotation that cannot happen keeps the current data. While its token is still valid
// (currentUsable) DataSecretAvailable stays as it is: the Secret is there and new instances still
// join with it; the failure is logged (a render failure is also an event) and retried. Once the
// token is expired or gone, the data no longer joins anything and the condition says why.
func (r *Reconciler) rotatePoolToken(ctx context.Context, s *scope, currentUsable bool) (ctrl.Result, error) {
	in, rep, err := r.renderRotated(ctx, s)
	switch {
	case rep == nil && err == nil:
		return r.storedResult(in), nil
	case !currentUsable:
		return r.reportTokenNotReplaced(s.config, rep, err)
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("rotating the MachinePool's join token: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Cannot rotate the MachinePool's join token yet; keeping the current data",
		"reason", rep.reason, "message", rep.message)
	if rep.warn {
		// A failure the user can fix, though the condition keeps saying the data is available.
		r.warnFailure(s.config, rep.reason, "MachinePool join token not rotated: "+rep.message)
	}
	// Look again no later than the next token check, so an expiry is reported when it happens.
	return ctrl.Result{RequeueAfter: min(rep.requeue, r.tokenCheckInterval())}, nil
}

// renderRotated renders the pool's data again with its next join token and stores it in place;
// it returns the input, or why nothing was stored (a report, or an error).
func (r *Reconciler) renderRotated(ctx context.Context, s *scope) (nodeInput, *report, error) {
	in, rep, err := r.buildInput(ctx, s, ignition.RoleWorkerJoin, lookUpCertificates, r.resolver(s))
	if rep != nil || err != nil {
		return in, rep, err
	}
	rep, err = r.renderJoin(ctx, s, in, rotateToken)
	return in, rep, err
}

// reportTokenNotReplaced says why the pool's expired (or gone) token was not replaced: the data
// in the Secret joins nothing any more, so DataSecretAvailable turns False with the report's
// reason or the error's, if it has one (conditionError).
func (r *Reconciler) reportTokenNotReplaced(config *cabpiv1.IgnitionConfig, rep *report, err error) (ctrl.Result, error) {
	const expired = "The MachinePool's join token expired and cannot be replaced: "
	if err == nil {
		rep.message = expired + rep.message
		return r.report(config, rep), nil
	}
	var ce *conditionError
	if errors.As(err, &ce) {
		setDataSecretFalse(config, ce.reason, expired+ce.message)
	}
	return ctrl.Result{}, fmt.Errorf("replacing the MachinePool's expired join token: %w", err)
}
