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

// reconcileJoin renders a worker or control-plane join and stores it, with the join token use
// says: a first render's, or a Machine's data rendered again after its token was lost.
func (r *Reconciler) reconcileJoin(ctx context.Context, s *scope, role ignition.Role, use tokenUse) (ctrl.Result, error) {
	in, rep, err := r.buildInput(ctx, s, role, lookUpCertificates, r.resolver(s))
	if rep != nil || err != nil {
		return r.notStored(s.config, rep, err)
	}
	if rep, err := r.renderJoin(ctx, s, in, use); rep != nil || err != nil {
		return r.notStored(s.config, rep, err)
	}
	return r.storedResult(in), nil
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

// renderJoin renders and stores a join. When the data gets a join token of ours (in.joinToken:
// the input carries placeholderToken), it renders once with the placeholder; only data that
// renders gets a join token, created (or, after an interrupted try, reused) in the workload
// cluster, and put into the rendered config in place of the placeholder
// (ignition.Prepared.WithJoinToken: kubeadm's configuration is encoded again, nothing else is
// rendered twice). Bad input never creates a token (ADR 001). use says which token the data
// carries; a token made for stored data is counted here.
//
// MachinePool token rotation and a render again before provisioning (rerender.go) come through
// here too, rewriting the Secret in place, which is why it does not touch the conditions when
// it stores nothing: it returns why (a report, or an error to retry with backoff), and the caller
// decides what that means for the config's status.
func (r *Reconciler) renderJoin(ctx context.Context, s *scope, in nodeInput, use tokenUse) (*report, error) {
	if !in.joinToken {
		return r.renderAndStore(ctx, s, in)
	}

	// The render carries the placeholder token, as long as a real one: what it renders, and
	// how large it is, is what the real token gives. Nothing is created for data that cannot be.
	// The render's duration leaves out the token's round trip to the workload cluster.
	start := time.Now()
	prepared, rep := renderPrepared(in.Input)
	took := time.Since(start)
	if rep != nil {
		return rep, nil
	}
	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return &report{reason: cabpiv1.BootstrapTokenFailedReason, requeue: waitRequeue,
			message: fmt.Sprintf("Workload cluster not reachable to create the join token: %v", err)}, nil
	}
	now := r.Clock.Now()
	token, expiration, made, err := r.joinTokenFor(ctx, remote, s, use == keepToken, now)
	if err != nil {
		return nil, &conditionError{reason: cabpiv1.BootstrapTokenFailedReason, message: err.Error(), err: err}
	}
	// Only kubeadm's configuration changes with the token: the rest of the render is reused.
	start = time.Now()
	out, rep := withJoinToken(prepared, token.Value)
	took += time.Since(start)
	if rep == nil {
		if err = r.storeDataSecret(ctx, s, in, out.Data, token.ID); err != nil {
			err = storeFailed(err)
		}
	}
	if rep != nil || err != nil {
		if made {
			// The token was made for data that was not stored: no machine can have it. Removed,
			// so retries leave no tokens behind. A kept token stays: the stored data carries it.
			if derr := deleteJoinToken(ctx, remote, token.ID); derr != nil {
				ctrl.LoggerFrom(ctx).Error(derr, "Removing a join token for data never stored", "tokenID", token.ID)
			}
			r.memory.forgetToken(client.ObjectKeyFromObject(s.config))
		}
		return rep, err
	}
	r.memory.setToken(client.ObjectKeyFromObject(s.config), token.ID, expiration)
	if made {
		op := metrics.TokenCreate
		if use == rotateToken {
			op = metrics.TokenRotate
		}
		metrics.JoinToken(op)
	}
	r.reportStored(ctrl.LoggerInto(ctx, ctrl.LoggerFrom(ctx).WithValues("tokenID", token.ID)), s, in, out, took)
	return nil, nil
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
// Secret; a report says why not. The result takes the real token with withJoinToken.
func renderPrepared(in ignition.Input) (*ignition.Prepared, *report) {
	p, err := ignition.Prepare(in)
	if err != nil {
		return nil, renderFailed(err)
	}
	if _, rep := storable(p.Output(), nil); rep != nil {
		return nil, rep
	}
	return p, nil
}

// withJoinToken puts the real join token into a prepared render.
func withJoinToken(p *ignition.Prepared, token string) (ignition.Output, *report) {
	return storable(p.WithJoinToken(token))
}

// renderStorable renders in and checks the data fits in a Secret; a report says why not.
func renderStorable(in ignition.Input) (ignition.Output, *report) {
	return storable(ignition.Render(in))
}

// storable turns a render's result into a report: why it failed, or why its data does not fit
// in a Secret; nil when it can be stored.
func storable(out ignition.Output, err error) (ignition.Output, *report) {
	if err != nil {
		return out, renderFailed(err)
	}
	if msg := configinput.DataTooLarge(out.Size.Bytes); msg != "" {
		return out, &report{reason: cabpiv1.DataTooLargeReason, message: msg, requeue: renderErrorRetry, warn: true, renderError: true}
	}
	return out, nil
}
