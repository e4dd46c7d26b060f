package testenv

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The manager's cache has one configuration for Secrets, cabpi's: it keeps the certificates'
// data (read through the cache) and drops that of data Secrets. A second entry for Secrets (CAPI's
// next to ours) would be applied or not depending on map order.
func TestManagerCacheOptionsSecrets(t *testing.T) {
	scheme, err := NewScheme()
	require.NoError(t, err)
	opts := managerCacheOptions(scheme, "cache-options-test")
	var secretEntries int
	for obj, byObject := range opts.ByObject {
		if _, ok := obj.(*corev1.Secret); !ok {
			continue
		}
		secretEntries++
		require.NotNil(t, byObject.Label, "only cluster-labelled Secrets are cached")
		ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-ca"}, Data: map[string][]byte{"tls.crt": []byte("crt")}}
		out, err := byObject.Transform(ca)
		require.NoError(t, err)
		require.Equal(t, []byte("crt"), out.(*corev1.Secret).Data["tls.crt"], "the cached CA keeps its certificate")
		data := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "demo-md-0-abcde"}, Data: map[string][]byte{"value": []byte("{}")}}
		out, err = byObject.Transform(data)
		require.NoError(t, err)
		require.Nil(t, out.(*corev1.Secret).Data, "a data Secret is cached without its data")
	}
	require.Equal(t, 1, secretEntries, "Secret cache entries")
}
