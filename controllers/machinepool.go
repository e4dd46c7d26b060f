package controllers

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// rotatePoolToken gives a MachinePool a fresh join token and rewrites its data Secret in place:
// the pool keeps creating instances from that Secret long after the first nodes joined. The old
// token is left to expire, so instances booting from the previous data still join.
func (r *Reconciler) rotatePoolToken(ctx context.Context, s *scope) (ctrl.Result, error) {
	in, o, err := r.joinInput(ctx, s, ignition.RoleWorkerJoin)
	if err != nil {
		return ctrl.Result{}, err
	}
	if o != nil {
		// Keep the current data (it still works until its token expires) and say why rotation waits.
		ctrl.LoggerFrom(ctx).Info("Cannot rotate the MachinePool's join token yet", "reason", o.reason, "message", o.message)
		return ctrl.Result{RequeueAfter: o.requeue}, nil
	}
	return r.renderJoin(ctx, s, in)
}
