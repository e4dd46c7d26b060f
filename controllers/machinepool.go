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
// A rotation that cannot happen keeps the current data, which works until its token expires, and
// leaves DataSecretAvailable as it is: the data Secret is still there and usable. It is logged (and
// a render failure is an event) and retried.
func (r *Reconciler) rotatePoolToken(ctx context.Context, s *scope) (ctrl.Result, error) {
	in, o, err := r.joinInput(ctx, s, ignition.RoleWorkerJoin)
	if o == nil && err == nil {
		var res ctrl.Result
		res, o, err = r.renderJoin(ctx, s, in)
		if o == nil && err == nil {
			return res, nil
		}
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("rotating the MachinePool's join token: %w", err)
	}
	ctrl.LoggerFrom(ctx).Info("Cannot rotate the MachinePool's join token yet; keeping the current data",
		"reason", o.reason, "message", o.message)
	if o.warn {
		r.warn(s.config, o.reason, "MachinePool join token not rotated: "+o.message)
	}
	return ctrl.Result{RequeueAfter: o.requeue}, nil
}
