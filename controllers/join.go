package controllers

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/util"

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// reconcileJoin renders a worker or control-plane join.
func (r *Reconciler) reconcileJoin(ctx context.Context, s *scope, role ignition.Role) (ctrl.Result, error) {
	in, needs, o, err := r.nodeInput(ctx, s, role)
	if err != nil {
		return ctrl.Result{}, err
	}
	if o != nil {
		return o.apply(r, s.config), nil
	}
	res, o, err := r.renderJoin(ctx, s, in, needs.JoinToken)
	if o != nil {
		res = o.apply(r, s.config)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// renderJoin renders and stores a join. With ourToken (the input carries placeholderToken), it
// dry-renders first, then creates the real token, renders with it and stores.
// MachinePool token rotation comes through here too, rewriting the Secret in place, which is why
// it does not touch the conditions: a failure is returned as an outcome (with an error when it is
// to be retried with backoff), and the caller decides what it means for the config's status.
func (r *Reconciler) renderJoin(ctx context.Context, s *scope, in ignition.Input, ourToken bool) (ctrl.Result, *outcome, error) {
	join := in.JoinConfiguration
	if !ourToken {
		out, err := ignition.Render(in)
		if err != nil {
			return ctrl.Result{}, renderFailed(err), nil
		}
		if err := r.storeDataSecret(ctx, s, out.Data, ""); err != nil {
			return ctrl.Result{}, storeFailed(err), err
		}
		return ctrl.Result{}, nil, nil
	}

	if _, err := ignition.Render(in); err != nil {
		return ctrl.Result{}, renderFailed(err), nil
	}

	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return ctrl.Result{}, &outcome{reason: bootstrapv1.BootstrapTokenFailedReason, requeue: waitRequeue,
			message: fmt.Sprintf("Workload cluster not reachable to create the join token: %v", err)}, nil
	}
	token, err := createJoinToken(ctx, remote, util.ObjectKey(s.config), r.TokenTTL, nowFunc())
	if err != nil {
		return ctrl.Result{}, &outcome{reason: bootstrapv1.BootstrapTokenFailedReason, message: err.Error()}, err
	}
	join.Discovery.BootstrapToken.Token = token.Value
	out, err := ignition.Render(in)
	if err != nil {
		// Cannot happen after a successful dry render (the renderer is pure); reported all the same.
		return ctrl.Result{}, renderFailed(err), nil
	}
	if err := r.storeDataSecret(ctx, s, out.Data, token.ID); err != nil {
		return ctrl.Result{}, storeFailed(err), err
	}
	ctrl.LoggerFrom(ctx).Info("Rendered bootstrap data", "role", in.Role, "tokenID", token.ID,
		"ignitionVersion", out.SpecVersion, "bytes", out.Size.Bytes, "gzipBytes", out.Size.GzipBytes)
	// Come back to refresh (Machine) or rotate (MachinePool) the token.
	return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil, nil
}
