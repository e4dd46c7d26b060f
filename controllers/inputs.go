package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// placeholderToken stands in for the join token while the input is built (it has the length and
// form of a real one); renderJoin puts the real token in before the one render.
const placeholderToken = configinput.PlaceholderToken

// certificates says whether nodeInput may create the cluster certificates kubeadm init needs.
type certificates bool

const (
	// lookUpCertificates: only read them. Checking delivered data for changed inputs
	// (rerender.go) never creates anything.
	lookUpCertificates certificates = false
	// generateCertificates: create the missing ones for kubeadm init when no control-plane
	// provider does (the Cluster has no controlPlaneRef).
	generateCertificates certificates = true
)

// nodeInput gathers what the role needs from the Cluster, waiting (a non-nil outcome) for what
// is not there yet, and builds the renderer's input with configinput.Build, the builder the
// webhook and `cabpi render` use too. needs says what the spec takes from the Cluster; with
// needs.JoinToken the input carries placeholderToken, for the caller to replace.
func (r *Reconciler) nodeInput(ctx context.Context, s *scope, role ignition.Role, certs certificates) (in ignition.Input, needs configinput.Needs, o *outcome, err error) {
	version := s.kubernetesVersion()
	if version == "" {
		return in, needs, waitFor(cabpiv1.WaitingForKubernetesVersionReason,
			"Neither the owner (spec.version) nor the Cluster topology sets a Kubernetes version"), nil
	}
	spec := &s.config.Spec
	needs = configinput.ClusterNeeds(spec, role)
	net := s.cluster.Spec.ClusterNetwork
	cluster := configinput.Cluster{Name: s.cluster.Name, ServiceDomain: net.ServiceDomain, InfrastructureKind: s.infrastructureKind()}
	if len(net.Services.CIDRBlocks) > 0 {
		cluster.ServiceSubnet = net.Services.String()
	}
	if len(net.Pods.CIDRBlocks) > 0 {
		cluster.PodSubnet = net.Pods.String()
	}

	switch {
	case s.cluster.Spec.ControlPlaneEndpoint.IsValid():
		cluster.ControlPlaneEndpoint = s.cluster.Spec.ControlPlaneEndpoint.String()
	case needs.Endpoint:
		return in, needs, waitFor(cabpiv1.WaitingForControlPlaneEndpointReason,
			"Waiting for Cluster spec.controlPlaneEndpoint to be set"), nil
	}
	if needs.CACertificate || needs.CACertHashes {
		ca, o, err := r.clusterCA(ctx, s)
		if err != nil || o != nil {
			return in, needs, o, err
		}
		cluster.CACertificate = ca.KeyPair.Cert
		if cluster.CACertHashes, err = ca.Hashes(); err != nil {
			return in, needs, nil, fmt.Errorf("hashing the CA of Cluster %s: %w", s.cluster.Name, err)
		}
	}
	if wanted := configinput.CertificatesFor(spec, role); wanted != nil {
		// Without a control-plane provider nobody else creates the cluster certificates.
		generate := certs == generateCertificates && role == ignition.RoleInit && !s.cluster.Spec.ControlPlaneRef.IsDefined()
		if o, err := r.lookupCertificates(ctx, s, wanted, generate); err != nil || o != nil {
			return in, needs, o, err
		}
		cluster.Certificates = wanted
	}
	if needs.JoinToken {
		cluster.JoinToken = placeholderToken
	}

	res := &apiResolver{c: r.Client, ns: s.config.Namespace}
	in, err = configinput.Build(ctx, spec, role, version, cluster, res)
	s.unwatchedReference = res.unwatched
	var missing *configinput.MissingReferenceError
	var invalid *ignition.Error
	switch {
	case errors.As(err, &missing):
		return in, needs, &outcome{reason: cabpiv1.ReferenceNotFoundReason, message: missing.Error(), requeue: waitRequeue, warn: true}, nil
	case errors.As(err, &invalid):
		return in, needs, renderFailed(invalid), nil
	case err != nil:
		return in, needs, nil, err
	}
	// With the placeholder, not the real token: refreshing or replacing the token never
	// changes the digest (docs/adr/015).
	if s.inputsHash, err = configinput.InputsHash(in); err != nil {
		return in, needs, nil, err
	}
	return in, needs, nil, nil
}

// clusterCA returns the cluster CA certificate of the <cluster>-ca Secret, or why not: waiting
// while the Secret is missing or holds no certificate, InvalidClusterCertificate when what it
// holds is not a PEM certificate.
func (r *Reconciler) clusterCA(ctx context.Context, s *scope) (*secret.Certificate, *outcome, error) {
	certs := secret.NewCertificatesForWorker("")
	if err := certs.LookupCached(ctx, r.SecretCachingClient, r.Client, client.ObjectKeyFromObject(s.cluster)); err != nil {
		return nil, nil, fmt.Errorf("looking up the CA of Cluster %s: %w", s.cluster.Name, err)
	}
	ca := certs.GetByPurpose(secret.ClusterCA)
	if ca.KeyPair == nil || len(ca.KeyPair.Cert) == 0 {
		return nil, waitFor(cabpiv1.WaitingForClusterCAReason,
			fmt.Sprintf("Waiting for Secret %s to hold the cluster CA certificate", secret.Name(s.cluster.Name, secret.ClusterCA))), nil
	}
	if o := invalidCertificates(s, secret.Certificates{ca}); o != nil {
		return nil, o, nil
	}
	return ca, nil, nil
}

// apiResolver reads referenced keys from the config's namespace, from the API server: the
// manager's client does not read Secrets or ConfigMaps from a cache, and those referenced need
// not carry the label the caches select.
type apiResolver struct {
	c  client.Reader
	ns string
	// unwatched is set when an object read lacks the cluster-name label: the reference watch
	// (references.go) only sees labelled ones.
	unwatched bool
}

// note records whether obj is one the reference watch sees.
func (a *apiResolver) note(obj client.Object) {
	if _, ok := obj.GetLabels()[clusterv1.ClusterNameLabel]; !ok {
		a.unwatched = true
	}
}

func (a *apiResolver) SecretKey(ctx context.Context, field configinput.RefField, ref cabpiv1.KeyReference) ([]byte, error) {
	secret := &corev1.Secret{}
	if err := a.c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: ref.Name}, secret); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, &configinput.MissingReferenceError{Field: field, Kind: "Secret", Name: ref.Name, Key: ref.Key}
		}
		return nil, fmt.Errorf("reading Secret %s/%s for %s: %w", a.ns, ref.Name, field, err)
	}
	a.note(secret)
	data, ok := secret.Data[ref.Key]
	if !ok {
		return nil, &configinput.MissingReferenceError{Field: field, Kind: "Secret", Name: ref.Name, Key: ref.Key, KeyMissing: true}
	}
	return data, nil
}

func (a *apiResolver) ConfigMapKey(ctx context.Context, field configinput.RefField, ref cabpiv1.KeyReference) (string, error) {
	cm := &corev1.ConfigMap{}
	if err := a.c.Get(ctx, client.ObjectKey{Namespace: a.ns, Name: ref.Name}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &configinput.MissingReferenceError{Field: field, Kind: "ConfigMap", Name: ref.Name, Key: ref.Key}
		}
		return "", fmt.Errorf("reading ConfigMap %s/%s for %s: %w", a.ns, ref.Name, field, err)
	}
	a.note(cm)
	data, ok := cm.Data[ref.Key]
	if !ok {
		return "", &configinput.MissingReferenceError{Field: field, Kind: "ConfigMap", Name: ref.Name, Key: ref.Key, KeyMissing: true}
	}
	return data, nil
}
