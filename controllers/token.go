/*
Copyright The cabpi Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
	"sigs.k8s.io/controller-runtime/pkg/client"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
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

// JoinTokenID derives the ID (the public half) of the join token the config's next data carries,
// from the config's UID and the ID of the token that data replaces ("" for the first). A
// manager that dies after creating the token and before storing the data computes the same ID
// on its next try and reuses that token: retries never leave a second token behind. The secret
// half stays random.
func JoinTokenID(uid types.UID, previous string) string {
	sum := sha256.Sum256([]byte(string(uid) + "/" + previous))
	id := make([]byte, 6)
	for i := range id {
		id[i] = tokenIDAlphabet[int(sum[i])%len(tokenIDAlphabet)]
	}
	return string(id)
}

// ensureJoinToken returns the join token for the config's next data, replacing previous: the
// token of ID JoinTokenID(config, previous) in the workload cluster's kube-system, created, or,
// when an earlier try created it already, reused with a fresh expiration. Creating first keeps
// the common case at one request. A token of that ID made for something else (an ID collision)
// is left alone, and a random ID used instead.
func ensureJoinToken(ctx context.Context, remote client.Client, config *cabpiv1.IgnitionConfig, previous string, ttl time.Duration, now time.Time) (joinToken, error) {
	id := JoinTokenID(config.UID, previous)
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
