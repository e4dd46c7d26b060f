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

// Package certmanager plays cert-manager's part in a cluster the real-node suite installs
// providers into with clusterctl. The module proxy serves cert-manager's library module (its
// CRDs under deploy/crds) but none of its commands, so nothing here can run cert-manager itself
// (docs/adr/027-installed-as-users-install-it.md). What is real: the CRDs, installed from that
// module at the version clusterctl would install; the Certificate and Issuer objects the
// providers' components carry; the Secrets and CA bundles the providers' webhooks and
// conversion webhooks read. What is played, by this package, from the test process: the
// issuing of a Certificate by its Issuer or ClusterIssuer, as cert-manager's two simplest
// issuers do (selfSigned: a certificate signed by its own key, which is also its ca.crt; ca: a
// certificate signed by the CA in the issuer's Secret, which becomes ca.crt), for the
// Certificate's common name, DNS names, usages and isCA, in a kubernetes.io/tls Secret annotated
// with the issuer, and the Certificate's Ready condition; and cert-manager's CA injector (the
// cert-manager.io/inject-ca-from annotation on webhook configurations and CRDs copied into
// their caBundle). A Certificate is issued again when its Secret does not cover its names, was
// issued by another issuer, or is not signed by its CA issuer's current CA.
package certmanager

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Module and Version are where cert-manager's CRDs come from (deploy/crds of the library
// module): the version clusterctl v1.14 installs.
const (
	Module  = "github.com/cert-manager/cert-manager"
	Version = "v1.21.2"
)

// injectAnnotation names the Certificate (namespace/name) whose CA an object trusts.
const injectAnnotation = "cert-manager.io/inject-ca-from"

// What cert-manager writes on a Secret it issued: the Certificate and the issuer that signed it.
const (
	certificateNameAnnotation = "cert-manager.io/certificate-name"
	issuerNameAnnotation      = "cert-manager.io/issuer-name"
	issuerKindAnnotation      = "cert-manager.io/issuer-kind"
)

// ClusterResourceNamespace is where a ClusterIssuer's CA Secret lives: cert-manager's
// --cluster-resource-namespace, by default the namespace cert-manager is installed in.
const ClusterResourceNamespace = "cert-manager"

var (
	certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
	issuerGVK      = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"}
)

// InstallCRDs creates cert-manager's CRDs from the module directory and waits until they are
// served: what clusterctl init checks (it creates an Issuer and a Certificate) then finds
// cert-manager installed.
func InstallCRDs(ctx context.Context, c client.Client, moduleDir string) error {
	files, err := filepath.Glob(filepath.Join(moduleDir, "deploy", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRDs in %s/deploy/crds: %v", moduleDir, err)
	}
	var names []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096).Decode(crd); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		if crd.Name == "" {
			continue // the README
		}
		if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	deadline := time.Now().Add(time.Minute)
	for _, n := range names {
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: n}, crd); err == nil && established(crd) {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CRD %s not established within a minute", n)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}

// Player issues Certificates and injects CA bundles in one cluster until stopped.
type Player struct {
	client client.Client

	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	lastErr error
}

// Start plays cert-manager in the cluster of c, looking every interval.
func Start(ctx context.Context, c client.Client, interval time.Duration) *Player {
	ctx, cancel := context.WithCancel(ctx)
	p := &Player{client: c, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			err := p.Sync(ctx)
			p.mu.Lock()
			p.lastErr = err
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return p
}

// Stop ends the loop and waits for it.
func (p *Player) Stop() {
	p.cancel()
	<-p.done
}

// Err is the last pass's error (nil when it went through): what a test reports when a provider
// waits for a certificate that never comes.
func (p *Player) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// Sync issues what is missing and injects what is stale, once.
func (p *Player) Sync(ctx context.Context) error {
	certs := &unstructured.UnstructuredList{}
	certs.SetGroupVersionKind(certificateGVK.GroupVersion().WithKind("CertificateList"))
	if err := p.client.List(ctx, certs); err != nil {
		return fmt.Errorf("listing Certificates: %w", err)
	}
	var errs []error
	caByCertificate := map[string][]byte{}
	for i := range certs.Items {
		ca, err := p.issue(ctx, &certs.Items[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		caByCertificate[certs.Items[i].GetNamespace()+"/"+certs.Items[i].GetName()] = ca
	}
	errs = append(errs, p.inject(ctx, caByCertificate))
	return errors.Join(errs...)
}

// issue makes sure the Certificate's Secret holds a certificate its issuer signed for what it
// asks, and reports the Certificate Ready; it returns the CA (ca.crt) of the Secret.
func (p *Player) issue(ctx context.Context, cert *unstructured.Unstructured) ([]byte, error) {
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	if secretName == "" {
		return nil, fmt.Errorf("Certificate %s/%s has no spec.secretName", cert.GetNamespace(), cert.GetName())
	}
	req, err := requestOf(cert)
	if err != nil {
		return nil, err
	}
	iss, err := p.issuerOf(ctx, cert)
	if err != nil {
		return nil, err
	}
	key := client.ObjectKey{Namespace: cert.GetNamespace(), Name: secretName}
	secret := &corev1.Secret{}
	err = p.client.Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = nil
	case err != nil:
		return nil, err
	}
	if secret != nil && iss.issued(secret) && covers(secret.Data[corev1.TLSCertKey], req.dnsNames) {
		return secret.Data["ca.crt"], p.markReady(ctx, cert, secret.Data[corev1.TLSCertKey])
	}
	certPEM, keyPEM, caPEM, err := makeCertificate(req, iss.signer)
	if err != nil {
		return nil, fmt.Errorf("issuing Certificate %s/%s: %w", cert.GetNamespace(), cert.GetName(), err)
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": caPEM}
	annotations := map[string]string{certificateNameAnnotation: cert.GetName(), issuerNameAnnotation: iss.name, issuerKindAnnotation: iss.kind}
	if secret == nil {
		secret = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Annotations: annotations},
			Type: corev1.SecretTypeTLS, Data: data}
		if err := p.client.Create(ctx, secret); err != nil {
			return nil, fmt.Errorf("creating Secret %s: %w", key, err)
		}
	} else {
		secret.Data = data
		if secret.Annotations == nil {
			secret.Annotations = map[string]string{}
		}
		maps.Copy(secret.Annotations, annotations)
		if err := p.client.Update(ctx, secret); err != nil {
			return nil, fmt.Errorf("updating Secret %s: %w", key, err)
		}
	}
	return caPEM, p.markReady(ctx, cert, certPEM)
}

// request is what a Certificate asks for.
type request struct {
	commonName string
	dnsNames   []string
	isCA       bool
	usages     []string // cert-manager's names ("server auth", "client auth", ...); none: its defaults
}

func requestOf(cert *unstructured.Unstructured) (request, error) {
	var r request
	var errs []error
	var err error
	r.commonName, _, err = unstructured.NestedString(cert.Object, "spec", "commonName")
	errs = append(errs, err)
	r.dnsNames, _, err = unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	errs = append(errs, err)
	r.isCA, _, err = unstructured.NestedBool(cert.Object, "spec", "isCA")
	errs = append(errs, err)
	r.usages, _, err = unstructured.NestedStringSlice(cert.Object, "spec", "usages")
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return request{}, fmt.Errorf("Certificate %s/%s: %w", cert.GetNamespace(), cert.GetName(), err)
	}
	return r, nil
}

// issuer is a Certificate's Issuer or ClusterIssuer, as far as issuing goes.
type issuer struct {
	kind, name string
	signer     *signer // nil: selfSigned
}

// signer is a CA issuer's CA: its certificate and key.
type signer struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
}

// issued reports whether the Secret was issued by this issuer (and, for a CA issuer, is signed
// by its current CA).
func (i issuer) issued(secret *corev1.Secret) bool {
	if secret.Annotations[issuerNameAnnotation] != i.name || secret.Annotations[issuerKindAnnotation] != i.kind {
		return false
	}
	if i.signer == nil {
		return true
	}
	c, err := parseCertificate(secret.Data[corev1.TLSCertKey])
	return err == nil && c.CheckSignatureFrom(i.signer.cert) == nil
}

// issuerOf reads the Certificate's issuerRef: a selfSigned or a ca Issuer (in the Certificate's
// namespace) or ClusterIssuer (its CA Secret in ClusterResourceNamespace). An issuer that is not
// there yet, or whose CA is not issued yet, is an error: the next pass tries again.
func (p *Player) issuerOf(ctx context.Context, cert *unstructured.Unstructured) (issuer, error) {
	kind, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "kind")
	name, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	if kind == "" {
		kind = issuerGVK.Kind
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(issuerGVK.GroupVersion().WithKind(kind))
	key := client.ObjectKey{Name: name}
	secretNamespace := ClusterResourceNamespace
	switch kind {
	case "Issuer":
		key.Namespace, secretNamespace = cert.GetNamespace(), cert.GetNamespace()
	case "ClusterIssuer":
	default:
		return issuer{}, fmt.Errorf("Certificate %s/%s: issuerRef kind %q is not cert-manager's", cert.GetNamespace(), cert.GetName(), kind)
	}
	if err := p.client.Get(ctx, key, obj); err != nil {
		return issuer{}, fmt.Errorf("Certificate %s/%s: its %s %s: %w", cert.GetNamespace(), cert.GetName(), kind, name, err)
	}
	iss := issuer{kind: kind, name: name}
	if _, selfSigned, _ := unstructured.NestedMap(obj.Object, "spec", "selfSigned"); selfSigned {
		return iss, nil
	}
	caSecret, isCA, _ := unstructured.NestedString(obj.Object, "spec", "ca", "secretName")
	if !isCA {
		return issuer{}, fmt.Errorf("%s %s: only selfSigned and ca issuers are played", kind, name)
	}
	secret := &corev1.Secret{}
	if err := p.client.Get(ctx, client.ObjectKey{Namespace: secretNamespace, Name: caSecret}, secret); err != nil {
		return issuer{}, fmt.Errorf("%s %s: its CA Secret %s/%s: %w", kind, name, secretNamespace, caSecret, err)
	}
	s, err := signerOf(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return issuer{}, fmt.Errorf("%s %s: its CA Secret %s/%s: %w", kind, name, secretNamespace, caSecret, err)
	}
	iss.signer = s
	return iss, nil
}

// signerOf is the CA of a PEM certificate and key, which must be a CA's.
func signerOf(certPEM, keyPEM []byte) (*signer, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok || pair.Leaf == nil {
		return nil, errors.New("not a signing key pair")
	}
	if !pair.Leaf.IsCA {
		return nil, errors.New("the certificate is not a CA")
	}
	return &signer{cert: pair.Leaf, certPEM: certPEM, key: key}, nil
}

// markReady sets the Certificate's Ready condition, as cert-manager reports an issued one.
func (p *Player) markReady(ctx context.Context, cert *unstructured.Unstructured, certPEM []byte) error {
	conds, _, _ := unstructured.NestedSlice(cert.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			return nil
		}
	}
	parsed, err := parseCertificate(certPEM)
	if err != nil {
		return err
	}
	status := map[string]any{
		"conditions": []any{map[string]any{
			"type": "Ready", "status": "True", "reason": "Ready", "message": "Certificate is up to date and has not expired",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "observedGeneration": cert.GetGeneration(),
		}},
		"notBefore": parsed.NotBefore.UTC().Format(time.RFC3339),
		"notAfter":  parsed.NotAfter.UTC().Format(time.RFC3339),
	}
	updated := cert.DeepCopy()
	if err := unstructured.SetNestedField(updated.Object, status, "status"); err != nil {
		return err
	}
	if err := p.client.Status().Update(ctx, updated); err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("reporting Certificate %s/%s ready: %w", cert.GetNamespace(), cert.GetName(), err)
	}
	return nil
}

// inject copies each Certificate's CA into the objects that name it with inject-ca-from: the
// webhooks of webhook configurations and the conversion webhooks of CRDs.
func (p *Player) inject(ctx context.Context, caByCertificate map[string][]byte) error {
	var errs []error
	validating := &admissionv1.ValidatingWebhookConfigurationList{}
	if err := p.client.List(ctx, validating); err != nil {
		return err
	}
	for i := range validating.Items {
		v := &validating.Items[i]
		var bundles []*[]byte
		for j := range v.Webhooks {
			bundles = append(bundles, &v.Webhooks[j].ClientConfig.CABundle)
		}
		errs = append(errs, p.injectInto(ctx, v, caByCertificate, bundles))
	}
	mutating := &admissionv1.MutatingWebhookConfigurationList{}
	if err := p.client.List(ctx, mutating); err != nil {
		return err
	}
	for i := range mutating.Items {
		m := &mutating.Items[i]
		var bundles []*[]byte
		for j := range m.Webhooks {
			bundles = append(bundles, &m.Webhooks[j].ClientConfig.CABundle)
		}
		errs = append(errs, p.injectInto(ctx, m, caByCertificate, bundles))
	}
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := p.client.List(ctx, crds); err != nil {
		return err
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		conv := crd.Spec.Conversion
		if conv == nil || conv.Strategy != apiextensionsv1.WebhookConverter || conv.Webhook == nil || conv.Webhook.ClientConfig == nil {
			continue
		}
		errs = append(errs, p.injectInto(ctx, crd, caByCertificate, []*[]byte{&conv.Webhook.ClientConfig.CABundle}))
	}
	return errors.Join(slices.DeleteFunc(errs, func(e error) bool { return e == nil || apierrors.IsConflict(e) })...)
}

// injectInto sets each of obj's CA bundles to the CA its annotation names (once that
// Certificate is issued), and updates obj when one changed.
func (p *Player) injectInto(ctx context.Context, obj client.Object, caByCertificate map[string][]byte, bundles []*[]byte) error {
	ca, ok := caFor(obj.GetAnnotations(), caByCertificate)
	if !ok {
		return nil
	}
	changed := false
	for _, b := range bundles {
		if !bytes.Equal(*b, ca) {
			*b, changed = ca, true
		}
	}
	if !changed {
		return nil
	}
	return p.client.Update(ctx, obj)
}

// caFor is the CA of the Certificate an object's annotation names, once it is issued.
func caFor(annotations map[string]string, caByCertificate map[string][]byte) ([]byte, bool) {
	from, ok := annotations[injectAnnotation]
	if !ok {
		return nil, false
	}
	ca, ok := caByCertificate[strings.TrimSpace(from)]
	return ca, ok && len(ca) > 0
}

// covers reports whether the PEM certificate is valid now and for every DNS name.
func covers(certPEM []byte, dnsNames []string) bool {
	c, err := parseCertificate(certPEM)
	if err != nil || time.Now().After(c.NotAfter.Add(-time.Hour)) {
		return false
	}
	for _, n := range dnsNames {
		if c.VerifyHostname(n) != nil {
			return false
		}
	}
	return true
}

func parseCertificate(certPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(certPEM)
	if block == nil {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}

// keyUsages and extKeyUsages are cert-manager's usage names that the suites' Certificates use.
var (
	keyUsages = map[string]x509.KeyUsage{
		"digital signature": x509.KeyUsageDigitalSignature,
		"key encipherment":  x509.KeyUsageKeyEncipherment,
		"cert sign":         x509.KeyUsageCertSign,
		"crl sign":          x509.KeyUsageCRLSign,
	}
	extKeyUsages = map[string]x509.ExtKeyUsage{
		"server auth": x509.ExtKeyUsageServerAuth,
		"client auth": x509.ExtKeyUsageClientAuth,
	}
)

// makeCertificate makes what the request asks for, signed by the signer (nil: by its own key, as
// cert-manager's selfSigned issuer does), and returns it, its key and the CA that signed it.
// Without usages it is for serving and as client (cert-manager's defaults, with the extended
// usages a webhook server and its clients check).
func makeCertificate(req request, by *signer) (certPEM, keyPEM, caPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, nil, err
	}
	commonName := req.commonName
	if commonName == "" && len(req.dnsNames) > 0 {
		commonName = req.dnsNames[0]
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		DNSNames:     req.dnsNames,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(90 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	if len(req.usages) > 0 {
		tmpl.KeyUsage, tmpl.ExtKeyUsage = 0, nil
		for _, u := range req.usages {
			if ku, ok := keyUsages[u]; ok {
				tmpl.KeyUsage |= ku
			} else if eku, ok := extKeyUsages[u]; ok {
				tmpl.ExtKeyUsage = append(tmpl.ExtKeyUsage, eku)
			} else {
				return nil, nil, nil, fmt.Errorf("usage %q is not played", u)
			}
		}
	}
	if req.isCA {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
		tmpl.KeyUsage |= x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	}
	parent, signingKey := tmpl, crypto.Signer(key)
	if by != nil {
		parent, signingKey = by.cert, by.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signingKey)
	if err != nil {
		return nil, nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	caPEM = certPEM
	if by != nil {
		caPEM = by.certPEM
	}
	return certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), caPEM, nil
}
