package certmanager

import (
	"crypto/tls"
	"crypto/x509"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelfSignedServesItsNamesAndIsItsOwnCA(t *testing.T) {
	names := []string{"cabpi-webhook-service.cabpi-system.svc", "cabpi-webhook-service.cabpi-system.svc.cluster.local"}
	certPEM, keyPEM, err := selfSigned("", names)
	require.NoError(t, err)
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
