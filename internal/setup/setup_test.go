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

package setup_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
)

// The manager's cache (the binary's and the test harness's: both are built from ManagerOptions)
// has one configuration for Secrets, cabpi's: it keeps the certificates' data (read through the
// cache) and drops that of data Secrets. A second entry for Secrets (Cluster API's next to ours)
// would be applied or not depending on map order.
func TestManagerCacheOptionsSecrets(t *testing.T) {
	opts, err := setup.ManagerOptions(setup.DefaultOptions())
	require.NoError(t, err)
	var secretEntries int
	for obj, byObject := range opts.Cache.ByObject {
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

// ConfigMaps have one entry too, selecting cluster-labelled ones: the controller's metadata-only
// ConfigMap watch is served by it (the cache picks the entry by kind), so unrelated ConfigMaps
// of the management cluster are never listed.
func TestManagerCacheOptionsConfigMaps(t *testing.T) {
	opts, err := setup.ManagerOptions(setup.DefaultOptions())
	require.NoError(t, err)
	var entries int
	for obj, byObject := range opts.Cache.ByObject {
		if _, ok := obj.(*corev1.ConfigMap); !ok {
			continue
		}
		entries++
		require.NotNil(t, byObject.Label)
		require.True(t, byObject.Label.Matches(labels.Set{clusterv1.ClusterNameLabel: "demo"}))
		require.False(t, byObject.Label.Matches(labels.Set{}), "unlabelled ConfigMaps are not cached")
	}
	require.Equal(t, 1, entries, "ConfigMap cache entries")
}
