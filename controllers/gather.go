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
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
)

// facts is what decide decides on: read from the scope, this manager's memory, the clock and,
// when the config's state calls for them, the delivered data's current inputs and its join
// token in the workload cluster. Nothing here is written back: gathering only reads.
type facts struct {
	// inPlaceUpdate: Cluster API is updating the config's Machine in place (the config carries
	// clusterv1.UpdateInProgressAnnotation); nothing else is gathered.
	inPlaceUpdate bool
	// conflict says why a Secret of the data Secret's name cannot be this config's ("": none).
	conflict string
	// delivered: the status records the data Secret (the contract's
	// status.initialization.dataSecretCreated and status.dataSecretName).
	delivered bool
	// dataSecret: the data Secret exists (and is this config's).
	dataSecret bool
	// dataSecretUnowned: it has no controller and the status does not record it.
	dataSecretUnowned bool
	// tokenID is the join token the data carries ("" for none).
	tokenID string

	role                     ignition.Role
	controlPlane             bool
	machinePool              bool
	machineJoined            bool
	ownerProvisioningStarted bool

	infrastructureProvisioned bool
	controlPlaneInitialized   bool
	// machineVersion is the owner's Kubernetes version, and controlPlaneVersions what the
	// Cluster's control plane says of its own: read for a join not delivered yet (skew.go).
	machineVersion       string
	controlPlaneVersions controlPlaneVersions

	dataSecretAvailableTrue   bool
	dataSecretAvailableReason string
	recordedHash              string
	// specChangedAfterProvisioning: a spec generation not yet observed and not yet noted by
	// this manager, changed after the owner started provisioning.
	specChangedAfterProvisioning bool
	// specHash is the current spec's inplace.SpecHash, and recordedSpecHash the status's
	// (status.dataSpecHash). specHash is computed only where decide reads it: for delivered data
	// whose owner started provisioning, when the spec changed or none is recorded yet.
	specHash         string
	recordedSpecHash string
	// failedHash is the digest of inputs this manager found not to render (memory).
	failedHash string

	// inputs are the delivered data's current inputs, built when they may be rendered again
	// (inputsMayChange); nil otherwise.
	inputs *currentInputs
	// token is the state of the delivered data's join token, read when due (tokenCheckDue).
	token tokenState
	now   time.Time
}

// currentInputs is what building a delivered config's inputs again gave: an input, or why not.
type currentInputs struct {
	input    nodeInput
	notBuilt *notStored
	// unwatched: they read a Secret or ConfigMap without the cluster-name label, whose changes no
	// watch sees.
	unwatched bool
}

// tokenStateKind is what is known of the data's join token.
type tokenStateKind int

const (
	// tokenNotRead: not looked at (not due, or no token).
	tokenNotRead tokenStateKind = iota
	// tokenFarFromExpiry: this manager knows it far from expiring, without asking.
	tokenFarFromExpiry
	// tokenPresent: read from the workload cluster, with its expiration.
	tokenPresent
	// tokenGone: not in the workload cluster (deleted, or removed by the token cleaner).
	tokenGone
)

type tokenState struct {
	state      tokenStateKind
	expiration time.Time
	secret     *corev1.Secret
}

// gather reads the facts for s. An error is a read that failed (retried with backoff).
func (r *Reconciler) gather(ctx context.Context, s *scope, conflict error) (facts, error) {
	config := s.config
	f := facts{
		delivered:                 dataDelivered(config),
		dataSecret:                s.dataSecret != nil,
		dataSecretUnowned:         s.dataSecretUnowned,
		tokenID:                   s.currentTokenID(),
		role:                      s.role(),
		controlPlane:              s.isControlPlane(),
		machinePool:               s.isMachinePool(),
		machineJoined:             s.machineJoined(),
		ownerProvisioningStarted:  s.ownerProvisioningStarted(),
		infrastructureProvisioned: s.clusterInfrastructureProvisioned(),
		controlPlaneInitialized:   s.controlPlaneInitialized(),
		dataSecretAvailableTrue:   conditions.IsTrue(config, cabpiv1.DataSecretAvailableCondition),
		dataSecretAvailableReason: conditions.GetReason(config, cabpiv1.DataSecretAvailableCondition),
		recordedHash:              config.Status.DataInputsHash,
		recordedSpecHash:          config.Status.DataSpecHash,
		now:                       r.Clock.Now().UTC(),
	}
	if _, ok := config.Annotations[clusterv1.UpdateInProgressAnnotation]; ok {
		// The reconcile writes nothing (decide): neither the inputs nor the token are needed.
		f.inPlaceUpdate = true
		return f, nil
	}
	key := client.ObjectKeyFromObject(config)
	memo := r.memory.read(key)
	f.failedHash = memo.failedHash
	f.specChangedAfterProvisioning = config.Status.ObservedGeneration != 0 &&
		config.Generation != config.Status.ObservedGeneration && memo.notedGeneration != config.Generation
	if conflict != nil {
		f.conflict = conflict.Error()
		return f, nil
	}
	if !f.delivered && f.role != ignition.RoleInit && f.controlPlaneInitialized {
		// What the join skew guard decides from; only a join still to render needs it.
		f.machineVersion = s.kubernetesVersion()
		v, err := r.readControlPlaneVersions(ctx, s)
		if err != nil {
			return f, err
		}
		f.controlPlaneVersions = v
	}
	if !f.delivered || !f.dataSecret {
		return f, nil
	}
	if f.ownerProvisioningStarted && (f.specChangedAfterProvisioning || f.recordedSpecHash == "") {
		h, err := inplace.SpecHash(config.Spec)
		if err != nil {
			return f, fmt.Errorf("digesting the spec of %s: %w", key, err)
		}
		f.specHash = h
	}

	if r.inputsMayChange(ctx, s, f) {
		b, err := r.buildInput(ctx, s, f.role, lookUpCertificates)
		if err != nil {
			return f, err
		}
		f.inputs = &currentInputs{input: b.input, notBuilt: b.notBuilt, unwatched: b.unwatched}
	}

	if f.tokenID != "" && !f.machineJoined && f.infrastructureProvisioned {
		if r.tokenFarFromExpiry(s, f.tokenID, f.now) {
			f.token.state = tokenFarFromExpiry
		} else {
			token, err := r.readToken(ctx, s, f.tokenID)
			if err != nil {
				return f, err
			}
			f.token = token
		}
	}
	return f, nil
}

// inputsMayChange says whether the delivered data may be rendered again: its owner has not
// started provisioning, the workload cluster is reachable (not around a clusterctl move), and
// the role it was rendered for is still the config's (a control-plane Machine that got kubeadm
// init may be seen with its Cluster's control plane initialized, by itself, before it is seen
// provisioned).
func (r *Reconciler) inputsMayChange(ctx context.Context, s *scope, f facts) bool {
	if f.ownerProvisioningStarted || !f.infrastructureProvisioned {
		return false
	}
	if delivered := s.dataRole(); delivered != f.role {
		ctrl.LoggerFrom(ctx).V(4).Info("Not rendering the data again: its role would change", "dataRole", delivered, "role", f.role)
		return false
	}
	return true
}

// tokenFarFromExpiry is true when the token is known to be far from expiring, without asking
// the workload cluster (its client is rate limited, --clustercache-client-qps). A token this
// manager created or refreshed less than a sixth of its TTL ago needs nothing yet, and would not
// be refreshed; a token lost meanwhile is found by the periodic check (every TTL/3), as it would
// be without this.
func (r *Reconciler) tokenFarFromExpiry(s *scope, tokenID string, now time.Time) bool {
	known := r.memory.tokenExpiration(client.ObjectKeyFromObject(s.config), tokenID)
	if known.IsZero() && !s.isMachinePool() {
		// Not seen by this manager (it restarted): the token was created, with this TTL, just
		// before the data Secret that names it. A manager restarted during a scale-up then does
		// not ask the workload cluster about every config it just delivered. Only the first
		// sixth of the TTL is skipped, as for tokens this manager made; a TTL raised across the
		// restart could delay the first check of such a token by that much.
		known = s.dataSecret.CreationTimestamp.Add(r.TokenTTL)
	}
	return known.After(now.Add(r.policy().refreshWhenLeft()))
}

// readToken reads the data's join token from the workload cluster, and remembers its
// expiration (or that it is gone).
func (r *Reconciler) readToken(ctx context.Context, s *scope, tokenID string) (tokenState, error) {
	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return tokenState{}, fmt.Errorf("getting workload cluster client to look at join token %s: %w", tokenID, err)
	}
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: bootstraputil.BootstrapTokenSecretName(tokenID)}
	configKey := client.ObjectKeyFromObject(s.config)
	if err := remote.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.memory.forgetToken(configKey)
			return tokenState{state: tokenGone}, nil
		}
		return tokenState{}, fmt.Errorf("getting join token %s: %w", tokenID, err)
	}
	expiration := tokenExpiration(secret)
	r.memory.setToken(configKey, tokenID, expiration)
	return tokenState{state: tokenPresent, expiration: expiration, secret: secret}, nil
}
