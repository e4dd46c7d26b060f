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

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
)

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
	// joinToken: the data gets a join token of ours (render.go); the input carries
	// placeholderToken in its place.
	joinToken bool
	// hash is the input's digest, recorded with the data rendered from it
	// (status.dataInputsHash). It is taken with the placeholder, not the real token: refreshing
	// or replacing the token never changes it (docs/adr/015).
	hash string
	// specHash is the digest of the spec the input was built from less what an in-place update
	// changes (inplace.SpecHash), recorded with the data (status.dataSpecHash).
	specHash string
}

// built is what building a config's input gave: the input, or why there is none.
type built struct {
	input nodeInput
	// notBuilt says why there is no input (waiting for something, or the user's to fix).
	notBuilt *notStored
	// certificates is CertificatesAvailable as the look-up of the cluster certificates found
	// them; nil when the role needs none looked up.
	certificates *metav1.Condition
	// unwatched: a Secret or ConfigMap read lacks the cluster-name label, so the reference
	// watch (references.go) does not see its changes.
	unwatched bool
}

// buildInput gathers what the role needs from the Cluster and builds the renderer's input with
// configinput.Build, the builder the webhook and `cabpi render` use too. It returns the input,
// or why not (what it waits for, or why the input cannot be built), or an error to retry with
// backoff (with what CertificatesAvailable says meanwhile, if the certificates are the cause).
func (r *Reconciler) buildInput(ctx context.Context, s *scope, role ignition.Role, certs certificates) (built, error) {
	var b built
	spec := &s.config.Spec
	needs := configinput.ClusterNeeds(spec, role)
	if b.notBuilt = clusterWait(s, needs); b.notBuilt != nil {
		return b, nil
	}
	version := s.kubernetesVersion()
	net := s.cluster.Spec.ClusterNetwork
	delivery, why, err := r.delivery(ctx, s)
	if why != nil || err != nil {
		b.notBuilt = why
		return b, err
	}
	cluster := configinput.Cluster{Name: s.cluster.Name, ServiceDomain: net.ServiceDomain, Delivery: delivery}
	if len(net.Services.CIDRBlocks) > 0 {
		cluster.ServiceSubnet = net.Services.String()
	}
	if len(net.Pods.CIDRBlocks) > 0 {
		cluster.PodSubnet = net.Pods.String()
	}
	if s.cluster.Spec.ControlPlaneEndpoint.IsValid() {
		cluster.ControlPlaneEndpoint = s.cluster.Spec.ControlPlaneEndpoint.String()
	}
	if needs.CACertificate || needs.CACertHashes {
		ca, err := r.clusterCA(ctx, s)
		if err != nil {
			return b, err
		}
		if b.notBuilt = caStatus(s.cluster.Name, ca); b.notBuilt != nil {
			if b.notBuilt.reason == cabpiv1.InvalidClusterCertificateReason {
				b.certificates = certificatesFalse(b.notBuilt.reason, b.notBuilt.message)
			}
			return b, nil
		}
		cluster.CACertificate = ca.KeyPair.Cert
		if cluster.CACertHashes, err = ca.Hashes(); err != nil {
			return b, fmt.Errorf("hashing the CA of Cluster %s: %w", s.cluster.Name, err)
		}
	}
	if wanted := configinput.CertificatesFor(spec, role); wanted != nil {
		// Without a control-plane provider nobody else creates the cluster certificates.
		generate := certs == generateCertificates && role == ignition.RoleInit && !s.cluster.Spec.ControlPlaneRef.IsDefined()
		var err error
		b.certificates, b.notBuilt, err = r.lookupCertificates(ctx, s, wanted, generate)
		if b.notBuilt != nil || err != nil {
			return b, err
		}
		cluster.Certificates = wanted
	}
	if needs.JoinToken {
		cluster.JoinToken = placeholderToken
	}

	refs := &apiResolver{c: r.Client, ns: s.config.Namespace}
	in, err := configinput.Build(ctx, spec, role, version, cluster, refs)
	b.unwatched = refs.unwatched
	if b.notBuilt = buildFailure(err); b.notBuilt != nil {
		return b, nil
	}
	if err != nil {
		return b, fmt.Errorf("building the %s input: %w", role, err)
	}
	hash, err := configinput.InputsHash(in)
	if err != nil {
		return b, fmt.Errorf("digesting the %s input: %w", role, err)
	}
	specHash, err := inplace.SpecHash(*spec)
	if err != nil {
		return b, fmt.Errorf("digesting the spec: %w", err)
	}
	b.input = nodeInput{Input: in, joinToken: needs.JoinToken, hash: hash, specHash: specHash}
	return b, nil
}

// waitingFor: waiting for something not watched, looked at again after waitRequeue.
func waitingFor(reason, message string) *notStored {
	return &notStored{reason: reason, message: message, requeue: waitRequeue}
}

// incompatibleInfrastructure: the infrastructure machine cannot deliver this data. It is not
// watched: looked at again as a render error is.
func incompatibleInfrastructure(message string) *notStored {
	return &notStored{reason: cabpiv1.IncompatibleInfrastructureReason, message: message, requeue: renderErrorRetry, userError: true}
}

// clusterWait says what the input waits for on the owner and the Cluster themselves: a
// Kubernetes version, and the control-plane endpoint where the role needs one.
func clusterWait(s *scope, needs configinput.Needs) *notStored {
	switch {
	case s.kubernetesVersion() == "":
		return waitingFor(cabpiv1.WaitingForKubernetesVersionReason,
			"Neither the owner (spec.version) nor the Cluster topology sets a Kubernetes version")
	case needs.Endpoint && !s.cluster.Spec.ControlPlaneEndpoint.IsValid():
		return waitingFor(cabpiv1.WaitingForControlPlaneEndpointReason, "Waiting for Cluster spec.controlPlaneEndpoint to be set")
	}
	return nil
}

// buildFailure is why configinput.Build built no input, when the input is at fault or waits for
// something (a reference, the infrastructure machine); nil for any other error (retried).
func buildFailure(err error) *notStored {
	var missing *configinput.MissingReferenceError
	var undeliverable *configinput.DeliveryError
	var invalid *ignition.Error
	switch {
	case errors.As(err, &missing):
		return &notStored{reason: cabpiv1.ReferenceNotFoundReason, message: missing.Error(), requeue: waitRequeue, userError: true}
	case errors.As(err, &undeliverable):
		return incompatibleInfrastructure(undeliverable.Error())
	case errors.As(err, &invalid):
		return renderFailure(err)
	}
	return nil
}

// clusterCA reads the cluster CA of the <cluster>-ca Secret (no KeyPair while there is none).
func (r *Reconciler) clusterCA(ctx context.Context, s *scope) (*secret.Certificate, error) {
	certs := secret.NewCertificatesForWorker("")
	if err := certs.LookupCached(ctx, r.SecretCachingClient, r.Client, client.ObjectKeyFromObject(s.cluster)); err != nil {
		return nil, fmt.Errorf("looking up the CA of Cluster %s: %w", s.cluster.Name, err)
	}
	return certs.GetByPurpose(secret.ClusterCA), nil
}

// caStatus says why the cluster CA cannot go into the data: waiting while the Secret is missing
// or holds no certificate, InvalidClusterCertificate when what it holds is not a PEM
// certificate; nil when it can.
func caStatus(clusterName string, ca *secret.Certificate) *notStored {
	if ca == nil || ca.KeyPair == nil || len(ca.KeyPair.Cert) == 0 {
		return waitingFor(cabpiv1.WaitingForClusterCAReason,
			fmt.Sprintf("Waiting for Secret %s to hold the cluster CA certificate", secret.Name(clusterName, secret.ClusterCA)))
	}
	return invalidCertificate(clusterName, secret.Certificates{ca})
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
// kinds whose spec decides it (CAPA's: spec.ignition) are read, from the API server (APIReader:
// past any cache, whatever the manager caches, so no informer is started for a provider's kind),
// at the version the API server prefers; for any other kind the kind says it all. A machine not
// there yet, or a kind not installed, is waited for.
func (r *Reconciler) delivery(ctx context.Context, s *scope) (configinput.Delivery, *notStored, error) {
	ref := s.infrastructureRef()
	if !configinput.DeliveryNeedsSpec(ref.Kind) {
		return configinput.Delivery{Kind: ref.Kind}, nil, nil
	}
	what := fmt.Sprintf("%s %s", ref.Kind, ref.Name)
	mapping, err := r.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind})
	if meta.IsNoMatchError(err) {
		return configinput.Delivery{}, waitingForInfrastructureMachine(fmt.Sprintf("%s: its kind is not installed (group %q)", what, ref.APIGroup)), nil
	}
	if err != nil {
		return configinput.Delivery{}, nil, fmt.Errorf("finding the API of %s: %w", what, err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(mapping.GroupVersionKind)
	var reader client.Reader = r.Client
	if r.APIReader != nil {
		reader = r.APIReader
	}
	err = reader.Get(ctx, client.ObjectKey{Namespace: s.config.Namespace, Name: ref.Name}, obj)
	if apierrors.IsNotFound(err) {
		return configinput.Delivery{}, waitingForInfrastructureMachine(what + ": its spec says how the data reaches the instance"), nil
	}
	if err != nil {
		return configinput.Delivery{}, nil, fmt.Errorf("reading %s: %w", what, err)
	}
	d, err := configinput.DeliveryOf(obj)
	if err != nil {
		return d, incompatibleInfrastructure(err.Error()), nil
	}
	return d, nil, nil
}

// waitingForInfrastructureMachine: the owner's infrastructure machine, whose spec says how the
// data reaches the instance, is not there yet (or its kind is not installed).
func waitingForInfrastructureMachine(what string) *notStored {
	return waitingFor(cabpiv1.WaitingForInfrastructureMachineReason, "Waiting for the infrastructure machine "+what)
}
