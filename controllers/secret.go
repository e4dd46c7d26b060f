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
	"errors"
	"fmt"
	"maps"

	ignconfig "github.com/coreos/ignition/v2/config"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// Keys of the data Secret (Cluster API contract: value; format tells infrastructure providers
// the data is Ignition, not cloud-config).
const (
	dataSecretValueKey  = "value"
	dataSecretFormatKey = "format"
)

// dataSecretName is deterministic (the config's name) so the Secret can be found again after a
// move or restore without status.
func dataSecretName(config *cabpiv1.IgnitionConfig) string { return config.Name }

func configOwnerRef(config *cabpiv1.IgnitionConfig) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         cabpiv1.GroupVersion.String(),
		Kind:               "IgnitionConfig",
		Name:               config.Name,
		UID:                config.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// errDataSecretConflict: a Secret with the data Secret's name is controlled by another object.
var errDataSecretConflict = errors.New("data Secret conflict")

// getDataSecret returns the config's data Secret, or nil when there is none, and whether it has
// no controller. A Secret without a controller (restored from a backup or moved, or planted) is
// taken only if it is a data Secret in form (notOurs); any other Secret, or one controlled by
// something else, is an errDataSecretConflict, never adopted, served or overwritten. An
// ownerless one the status records is made this config's (ownDataSecret) at once; one it does
// not record is left as it is for decide: adopted as it is only once the owner started
// provisioning (the machine may have booted from it), rendered over before (docs/adr/044).
func (r *Reconciler) getDataSecret(ctx context.Context, config *cabpiv1.IgnitionConfig, clusterName string) (*corev1.Secret, bool, error) {
	secret := &corev1.Secret{}
	key := client.ObjectKey{Namespace: config.Namespace, Name: dataSecretName(config)}
	// The cache answers for the Secrets this controller wrote (they carry the cluster-name
	// label): a delivered config costs no API read. A miss is asked again of the API server: a
	// Secret restored without the label is not in the cache, a new one may not be there yet.
	err := r.SecretCachingClient.Get(ctx, key, secret)
	wholeFromAPI := false
	if apierrors.IsNotFound(err) {
		err, wholeFromAPI = r.Client.Get(ctx, key, secret), true
	}
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("getting data Secret %s: %w", key, err)
	}
	ctl := metav1.GetControllerOf(secret)
	if ctl == nil && !wholeFromAPI {
		// Adoption looks at the data, which the cache does not keep: read it whole from the API
		// server. A cache that has not seen the adoption yet finds it done there.
		if err := r.Client.Get(ctx, key, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("getting data Secret %s: %w", key, err)
		}
		ctl = metav1.GetControllerOf(secret)
	}
	switch {
	case ctl != nil && ctl.UID == config.UID:
		// Callers never read its data (from the cache there is none: it keeps metadata only).
		return secret, false, nil
	case ctl != nil:
		return nil, false, fmt.Errorf("%w: Secret %s is controlled by %s %s, not by this IgnitionConfig: delete or rename it",
			errDataSecretConflict, key, ctl.Kind, ctl.Name)
	}
	if why := notOurs(secret); why != "" {
		return nil, false, fmt.Errorf("%w: Secret %s has no controller but is not bootstrap data of this kind (%s): delete or rename it",
			errDataSecretConflict, key, why)
	}
	if !dataDelivered(config) {
		return secret, true, nil
	}
	owned, err := r.ownDataSecret(ctx, config, clusterName, secret)
	return owned, false, err
}

// ownDataSecret makes this config the controller of an ownerless data Secret, with the
// cluster-name label the contract asks for.
func (r *Reconciler) ownDataSecret(ctx context.Context, config *cabpiv1.IgnitionConfig, clusterName string, secret *corev1.Secret) (*corev1.Secret, error) {
	owned := secret.DeepCopy()
	owned.OwnerReferences = util.EnsureOwnerRef(owned.OwnerReferences, configOwnerRef(config))
	if owned.Labels == nil {
		owned.Labels = map[string]string{}
	}
	owned.Labels[clusterv1.ClusterNameLabel] = clusterName
	if err := r.Client.Patch(ctx, owned, client.MergeFrom(secret)); err != nil {
		return nil, fmt.Errorf("adopting data Secret %s: %w", klog.KObj(secret), err)
	}
	return owned, nil
}

// notOurs says why secret is not a data Secret as this controller writes them: type
// cluster.x-k8s.io/secret, format ignition, and a value that parses as Ignition; "" when it is.
// Only such a Secret is adopted: anything else would be served to a machine as its bootstrap data.
func notOurs(secret *corev1.Secret) string {
	switch {
	case secret.Type != clusterv1.ClusterSecretType:
		return fmt.Sprintf("type %q, not %q", secret.Type, clusterv1.ClusterSecretType)
	case string(secret.Data[dataSecretFormatKey]) != cabpiv1.DataSecretFormat:
		return fmt.Sprintf("format %q, not %q", secret.Data[dataSecretFormatKey], cabpiv1.DataSecretFormat)
	}
	if _, _, err := ignconfig.Parse(secret.Data[dataSecretValueKey]); err != nil {
		return fmt.Sprintf("its value is not an Ignition config: %v", err)
	}
	return ""
}

// storeDataSecret writes data rendered from in: created the first time, updated in place (same
// name, same UID) when a MachinePool's token is rotated or the inputs changed before the owner
// started provisioning. The data Secret's role annotation is the input's role; tokenID (may be
// empty) is recorded for token refresh; the input's digest goes into status.dataInputsHash.
func (r *Reconciler) storeDataSecret(ctx context.Context, s *scope, in nodeInput, data []byte, tokenID string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            dataSecretName(s.config),
			Namespace:       s.config.Namespace,
			Labels:          map[string]string{clusterv1.ClusterNameLabel: s.cluster.Name},
			OwnerReferences: []metav1.OwnerReference{configOwnerRef(s.config)},
		},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{
			dataSecretValueKey:  data,
			dataSecretFormatKey: []byte(cabpiv1.DataSecretFormat),
		},
	}
	secret.Annotations = map[string]string{cabpiv1.BootstrapRoleAnnotation: string(in.Role)}
	if tokenID != "" {
		secret.Annotations[cabpiv1.BootstrapTokenIDAnnotation] = tokenID
	}
	existing := s.dataSecret
	op := metrics.SecretCreate
	var err error
	if existing == nil {
		err = r.Client.Create(ctx, secret)
		if apierrors.IsAlreadyExists(err) {
			if existing, _, err = r.getDataSecret(ctx, s.config, s.cluster.Name); err == nil && existing == nil {
				err = fmt.Errorf("data Secret %s vanished while being written, retrying", klog.KObj(secret))
			}
		}
	}
	if existing != nil && err == nil {
		op = metrics.SecretUpdate
		// The Secret this reconcile found (metadata only, from the cache): a stale copy fails
		// the update with a conflict, retried with backoff.
		existing = existing.DeepCopy()
		existing.Data = secret.Data
		existing.Labels = util.MergeMap(existing.Labels, secret.Labels)
		// An ownerless Secret rendered over (decide) becomes this config's.
		existing.OwnerReferences = util.EnsureOwnerRef(existing.OwnerReferences, configOwnerRef(s.config))
		if existing.Annotations == nil {
			existing.Annotations = map[string]string{}
		}
		// The new data's: a token annotation of data that carries no token of ours goes.
		delete(existing.Annotations, cabpiv1.BootstrapTokenIDAnnotation)
		maps.Copy(existing.Annotations, secret.Annotations)
		err = r.Client.Update(ctx, existing)
	}
	if err != nil {
		return fmt.Errorf("writing data Secret %s: %w", klog.KObj(secret), err)
	}
	metrics.DataSecretWritten(op)
	r.memory.stored(client.ObjectKeyFromObject(s.config))
	return nil
}
