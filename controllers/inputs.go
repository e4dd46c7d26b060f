package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// placeholderToken stands in for the join token while the input is built (it has the length and
// form of a real one); renderJoin puts the real token into the rendered data.
const placeholderToken = configinput.PlaceholderToken

// certificates says whether buildInput may create the cluster certificates kubeadm init needs.
type certificates bool

const (
	// lookUpCertificates: only read them. Checking delivered data for changed inputs
	// (rerender.go) never creates anything.
	lookUpCertificates certificates = false
	// generateCertificates: create the missing ones for kubeadm init when no control-plane
	// provider does (the Cluster has no controlPlaneRef).
	generateCertificates certificates = true
)

// nodeInput is the renderer's input for a config, with what the steps after the render need to
// know of it.
type nodeInput struct {
	ignition.Input
	// joinToken: the data gets a join token of ours (renderJoin); the input carries
	// placeholderToken in its place.
	joinToken bool
	// hash is the input's digest, recorded with the data rendered from it
	// (status.dataInputsHash). It is taken with the placeholder, not the real token: refreshing
	// or replacing the token never changes it (docs/adr/015).
	hash string
}

// buildInput gathers what the role needs from the Cluster and builds the renderer's input with
// configinput.Build, the builder the webhook and `cabpi render` use too; refs reads the
// referenced Secrets and ConfigMaps (and notes whether any is unwatched). It returns the input,
// or a report of what it waits for or why the input cannot be built, or an error.
func (r *Reconciler) buildInput(ctx context.Context, s *scope, role ignition.Role, certs certificates, refs *apiResolver) (nodeInput, *report, error) {
	version := s.kubernetesVersion()
	if version == "" {
		return nodeInput{}, waitFor(cabpiv1.WaitingForKubernetesVersionReason,
			"Neither the owner (spec.version) nor the Cluster topology sets a Kubernetes version"), nil
	}
	spec := &s.config.Spec
	needs := configinput.ClusterNeeds(spec, role)
	net := s.cluster.Spec.ClusterNetwork
	delivery, rep, err := r.delivery(ctx, s)
	if rep != nil || err != nil {
		return nodeInput{}, rep, err
	}
	cluster := configinput.Cluster{Name: s.cluster.Name, ServiceDomain: net.ServiceDomain, Delivery: delivery}
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
		return nodeInput{}, waitFor(cabpiv1.WaitingForControlPlaneEndpointReason,
			"Waiting for Cluster spec.controlPlaneEndpoint to be set"), nil
	}
	if needs.CACertificate || needs.CACertHashes {
		ca, rep, err := r.clusterCA(ctx, s)
		if rep != nil || err != nil {
			return nodeInput{}, rep, err
		}
		cluster.CACertificate = ca.KeyPair.Cert
		if cluster.CACertHashes, err = ca.Hashes(); err != nil {
			return nodeInput{}, nil, fmt.Errorf("hashing the CA of Cluster %s: %w", s.cluster.Name, err)
		}
	}
	if wanted := configinput.CertificatesFor(spec, role); wanted != nil {
		// Without a control-plane provider nobody else creates the cluster certificates.
		generate := certs == generateCertificates && role == ignition.RoleInit && !s.cluster.Spec.ControlPlaneRef.IsDefined()
		if rep, err := r.lookupCertificates(ctx, s, wanted, generate); rep != nil || err != nil {
			return nodeInput{}, rep, err
		}
		cluster.Certificates = wanted
	}
	if needs.JoinToken {
		cluster.JoinToken = placeholderToken
	}

	in, err := configinput.Build(ctx, spec, role, version, cluster, refs)
	var missing *configinput.MissingReferenceError
	var undeliverable *configinput.DeliveryError
	var invalid *ignition.Error
	switch {
	case errors.As(err, &missing):
		return nodeInput{}, &report{reason: cabpiv1.ReferenceNotFoundReason, message: missing.Error(), requeue: waitRequeue, warn: true}, nil
	case errors.As(err, &undeliverable):
		// The infrastructure machine is not watched: looked at again as a render error is.
		return nodeInput{}, &report{reason: cabpiv1.IncompatibleInfrastructureReason, message: undeliverable.Error(), requeue: renderErrorRetry, warn: true}, nil
	case errors.As(err, &invalid):
		return nodeInput{}, renderFailed(invalid), nil
	case err != nil:
		return nodeInput{}, nil, fmt.Errorf("building the %s input: %w", role, err)
	}
	hash, err := configinput.InputsHash(in)
	if err != nil {
		return nodeInput{}, nil, fmt.Errorf("digesting the %s input: %w", role, err)
	}
	return nodeInput{Input: in, joinToken: needs.JoinToken, hash: hash}, nil, nil
}

// clusterCA returns the cluster CA certificate of the <cluster>-ca Secret, or why not: waiting
// while the Secret is missing or holds no certificate, InvalidClusterCertificate when what it
// holds is not a PEM certificate.
func (r *Reconciler) clusterCA(ctx context.Context, s *scope) (*secret.Certificate, *report, error) {
	certs := secret.NewCertificatesForWorker("")
	if err := certs.LookupCached(ctx, r.SecretCachingClient, r.Client, client.ObjectKeyFromObject(s.cluster)); err != nil {
		return nil, nil, fmt.Errorf("looking up the CA of Cluster %s: %w", s.cluster.Name, err)
	}
	ca := certs.GetByPurpose(secret.ClusterCA)
	if ca.KeyPair == nil || len(ca.KeyPair.Cert) == 0 {
		return nil, waitFor(cabpiv1.WaitingForClusterCAReason,
			fmt.Sprintf("Waiting for Secret %s to hold the cluster CA certificate", secret.Name(s.cluster.Name, secret.ClusterCA))), nil
	}
	if rep := invalidCertificates(s, secret.Certificates{ca}); rep != nil {
		return nil, rep, nil
	}
	return ca, nil, nil
}

// apiResolver reads referenced keys from the config's namespace, from the API server: the
// manager's client does not read Secrets or ConfigMaps from a cache, and those referenced need
// not carry the label the caches select. One resolver serves one build of an input.
type apiResolver struct {
	c  client.Reader
	ns string
	// unwatched is set when an object read lacks the cluster-name label: the reference watch
	// (references.go) only sees labelled ones.
	unwatched bool
}

// resolver returns a resolver of the config's references.
func (r *Reconciler) resolver(s *scope) *apiResolver {
	return &apiResolver{c: r.Client, ns: s.config.Namespace}
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

// delivery reads how the owner's infrastructure machine hands the data to its instance. Only
// kinds whose spec decides it (CAPA's: spec.ignition) are read, from the API server (unstructured
// objects are not cached), at the version the API server prefers; for any other kind the kind
// says it all. A machine not there yet, or a kind not installed, is waited for.
func (r *Reconciler) delivery(ctx context.Context, s *scope) (configinput.Delivery, *report, error) {
	ref := s.infrastructureRef()
	if !configinput.DeliveryNeedsSpec(ref.Kind) {
		return configinput.Delivery{Kind: ref.Kind}, nil, nil
	}
	what := fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	mapping, err := r.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if meta.IsNoMatchError(err) {
		return configinput.Delivery{}, waitFor(cabpiv1.WaitingForInfrastructureMachineReason,
			fmt.Sprintf("Waiting for the infrastructure machine %s: its kind is not installed (group %q)", what, ref.APIGroup)), nil
	}
	if err != nil {
		return configinput.Delivery{}, nil, fmt.Errorf("finding the API of %s: %w", what, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: s.config.Namespace, Name: ref.Name}, obj)
	if apierrors.IsNotFound(err) {
		return configinput.Delivery{}, waitFor(cabpiv1.WaitingForInfrastructureMachineReason,
			fmt.Sprintf("Waiting for the infrastructure machine %s: its spec says how the data reaches the instance", what)), nil
	}
	if err != nil {
		return configinput.Delivery{}, nil, fmt.Errorf("reading %s: %w", what, err)
	}
	d, err := configinput.DeliveryOf(obj)
	if err != nil {
		return d, &report{reason: cabpiv1.IncompatibleInfrastructureReason, message: err.Error(), requeue: renderErrorRetry, warn: true}, nil
	}
	return d, nil, nil
}
