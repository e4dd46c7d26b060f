// Package certmanager plays cert-manager's part in a cluster the real-node suite installs
// providers into with clusterctl. The module proxy serves cert-manager's library module (its
// CRDs under deploy/crds) but none of its commands, so nothing here can run cert-manager itself
// (docs/adr/027-installed-as-users-install-it.md). What is real: the CRDs, installed from that
// module at the version clusterctl would install; the Certificate and Issuer objects the
// providers' components carry; the Secrets and CA bundles the providers' webhooks and
// conversion webhooks read. What is played, by this package, from the test process: the
// issuing of a Certificate (as cert-manager's SelfSigned issuer does: a self-signed certificate
// for the Certificate's DNS names, in a kubernetes.io/tls Secret with its own certificate as
// ca.crt, and the Certificate's Ready condition) and cert-manager's CA injector (the
// cert-manager.io/inject-ca-from annotation on webhook configurations and CRDs copied into
// their caBundle).
package certmanager

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
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

var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

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

// issue makes sure the Certificate's Secret holds a certificate for its DNS names, and reports
// the Certificate Ready; it returns the CA (ca.crt) of the Secret.
func (p *Player) issue(ctx context.Context, cert *unstructured.Unstructured) ([]byte, error) {
	secretName, _, _ := unstructured.NestedString(cert.Object, "spec", "secretName")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	commonName, _, _ := unstructured.NestedString(cert.Object, "spec", "commonName")
	if secretName == "" {
		return nil, fmt.Errorf("Certificate %s/%s has no spec.secretName", cert.GetNamespace(), cert.GetName())
	}
	key := client.ObjectKey{Namespace: cert.GetNamespace(), Name: secretName}
	secret := &corev1.Secret{}
	err := p.client.Get(ctx, key, secret)
	switch {
	case apierrors.IsNotFound(err):
		secret = nil
	case err != nil:
		return nil, err
	}
	if secret != nil && covers(secret.Data[corev1.TLSCertKey], dnsNames) {
		return secret.Data["ca.crt"], p.markReady(ctx, cert, secret.Data[corev1.TLSCertKey])
	}
	certPEM, keyPEM, err := selfSigned(commonName, dnsNames)
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": certPEM}
	annotations := map[string]string{"cert-manager.io/certificate-name": cert.GetName()}
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
		secret.Annotations["cert-manager.io/certificate-name"] = cert.GetName()
		if err := p.client.Update(ctx, secret); err != nil {
			return nil, fmt.Errorf("updating Secret %s: %w", key, err)
		}
	}
	return certPEM, p.markReady(ctx, cert, certPEM)
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

// selfSigned is what cert-manager's SelfSigned issuer makes: a certificate signed by its own
// key, for serving (and as client, as cert-manager's default usages say).
func selfSigned(commonName string, dnsNames []string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, err
	}
	if commonName == "" && len(dnsNames) > 0 {
		commonName = dnsNames[0]
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		DNSNames:     dnsNames,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(90 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}
