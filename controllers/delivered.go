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
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// What is done to data already delivered: rendered again in place, its join token refreshed,
// or a data Secret the status does not record adopted.

// rerender renders the data again from in and updates the data Secret in place (actRerender):
// same name, same UID and, for a join, the same join token, so that a machine which took the
// earlier data before its owner reported provisioning still joins. When nothing is stored it
// says why (the status keeps the delivered data: RerenderFailed); inputs that never render are
// remembered, and not rendered again until they change. recheck is how soon to look again
// though no watch may see a change (0: none).
func (r *Reconciler) rerender(ctx context.Context, s *scope, in nodeInput, recheck time.Duration) (outcome, *notStored) {
	// The config read may be older than the status patch that recorded data just rendered
	// again from these inputs: the API server's copy says, so that the same inputs are not
	// rendered a second time (by this manager, or by one started since).
	if recorded, err := r.inputsRecordedPerAPIServer(ctx, s.config, in.hash); err != nil || recorded {
		return outcome{err: err, stale: recorded}, nil
	}
	res := r.renderAndStore(ctx, s, in, r.currentOrNextToken)
	switch {
	case res.err != nil:
		return outcome{err: res.err}, nil // retried with backoff; the conditions say what they said
	case res.notStored != nil:
		if res.notStored.neverRenders {
			r.memory.failed(client.ObjectKeyFromObject(s.config), in.hash)
		}
		recheck = lowestNonZero(recheck, res.notStored.requeue)
		if in.joinToken {
			// The delivered data stays, and with it its token's upkeep.
			recheck = lowestNonZero(recheck, r.policy().tokenCheckInterval())
		}
		return outcome{requeue: recheck}, res.notStored
	}
	countTokenMade(res, false)
	metrics.Rerender()
	ctrl.LoggerFrom(ctx).Info("Inputs changed before the owner started provisioning; rendered the data again in place",
		"dataInputsHash", in.hash)
	o := r.storedAs(s, in, res)
	o.events = append(o.events, rerendered(s.kind(), dataSecretName(s.config)))
	return o, nil
}

// rerendered says that changed inputs were rendered again in place.
func rerendered(ownerKind, dataSecretName string) event {
	return event{eventType: corev1.EventTypeNormal, reason: cabpiv1.RerenderedEventReason, note: fmt.Sprintf(
		"The inputs changed before the %s started provisioning: data Secret %s rendered again in place", ownerKind, dataSecretName)}
}

// refreshToken extends the delivered data's join token until the node joins (actRefreshToken).
func (r *Reconciler) refreshToken(ctx context.Context, s *scope, tokenSecret *corev1.Secret) outcome {
	tokenID := s.currentTokenID()
	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return outcome{err: fmt.Errorf("getting workload cluster client to refresh token %s: %w", tokenID, err)}
	}
	now := r.Clock.Now().UTC()
	tokenSecret = tokenSecret.DeepCopy()
	newExpiration := now.Add(r.TokenTTL)
	tokenSecret.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(newExpiration.Format(time.RFC3339))
	if err := remote.Update(ctx, tokenSecret); err != nil {
		return outcome{err: fmt.Errorf("refreshing join token %s: %w", tokenID, err)}
	}
	r.memory.setToken(client.ObjectKeyFromObject(s.config), tokenID, newExpiration)
	metrics.JoinToken(metrics.TokenRefresh)
	ctrl.LoggerFrom(ctx).V(2).Info("Refreshed join token until the node joins", "tokenID", tokenID, "expiration", newExpiration.Format(time.RFC3339))
	return outcome{requeue: r.policy().tokenCheckInterval()}
}

// adopt records an existing data Secret in the status without rendering it again (actAdopt).
// Most often the config came from a cache that has not seen this controller's own status write
// yet: then the status must not be written again from the stale copy (it would overwrite the
// condition the render set, e.g. RenderedWithWarnings), and the API server's copy says so.
func (r *Reconciler) adopt(ctx context.Context, s *scope) outcome {
	if delivered, err := r.deliveredPerAPIServer(ctx, s.config); err != nil || delivered {
		return outcome{err: err, stale: delivered}
	}
	if s.dataSecretUnowned {
		owned, err := r.ownDataSecret(ctx, s.config, s.cluster.Name, s.dataSecret)
		if err != nil {
			return outcome{err: err}
		}
		s.dataSecret = owned
	}
	ctrl.LoggerFrom(ctx).Info("Data Secret already exists, recording it", "Secret", klog.KObj(s.dataSecret))
	o := outcome{stored: &storedData{secretName: s.dataSecret.Name, inputsHash: s.config.Status.DataInputsHash,
		specHash: s.config.Status.DataSpecHash},
		dataSecretAvailable: dataSecretTrue()}
	if s.isControlPlane() {
		o.certificatesAvailable = certificatesTrue()
	}
	return o
}

// deliveredPerAPIServer reads the config from the API server, past the cache, and reports
// whether its status already records the data Secret.
func (r *Reconciler) deliveredPerAPIServer(ctx context.Context, config *cabpiv1.IgnitionConfig) (bool, error) {
	fresh, err := r.fromAPIServer(ctx, config)
	if fresh == nil || err != nil {
		return false, err
	}
	return dataDelivered(fresh), nil
}

// inputsRecordedPerAPIServer reads the config from the API server, past the cache, and reports
// whether its status already records hash as the digest of the delivered data's inputs.
func (r *Reconciler) inputsRecordedPerAPIServer(ctx context.Context, config *cabpiv1.IgnitionConfig, hash string) (bool, error) {
	fresh, err := r.fromAPIServer(ctx, config)
	if fresh == nil || err != nil {
		return false, err
	}
	return fresh.Status.DataInputsHash == hash, nil
}

// fromAPIServer reads config from the API server, past the cache; nil without an APIReader.
func (r *Reconciler) fromAPIServer(ctx context.Context, config *cabpiv1.IgnitionConfig) (*cabpiv1.IgnitionConfig, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	fresh := &cabpiv1.IgnitionConfig{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(config), fresh); err != nil {
		return nil, fmt.Errorf("reading IgnitionConfig %s: %w", client.ObjectKeyFromObject(config), err)
	}
	return fresh, nil
}

// dataDelivered is true when the config's status records its data Secret (the contract's
// status.initialization.dataSecretCreated and status.dataSecretName).
func dataDelivered(config *cabpiv1.IgnitionConfig) bool {
	return ptr.Deref(config.Status.Initialization.DataSecretCreated, false) && config.Status.DataSecretName != ""
}
