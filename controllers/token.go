package controllers

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// joinToken is a kubeadm bootstrap token ("<id>.<secret>"). Only ID may be logged or stored
// outside the data Secret and the workload cluster.
type joinToken struct {
	ID    string
	Value string
}

// tokenDescription marks the tokens cabpi creates in workload clusters with the config they were
// made for, so `kubeadm token list` in the workload cluster tells an operator whose token it is.
func tokenDescription(config client.ObjectKey) string {
	return TokenDescriptionPrefix + config.String()
}

// TokenDescriptionPrefix starts the description of every join token cabpi creates; the
// namespace/name of its IgnitionConfig follows.
const TokenDescriptionPrefix = "join token created by cabpi for IgnitionConfig "

// tokenIDAlphabet is what a bootstrap token ID is made of ([a-z0-9]{6}).
const tokenIDAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// tokenIDFor derives the ID (the public half) of the join token the config's next data carries,
// from the config's UID and the ID of the token that data replaces ("" for the first). A
// manager that dies after creating the token and before storing the data computes the same ID
// on its next try and reuses that token: retries never leave a second token behind. The secret
// half stays random.
func tokenIDFor(uid types.UID, previous string) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + previous))
	id := make([]byte, 6)
	for i := range id {
		id[i] = tokenIDAlphabet[int(sum[i])%len(tokenIDAlphabet)]
	}
	return string(id)
}

// ensureJoinToken returns the join token for the config's next data, replacing previous: the
// token of ID tokenIDFor(config, previous) in the workload cluster's kube-system, created, or,
// when an earlier try created it already, reused with a fresh expiration. Creating first keeps
// the common case at one request. A token of that ID made for something else (an ID collision)
// is left alone, and a random ID used instead.
func ensureJoinToken(ctx context.Context, remote client.Client, config *cabpiv1.IgnitionConfig, previous string, ttl time.Duration, now time.Time) (joinToken, error) {
	id := tokenIDFor(config.UID, previous)
	description := tokenDescription(client.ObjectKeyFromObject(config))
	token, err := createJoinToken(ctx, remote, id, description, ttl, now)
	if !apierrors.IsAlreadyExists(err) {
		return token, err
	}
	existing := &corev1.Secret{}
	if err := remote.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(id)}, existing); err != nil {
		return joinToken{}, fmt.Errorf("looking up bootstrap token %s in the workload cluster: %w", id, err)
	}
	if string(existing.Data[bootstrapapi.BootstrapTokenDescriptionKey]) != description {
		return createJoinToken(ctx, remote, "", description, ttl, now) // taken: a random ID
	}
	existing.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(now.UTC().Add(ttl).Format(time.RFC3339))
	if err := remote.Update(ctx, existing); err != nil {
		return joinToken{}, fmt.Errorf("reusing bootstrap token %s in the workload cluster: %w", id, err)
	}
	return joinToken{ID: id, Value: id + "." + string(existing.Data[bootstrapapi.BootstrapTokenSecretKey])}, nil
}

// errTokenGone: the token of the current data cannot be kept (deleted, expired, or made for
// something else).
var errTokenGone = errors.New("join token gone")

// currentJoinToken reads the token id of the config's current data from the workload cluster's
// kube-system, with its expiration: errTokenGone when it is not there, not the config's (its
// description names another config), or expired.
func currentJoinToken(ctx context.Context, remote client.Client, config *cabpiv1.IgnitionConfig, id string, now time.Time) (joinToken, time.Time, error) {
	secret := &corev1.Secret{}
	err := remote.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(id)}, secret)
	if apierrors.IsNotFound(err) {
		return joinToken{}, time.Time{}, errTokenGone
	}
	if err != nil {
		return joinToken{}, time.Time{}, fmt.Errorf("looking up join token %s in the workload cluster: %w", id, err)
	}
	value := id + "." + string(secret.Data[bootstrapapi.BootstrapTokenSecretKey])
	expiration := tokenExpiration(secret)
	if string(secret.Data[bootstrapapi.BootstrapTokenDescriptionKey]) != tokenDescription(client.ObjectKeyFromObject(config)) ||
		!expiration.After(now) || !bootstraputil.IsValidBootstrapToken(value) {
		return joinToken{}, time.Time{}, errTokenGone
	}
	return joinToken{ID: id, Value: value}, expiration, nil
}

// createJoinToken creates a bootstrap token Secret in the workload cluster's kube-system, with
// the given ID ("" for a random one) and a random secret.
func createJoinToken(ctx context.Context, remote client.Client, id, description string, ttl time.Duration, now time.Time) (joinToken, error) {
	value, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return joinToken{}, fmt.Errorf("generating bootstrap token: %w", err)
	}
	parts := bootstraputil.BootstrapTokenRegexp.FindStringSubmatch(value)
	if len(parts) != 3 {
		return joinToken{}, fmt.Errorf("generated bootstrap token does not match %s", bootstrapapi.BootstrapTokenPattern)
	}
	secretPart := parts[2]
	if id == "" {
		id = parts[1]
	}
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:               []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:           []byte(secretPart),
			bootstrapapi.BootstrapTokenExpirationKey:       []byte(now.UTC().Add(ttl).Format(time.RFC3339)),
			bootstrapapi.BootstrapTokenUsageSigningKey:     []byte("true"),
			bootstrapapi.BootstrapTokenUsageAuthentication: []byte("true"),
			bootstrapapi.BootstrapTokenExtraGroupsKey:      []byte("system:bootstrappers:kubeadm:default-node-token"),
			bootstrapapi.BootstrapTokenDescriptionKey:      []byte(description),
		},
	}
	if err := remote.Create(ctx, secret); err != nil {
		// Wrapped with %w: ensureJoinToken tells an existing token apart (AlreadyExists).
		return joinToken{}, fmt.Errorf("creating bootstrap token %s in the workload cluster: %w", id, err)
	}
	return joinToken{ID: id, Value: id + "." + secretPart}, nil
}

// deleteJoinToken removes the bootstrap token id from the workload cluster; gone already is fine.
func deleteJoinToken(ctx context.Context, remote client.Client, id string) error {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem}}
	if err := remote.Delete(ctx, secret); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting bootstrap token %s in the workload cluster: %w", id, err)
	}
	return nil
}

// tokenExpiration reads the expiration of the token Secret; zero when unset or unreadable.
func tokenExpiration(secret *corev1.Secret) time.Time {
	t, err := time.Parse(time.RFC3339, string(secret.Data[bootstrapapi.BootstrapTokenExpirationKey]))
	if err != nil {
		return time.Time{}
	}
	return t
}

// Timing follows CABPK: look every TTL/3, so a token gets at least two chances to be extended
// before it expires, and extend once less than 5/6 of the TTL is left.
func (r *Reconciler) tokenCheckInterval() time.Duration { return r.TokenTTL / 3 }
func (r *Reconciler) refreshWhenLeft() time.Duration    { return r.TokenTTL * 5 / 6 }

// reconcileJoinToken keeps the join token of an already rendered config usable: refreshed until
// a Machine's node joined (then left to expire), rotated for MachinePools, which keep creating
// instances from the same data.
func (r *Reconciler) reconcileJoinToken(ctx context.Context, s *scope, data *corev1.Secret) (ctrl.Result, error) {
	if data == nil && s.machineJoined() {
		// The node booted from that data long ago and needs it no more: nothing to render again
		// (its role may have changed since, e.g. from kubeadm init to join).
		ctrl.LoggerFrom(ctx).V(1).Info("Data Secret deleted after the node joined; not rendering it again")
		return ctrl.Result{}, nil
	}
	if data == nil {
		// The Secret named in status is gone (deleted by hand) before the node joined, so the
		// infrastructure may still need it: let the next reconcile render again.
		s.config.Status.Initialization.DataSecretCreated = nil
		s.config.Status.DataSecretName = ""
		setDataSecretFalse(s.config, cabpiv1.DataSecretInternalErrorReason, "The data Secret was deleted; rendering it again")
		// The status change comes back as an event; the delay only bounds the wait if it does not.
		return ctrl.Result{RequeueAfter: time.Second}, nil
	}
	if s.isControlPlane() {
		setCertificatesAvailable(s.config)
	}
	tokenID := data.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
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

	// A token this manager created or refreshed less than a sixth of its TTL ago needs nothing
	// yet, and would not have been refreshed: no need to ask the workload cluster. A token lost
	// meanwhile is found by the periodic check (every TTL/3), as it would be without this.
	clusterKey := util.ObjectKey(s.cluster)
	now := r.Clock.Now().UTC()
	known := r.memory.tokenExpiration(configKey, tokenID)
	if known.IsZero() && !s.isMachinePool() {
		// Not seen by this manager (it restarted): the token was created, with this TTL, just
		// before the data Secret that names it. A manager restarted during a scale-up then does
		// not ask the workload cluster about every config it just delivered. Only the first
		// sixth of the TTL is skipped, as for tokens this manager made; a TTL raised across the
		// restart could delay the first check of such a token by that much.
		known = data.CreationTimestamp.Add(r.TokenTTL)
	}
	if known.After(now.Add(r.refreshWhenLeft())) {
		return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
	}

	log := ctrl.LoggerFrom(ctx).WithValues("tokenID", tokenID)
	remote, err := r.ClusterCache.GetClient(ctx, clusterKey)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("getting workload cluster client to refresh token %s: %w", tokenID, err)
	}
	tokenSecret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(tokenID)}
	err = remote.Get(ctx, key, tokenSecret)
	if apierrors.IsNotFound(err) {
		r.memory.forgetToken(configKey)
	}
	switch {
	case apierrors.IsNotFound(err) && s.isMachinePool():
		log.Info("Join token of the MachinePool is gone, rotating it")
		return r.rotatePoolToken(ctx, s, false)
	case apierrors.IsNotFound(err) && !s.machineProvisioned():
		// Nothing has booted with the data yet: new data with a fresh token, in place.
		log.Info("Join token is gone before the Machine was provisioned; rendering its data again with a fresh token")
		return r.reconcileJoin(ctx, s, s.role())
	case apierrors.IsNotFound(err):
		// The machine was handed the data with this token; a new token would not reach it.
		msg := fmt.Sprintf("The join token %s of the bootstrap data was deleted or expired before the node joined, "+
			"and the machine was already provisioned with that data, so it cannot join: delete the Machine so that it is replaced", tokenID)
		r.fail(s.config, cabpiv1.JoinTokenLostReason, msg)
		// Its node may still show up (it joined just before the token went): look again.
		return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("getting join token %s: %w", tokenID, err)
	}

	expiration := tokenExpiration(tokenSecret)
	r.memory.setToken(configKey, tokenID, expiration)
	if s.isMachinePool() {
		// A pool's data must stay usable for new instances: rotate past half the TTL.
		if expiration.Before(now.Add(r.TokenTTL / 2)) {
			log.Info("Rotating the MachinePool's join token")
			return r.rotatePoolToken(ctx, s, expiration.After(now))
		}
		return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
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
	log.V(2).Info("Refreshed join token until the node joins", "expiration", newExpiration)
	return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil
}
