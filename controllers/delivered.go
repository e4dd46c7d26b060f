package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// reconcileDelivered looks after data already delivered: rendered again in place when its inputs
// changed before the owner started provisioning (rerender.go), its join token kept usable
// otherwise.
func (r *Reconciler) reconcileDelivered(ctx context.Context, s *scope) (ctrl.Result, error) {
	change, err := r.reconcileDataInputs(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if in := change.rerender; in != nil {
		rep, err := r.rerender(ctx, s, *in)
		switch {
		case err != nil:
			return ctrl.Result{}, err // retried with backoff; the conditions say what they said
		case rep == nil:
			return r.storedResult(*in), nil
		}
		// The delivered data stays, and with it its token's upkeep.
		r.rerenderFailed(s, *in, rep)
		change.recheck = rep.requeue
	}
	res, err := r.reconcileJoinToken(ctx, s)
	return util.LowestNonZeroResult(res, ctrl.Result{RequeueAfter: change.recheck}), err
}

// reconcileDataSecretGone handles delivered data whose Secret is gone (deleted by hand).
func (r *Reconciler) reconcileDataSecretGone(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.machineJoined() {
		// The node booted from that data long ago and needs it no more: nothing to render again
		// (its role may have changed since, e.g. from kubeadm init to join).
		ctrl.LoggerFrom(ctx).V(1).Info("Data Secret deleted after the node joined; not rendering it again")
		return ctrl.Result{}, nil
	}
	// Before the node joined the infrastructure may still need it: let the next reconcile render
	// again.
	s.config.Status.Initialization.DataSecretCreated = nil
	s.config.Status.DataSecretName = ""
	setDataSecretFalse(s.config, cabpiv1.DataSecretInternalErrorReason, "The data Secret was deleted; rendering it again")
	// The status change comes back as an event; the delay only bounds the wait if it does not.
	return ctrl.Result{RequeueAfter: time.Second}, nil
}

// Timing follows CABPK: look every TTL/3, so a token gets at least two chances to be extended
// before it expires, and extend once less than 5/6 of the TTL is left.
func (r *Reconciler) tokenCheckInterval() time.Duration { return r.TokenTTL / 3 }
func (r *Reconciler) refreshWhenLeft() time.Duration    { return r.TokenTTL * 5 / 6 }

// reconcileJoinToken keeps the join token of the delivered data usable: refreshed until a
// Machine's node joined (then left to expire), rotated for MachinePools, which keep creating
// instances from the same data (machinepool.go).
func (r *Reconciler) reconcileJoinToken(ctx context.Context, s *scope) (ctrl.Result, error) {
	if s.isControlPlane() {
		setCertificatesAvailable(s.config)
	}
	tokenID := s.currentTokenID()
	if tokenID == "" {
		// kubeadm init, or a join with a user-provided discovery: no token of ours to look after.
		return ctrl.Result{}, nil
	}
	configKey := client.ObjectKeyFromObject(s.config)
	if s.machineJoined() {
		r.memory.forgetToken(configKey) // left to expire: nothing to look after
		return ctrl.Result{}, nil
	}
	if !s.clusterInfrastructureProvisioned() {
		// The workload cluster is not reachable through the ClusterCache until it is again
		// (around a clusterctl move): look at the token then, keep the data as delivered.
		return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
	}
	now := r.Clock.Now().UTC()
	if r.tokenNeedsNothingYet(s, tokenID, now) {
		return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
	}

	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting workload cluster client to refresh token %s: %w", tokenID, err)
	}
	tokenSecret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(tokenID)}
	if err := remote.Get(ctx, key, tokenSecret); err != nil {
		if apierrors.IsNotFound(err) {
			r.memory.forgetToken(configKey)
			return r.reconcileJoinTokenGone(ctx, s, tokenID)
		}
		return ctrl.Result{}, fmt.Errorf("getting join token %s: %w", tokenID, err)
	}

	expiration := tokenExpiration(tokenSecret)
	r.memory.setToken(configKey, tokenID, expiration)
	if s.isMachinePool() {
		return r.reconcilePoolToken(ctx, s, expiration, now)
	}
	if expiration.After(now.Add(r.refreshWhenLeft())) {
		return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
	}
	newExpiration := now.Add(r.TokenTTL).Format(time.RFC3339)
	tokenSecret.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(newExpiration)
	if err := remote.Update(ctx, tokenSecret); err != nil {
		return ctrl.Result{}, fmt.Errorf("refreshing join token %s: %w", tokenID, err)
	}
	r.memory.setToken(configKey, tokenID, now.Add(r.TokenTTL))
	metrics.JoinToken(metrics.TokenRefresh)
	ctrl.LoggerFrom(ctx).V(2).Info("Refreshed join token until the node joins", "tokenID", tokenID, "expiration", newExpiration)
	return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
}

// tokenNeedsNothingYet is true when the token is known to be far from expiring, without asking
// the workload cluster (its client is rate limited, --clustercache-client-qps). A token this
// manager created or refreshed less than a sixth of its TTL ago needs nothing yet, and would not
// be refreshed; a token lost meanwhile is found by the periodic check (every TTL/3), as it would
// be without this.
func (r *Reconciler) tokenNeedsNothingYet(s *scope, tokenID string, now time.Time) bool {
	known := r.memory.tokenExpiration(client.ObjectKeyFromObject(s.config), tokenID)
	if known.IsZero() && !s.isMachinePool() {
		// Not seen by this manager (it restarted): the token was created, with this TTL, just
		// before the data Secret that names it. A manager restarted during a scale-up then does
		// not ask the workload cluster about every config it just delivered. Only the first
		// sixth of the TTL is skipped, as for tokens this manager made; a TTL raised across the
		// restart could delay the first check of such a token by that much.
		known = s.dataSecret.CreationTimestamp.Add(r.TokenTTL)
	}
	return known.After(now.Add(r.refreshWhenLeft()))
}

// reconcileJoinTokenGone handles a join token of delivered data that is gone from the workload
// cluster (deleted, or removed by the token cleaner once expired).
func (r *Reconciler) reconcileJoinTokenGone(ctx context.Context, s *scope, tokenID string) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx).WithValues("tokenID", tokenID)
	switch {
	case s.isMachinePool():
		log.Info("Join token of the MachinePool is gone, rotating it")
		return r.rotatePoolToken(ctx, s, false)
	case !s.machineProvisioned():
		// Nothing has booted with the data yet: new data with a fresh token, in place.
		log.Info("Join token is gone before the Machine was provisioned; rendering its data again with a fresh token")
		return r.reconcileJoin(ctx, s, s.role(), newToken)
	}
	// The machine was handed the data with this token; a new token would not reach it.
	msg := fmt.Sprintf("The join token %s of the bootstrap data was deleted or expired before the node joined, "+
		"and the machine was already provisioned with that data, so it cannot join: delete the Machine so that it is replaced", tokenID)
	r.fail(s.config, cabpiv1.JoinTokenLostReason, msg)
	// Its node may still show up (it joined just before the token went): look again.
	return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
}
