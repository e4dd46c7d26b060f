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

package inplace_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/runtimesdk"
)

// testCA is a certificate authority of the test's: Cluster API's own CA generation
// (util/secret), and leaf certificates it signs (util/certs).
type testCA struct {
	cert *x509.Certificate
	key  *certs.KeyPair
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	c := &secret.Certificate{Purpose: secret.ClusterCA}
	require.NoError(t, c.Generate())
	cert, err := certs.DecodeCertPEM(c.KeyPair.Cert)
	require.NoError(t, err)
	return testCA{cert: cert, key: c.KeyPair}
}

// sign issues a certificate for name with the usage; an IP name goes in the IP addresses.
func (ca testCA) sign(t *testing.T, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := certs.DecodePrivateKeyPEM(ca.key.Key)
	require.NoError(t, err)
	key, err := certs.NewPrivateKey()
	require.NoError(t, err)
	cfg := certs.Config{CommonName: name, Usages: []x509.ExtKeyUsage{usage}}
	if ip := net.ParseIP(name); ip != nil {
		cfg.AltNames.IPs = []net.IP{ip}
	}
	cert, err := cfg.NewSignedCert(key, ca.cert, caKey)
	require.NoError(t, err)
	return certs.EncodeCertPEM(cert), certs.EncodePrivateKeyPEM(key)
}

// TestUpdateExtensionRequiresAClientCertificate: with --update-extension-client-ca, the
// extension's TLS handshake needs a client certificate signed by that CA (what Cluster API's
// core manager presents with --runtime-extension-client-cert-file): no certificate, or one of
// another CA, gets no answer at all; Cluster API's certificate gets the discovery answer. The
// extension is set up as the binary sets it up (setup.SetupUpdateExtension, from its flags), on
// the suite's Manager, in a certificate directory as cert-manager mounts it (tls.crt, tls.key,
// ca.crt of a CA Issuer).
func TestUpdateExtensionRequiresAClientCertificate(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	dir := t.TempDir()
	serving, servingKey := ca.sign(t, "127.0.0.1", x509.ExtKeyUsageServerAuth)
	for name, data := range map[string][]byte{"tls.crt": serving, "tls.key": servingKey, "ca.crt": certs.EncodeCertPEM(ca.cert)} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o600))
	}
	port, err := runtimesdk.FreeLoopbackPort()
	require.NoError(t, err)
	opts, _, err := setup.ParseCommandLine([]string{
		fmt.Sprintf("--update-extension-port=%d", port), "--webhook-cert-dir=" + dir,
		"--update-extension-client-ca=ca.crt", "--update-image=" + updateImage,
	})
	require.NoError(t, err)
	opts.UpdateExtensionHost = "127.0.0.1"
	require.NoError(t, setup.SetupUpdateExtension(t.Context(), env.Manager, env.ClusterCache, opts))

	roots := x509.NewCertPool()
	roots.AddCert(ca.cert)
	discover := func(clientCert, clientKey []byte) (int, error) {
		cfg := &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
		if clientCert != nil {
			pair, err := tls.X509KeyPair(clientCert, clientKey)
			require.NoError(t, err)
			cfg.Certificates = []tls.Certificate{pair}
		}
		c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		resp, err := c.Post(fmt.Sprintf("https://127.0.0.1:%d/hooks.runtime.cluster.x-k8s.io/v1alpha1/discovery", port), "application/json",
			bytes.NewBufferString(`{"apiVersion":"hooks.runtime.cluster.x-k8s.io/v1alpha1","kind":"DiscoveryRequest"}`))
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	capiCert, capiKey := ca.sign(t, "capi-controller-manager", x509.ExtKeyUsageClientAuth)
	// The server starts with the Manager's other runnables: wait for its first answer.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		code, err := discover(capiCert, capiKey)
		require.NoError(c, err)
		assert.Equal(c, http.StatusOK, code)
	}, timeout, tick, "Cluster API's client certificate gets the discovery answer")

	_, err = discover(nil, nil)
	require.Error(t, err, "no client certificate: no answer")
	assert.Contains(t, err.Error(), "certificate required")
	foreignCert, foreignKey := other.sign(t, "someone", x509.ExtKeyUsageClientAuth)
	_, err = discover(foreignCert, foreignKey)
	require.Error(t, err, "a client certificate of another CA: no answer")
	assert.Contains(t, err.Error(), "unknown certificate authority")
}
