package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// baseInput resolves what every role renders: variant, version, Butane, files and commands.
// A non-nil outcome says why the config cannot be rendered yet.
func (r *Reconciler) baseInput(ctx context.Context, s *scope, role ignition.Role) (ignition.Input, *outcome, error) {
	version := s.kubernetesVersion()
	if version == "" {
		return ignition.Input{}, waitFor(bootstrapv1.WaitingForKubernetesVersionReason,
			"Neither the owner (spec.version) nor the Cluster topology sets a Kubernetes version"), nil
	}
	in, err := configinput.FromSpec(ctx, &s.config.Spec, role, version, apiResolver{c: r.Client, ns: s.config.Namespace})
	var missing *configinput.MissingReferenceError
	var invalid *ignition.Error
	switch {
	case errors.As(err, &missing):
		return in, &outcome{reason: bootstrapv1.ReferenceNotFoundReason, message: missing.Error(), requeue: waitRequeue, warn: true}, nil
	case errors.As(err, &invalid):
		return in, renderFailed(invalid), nil
	case err != nil:
		return in, nil, err
	}
	return in, nil, nil
}

// apiResolver reads referenced keys from the config's namespace (uncached: the manager does not
// cache Secrets or ConfigMaps).
type apiResolver struct {
	c  client.Reader
	ns string
}

func (a apiResolver) SecretKey(ctx context.Context, field string, ref bootstrapv1.KeyReference) ([]byte, error) {
	secret := &corev1.Secret{}
	if err := a.c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &configinput.MissingReferenceError{Field: field, Kind: "Secret", Name: ref.Name, Key: ref.Key}
		}
		return nil, fmt.Errorf("reading Secret %s/%s for %s: %w", a.ns, ref.Name, field, err)
	}
	data, ok := secret.Data[ref.Key]
	if !ok {
		return nil, &configinput.MissingReferenceError{Field: field, Kind: "Secret", Name: ref.Name, Key: ref.Key, KeyMissing: true}
	}
	return data, nil
}

func (a apiResolver) ConfigMapKey(ctx context.Context, field string, ref bootstrapv1.KeyReference) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := a.c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: ref.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &configinput.MissingReferenceError{Field: field, Kind: "ConfigMap", Name: ref.Name, Key: ref.Key}
		}
		return "", fmt.Errorf("reading ConfigMap %s/%s for %s: %w", a.ns, ref.Name, field, err)
	}
	data, ok := cm.Data[ref.Key]
	if !ok {
		return "", &configinput.MissingReferenceError{Field: field, Kind: "ConfigMap", Name: ref.Name, Key: ref.Key, KeyMissing: true}
	}
	return data, nil
}
