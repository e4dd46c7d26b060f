package controllers

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// rotatePoolToken gives a MachinePool a fresh join token and rewrites its data Secret in place:
// the pool keeps creating instances from that Secret long after the first nodes joined. The old
// token is left to expire, so instances booting from the previous data still join.
//
// A rotation that cannot happen keeps the current data. While its token is still valid
// (currentUsable) DataSecretAvailable stays as it is: the Secret is there and new instances still
// join with it; the failure is logged (a render failure is also an event) and retried. Once the
// token is expired or gone, the data no longer joins anything and the condition says why.
func (r *Reconciler) rotatePoolToken(ctx context.Context, s *scope, currentUsable bool) (ctrl.Result, error) {
	in, needs, o, err := r.nodeInput(ctx, s, ignition.RoleWorkerJoin, lookUpCertificates)
	if o == nil && err == nil {
		var res ctrl.Result
		res, o, err = r.renderJoin(ctx, s, in, needs.JoinToken, rotateToken)
		if o == nil && err == nil {
			return res, nil
		}
	}
	if !currentUsable {
		res := ctrl.Result{}
		if o != nil {
			o.message = "The MachinePool's join token expired and cannot be replaced: " + o.message
			res = o.apply(r, s.config)
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("replacing the MachinePool's expired join token: %w", err)
		}
		return res, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("rotating the MachinePool's join token: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Cannot rotate the MachinePool's join token yet; keeping the current data",
		"reason", o.reason, "message", o.message)
	if o.warn {
		// A failure the user can fix, though the condition keeps saying the data is available.
		r.warnFailure(s.config, o.reason, "MachinePool join token not rotated: "+o.message)
	}
	// Look again no later than the next token check, so an expiry is reported when it happens.
	return ctrl.Result{RequeueAfter: min(o.requeue, r.tokenCheckInterval())}, nil
}
