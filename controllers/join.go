package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// reconcileJoin renders a worker or control-plane join.
func (r *Reconciler) reconcileJoin(ctx context.Context, s *scope, role ignition.Role) (ctrl.Result, error) {
	in, needs, o, err := r.nodeInput(ctx, s, role, lookUpCertificates)
	if err != nil {
		return ctrl.Result{}, err
	}
	if o != nil {
		return o.apply(r, s.config), nil
	}
	res, o, err := r.renderJoin(ctx, s, in, needs.JoinToken, newToken)
	if o != nil {
		res = o.apply(r, s.config)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// tokenUse is which join token renderJoin puts into the data, and how a token it makes for it
// is counted (cabpi_join_tokens_total).
type tokenUse int

const (
	// newToken: the config's next token (a first render, or a token lost before provisioning).
	newToken tokenUse = iota
	// rotateToken: a MachinePool's next token, replacing the current one (counted as rotate).
	rotateToken
	// keepToken: the token the current data carries, while it exists (a render again before
	// provisioning); a fresh one when it is gone.
	keepToken
)

// renderJoin renders and stores a join. With ourToken (the input carries placeholderToken), it
// renders once with the placeholder; only data that renders gets a join token, created (or,
// after an interrupted try, reused) in the workload cluster, and put into the rendered config
// in place of the placeholder (ignition.Prepared.WithJoinToken: kubeadm's configuration is
// encoded again, nothing else is rendered twice). Bad input never creates a token (ADR 001).
// MachinePool token rotation and a render again before provisioning (rerender.go) come through
// here too, rewriting the Secret in place, which is why it does not touch the conditions: a
// failure is returned as an outcome (with an error when it is to be retried with backoff), and
// the caller decides what it means for the config's status. use says which token the data
// carries; a token made for stored data is counted here.
func (r *Reconciler) renderJoin(ctx context.Context, s *scope, in ignition.Input, ourToken bool, use tokenUse) (ctrl.Result, *outcome, error) {
	if !ourToken {
		o, err := r.renderAndStore(ctx, s, in)
		return ctrl.Result{}, o, err
	}

	// The render carries the placeholder token, as long as a real one: what it renders, and
	// how large it is, is what the real token gives. Nothing is created for data that cannot be.
	// The render's duration leaves out the token's round trip to the workload cluster.
	start := time.Now()
	prepared, o := renderPrepared(in)
	took := time.Since(start)
	if o != nil {
		return ctrl.Result{}, o, nil
	}
	clusterKey := util.ObjectKey(s.cluster)
	remote, err := r.ClusterCache.GetClient(ctx, clusterKey)
	if err != nil {
		return ctrl.Result{}, &outcome{reason: cabpiv1.BootstrapTokenFailedReason, requeue: waitRequeue,
			message: fmt.Sprintf("Workload cluster not reachable to create the join token: %v", err)}, nil
	}
	now := r.Clock.Now()
	token, expiration, made, err := r.joinTokenFor(ctx, remote, s, use == keepToken, now)
	if err != nil {
		return ctrl.Result{}, &outcome{reason: cabpiv1.BootstrapTokenFailedReason, message: err.Error()}, err
	}
	// Only kubeadm's configuration changes with the token: the rest of the render is reused.
	start = time.Now()
	out, o := withJoinToken(prepared, token.Value)
	took += time.Since(start)
	if o == nil {
		if err = r.storeDataSecret(ctx, s, in.Role, out.Data, token.ID); err != nil {
			o = storeFailed(err)
		}
	}
	if o != nil {
		if made {
			// The token was made for data that was not stored: no machine can have it. Removed,
			// so retries leave no tokens behind. A kept token stays: the stored data carries it.
			if derr := deleteJoinToken(ctx, remote, token.ID); derr != nil {
				ctrl.LoggerFrom(ctx).Error(derr, "Removing a join token for data never stored", "tokenID", token.ID)
			}
			r.memory.forgetToken(client.ObjectKeyFromObject(s.config))
		}
		return ctrl.Result{}, o, err
	}
	r.memory.setToken(client.ObjectKeyFromObject(s.config), token.ID, expiration)
	if made {
		op := metrics.TokenCreate
		if use == rotateToken {
			op = metrics.TokenRotate
		}
		metrics.JoinToken(op)
	}
	r.reportStored(ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("tokenID", token.ID)), s, out, took)
	// Come back to refresh (Machine) or rotate (MachinePool) the token.
	return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil, nil
}

// joinTokenFor returns the join token the new data carries, with its expiration, and whether it
// was made (or, after an interrupted try, reused) for this data, so that it is removed if the
// data is not stored. With keep, that is the token of the current data (the data Secret's
// annotation) while it exists in the workload cluster: data rendered again before provisioning
// keeps its token, so a machine that already took the earlier data still joins. Otherwise, or
// when that token is gone, it is the next token of the config (ensureJoinToken).
func (r *Reconciler) joinTokenFor(ctx context.Context, remote client.Client, s *scope, keep bool, now time.Time) (joinToken, time.Time, bool, error) {
	if current := s.currentTokenID(); keep && current != "" {
		token, expiration, err := currentJoinToken(ctx, remote, s.config, current, now)
		if err == nil {
			return token, expiration, false, nil
		}
		if !errors.Is(err, errTokenGone) {
			return joinToken{}, time.Time{}, false, err
		}
		ctrl.LoggerFrom(ctx).Info("The join token of the data is gone; the data rendered again gets a fresh one", "tokenID", current)
	}
	token, err := ensureJoinToken(ctx, remote, s.config, s.currentTokenID(), r.TokenTTL, now)
	return token, now.UTC().Add(r.TokenTTL), true, err
}

// renderPrepared renders in (carrying the placeholder token) and checks the data fits in a
// Secret; a non-nil outcome says why not. The result takes the real token with withJoinToken.
func renderPrepared(in ignition.Input) (*ignition.Prepared, *outcome) {
	p, err := ignition.Prepare(in)
	if err != nil {
		return nil, renderFailed(err)
	}
	if _, o := storable(p.Output(), nil); o != nil {
		return nil, o
	}
	return p, nil
}

// withJoinToken puts the real join token into a prepared render.
func withJoinToken(p *ignition.Prepared, token string) (ignition.Output, *outcome) {
	return storable(p.WithJoinToken(token))
}

// renderStorable renders in and checks the data fits in a Secret; a non-nil outcome says why not.
func renderStorable(in ignition.Input) (ignition.Output, *outcome) {
	return storable(ignition.Render(in))
}

// storable turns a render's result into an outcome: why it failed, or why its data does not
// fit in a Secret; nil when it can be stored.
func storable(out ignition.Output, err error) (ignition.Output, *outcome) {
	if err != nil {
		return out, renderFailed(err)
	}
	if msg := configinput.DataTooLarge(out.Size.Bytes); msg != "" {
		return out, &outcome{reason: cabpiv1.DataTooLargeReason, message: msg, requeue: renderErrorRetry, warn: true, renderError: true}
	}
	return out, nil
}
