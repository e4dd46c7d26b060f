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

package certmanager

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSelfSignedServesItsNamesAndIsItsOwnCA(t *testing.T) {
	names := []string{"cabpi-webhook-service.cabpi-system.svc", "cabpi-webhook-service.cabpi-system.svc.cluster.local"}
	certPEM, keyPEM, caPEM, err := makeCertificate(request{dnsNames: names}, nil)
	require.NoError(t, err)
	assert.Equal(t, certPEM, caPEM, "a self-signed certificate is its own CA")
	_, err = tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err, "the key is the certificate's")
	assert.True(t, covers(certPEM, names))
	assert.False(t, covers(certPEM, append(names, "other.svc")), "a name it was not made for")
	assert.False(t, covers([]byte("not a certificate"), names))

	// As the API server verifies a webhook: the certificate itself is the CA bundle.
	c, err := parseCertificate(certPEM)
	require.NoError(t, err)
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(certPEM))
	_, err = c.Verify(x509.VerifyOptions{DNSName: names[0], Roots: roots})
	assert.NoError(t, err)
}

func TestCAFor(t *testing.T) {
	cas := map[string][]byte{"cabpi-system/cabpi-serving-cert": []byte("ca")}
	ca, ok := caFor(map[string]string{injectAnnotation: "cabpi-system/cabpi-serving-cert"}, cas)
	assert.True(t, ok)
	assert.Equal(t, []byte("ca"), ca)
	_, ok = caFor(map[string]string{injectAnnotation: "capi-system/capi-serving-cert"}, cas)
	assert.False(t, ok, "a Certificate not issued yet")
	_, ok = caFor(nil, cas)
	assert.False(t, ok, "no annotation")
}

// As cert-manager's ca issuer signs: a serving certificate and a client certificate from one CA,
// each good for its own use alone, and neither from another CA.
func TestCAIssuedServingAndClientCertificates(t *testing.T) {
	caPEM, caKeyPEM, _, err := makeCertificate(request{commonName: "test-ca", isCA: true}, nil)
	require.NoError(t, err)
	ca, err := signerOf(caPEM, caKeyPEM)
	require.NoError(t, err)
	otherPEM, otherKeyPEM, _, err := makeCertificate(request{commonName: "other-ca", isCA: true}, nil)
	require.NoError(t, err)
	other, err := signerOf(otherPEM, otherKeyPEM)
	require.NoError(t, err)

	name := "cabpi-webhook-service.cabpi-system.svc"
	servingPEM, servingKeyPEM, servingCA, err := makeCertificate(request{dnsNames: []string{name}}, ca)
	require.NoError(t, err)
	assert.Equal(t, caPEM, servingCA, "ca.crt is the issuer's CA")
	_, err = tls.X509KeyPair(servingPEM, servingKeyPEM)
	require.NoError(t, err)
	clientPEM, _, _, err := makeCertificate(request{commonName: "capi-controller-manager",
		usages: []string{"digital signature", "key encipherment", "client auth"}}, ca)
	require.NoError(t, err)

	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(caPEM))
	serving, err := parseCertificate(servingPEM)
	require.NoError(t, err)
	_, err = serving.Verify(x509.VerifyOptions{DNSName: name, Roots: roots})
	assert.NoError(t, err, "the serving certificate verifies against the CA")
	clientCert, err := parseCertificate(clientPEM)
	require.NoError(t, err)
	_, err = clientCert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.NoError(t, err, "the client certificate verifies as a TLS server checks a client")
	_, err = clientCert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	assert.Error(t, err, "the client certificate is not for serving")

	otherRoots := x509.NewCertPool()
	require.True(t, otherRoots.AppendCertsFromPEM(otherPEM))
	_, err = clientCert.Verify(x509.VerifyOptions{Roots: otherRoots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	assert.Error(t, err, "another CA does not vouch for it")

	signedByCA := issuer{kind: "ClusterIssuer", name: "ca", signer: ca}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
		issuerNameAnnotation: "ca", issuerKindAnnotation: "ClusterIssuer"}},
		Data: map[string][]byte{corev1.TLSCertKey: servingPEM}}
	assert.True(t, signedByCA.issued(secret))
	assert.False(t, issuer{kind: "ClusterIssuer", name: "ca", signer: other}.issued(secret), "signed by another CA than the issuer's now")
	assert.False(t, issuer{kind: "Issuer", name: "ca", signer: ca}.issued(secret), "by an issuer of another kind")
	assert.False(t, issuer{kind: "Issuer", name: "selfsigned"}.issued(secret), "by another issuer")

	_, err = signerOf(servingPEM, servingKeyPEM)
	assert.Error(t, err, "a certificate that is not a CA signs nothing")
	_, _, _, err = makeCertificate(request{usages: []string{"timestamping"}}, nil)
	assert.Error(t, err, "a usage the player does not know")
}
