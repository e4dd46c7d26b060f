package controllers

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/util"

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
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
	if !ourToken {
		out, o := renderStorable(in)
		if o != nil {
			return ctrl.Result{}, o, nil
		}
		if err := r.storeDataSecret(ctx, s, out.Data, ""); err != nil {
			return ctrl.Result{}, storeFailed(err), err
		}
		return ctrl.Result{}, nil, nil
	}

	// The dry render carries the placeholder token, as long as a real one: what it renders, and
	// how large it is, is what the real render gives. Nothing is created for data that cannot be.
	if _, o := renderStorable(in); o != nil {
		return ctrl.Result{}, o, nil
	}
	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return ctrl.Result{}, &outcome{reason: bootstrapv1.BootstrapTokenFailedReason, requeue: waitRequeue,
			message: fmt.Sprintf("Workload cluster not reachable to create the join token: %v", err)}, nil
	}
	token, err := ensureJoinToken(ctx, remote, s.config, s.currentTokenID(), r.TokenTTL, nowFunc())
	if err != nil {
		return ctrl.Result{}, &outcome{reason: bootstrapv1.BootstrapTokenFailedReason, message: err.Error()}, err
	}
	in.JoinConfiguration.Discovery.BootstrapToken.Token = token.Value
	out, o := renderStorable(in)
	if o == nil {
		if err = r.storeDataSecret(ctx, s, out.Data, token.ID); err != nil {
			o = storeFailed(err)
		}
	}
	if o != nil {
		// The token was made for data that was not stored: no machine can have it. Removed, so
		// retries leave no tokens behind.
		if derr := deleteJoinToken(ctx, remote, token.ID); derr != nil {
			ctrl.LoggerFrom(ctx).Error(derr, "Removing a join token for data never stored", "tokenID", token.ID)
		}
		return ctrl.Result{}, o, err
	}
	ctrl.LoggerFrom(ctx).Info("Rendered bootstrap data", "role", in.Role, "tokenID", token.ID,
		"ignitionVersion", out.SpecVersion, "bytes", out.Size.Bytes, "gzipBytes", out.Size.GzipBytes)
	// Come back to refresh (Machine) or rotate (MachinePool) the token.
	return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil, nil
}

// renderStorable renders in and checks the data fits in a Secret; a non-nil outcome says why not.
func renderStorable(in ignition.Input) (ignition.Output, *outcome) {
	out, err := ignition.Render(in)
	if err != nil {
		return out, renderFailed(err)
	}
	if msg := configinput.DataTooLarge(out.Size.Bytes); msg != "" {
		return out, &outcome{reason: bootstrapv1.DataTooLargeReason, message: msg, requeue: renderErrorRetry, warn: true}
	}
	return out, nil
}
