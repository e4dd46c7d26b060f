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

package leaks_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/leaks"
)

const (
	tokenSecret = "0123456789abcdef"
	keyLine     = "MIIEowIBAAKCAQEAq0uUcnD6Nw6VgkzJrSvgwm8ZbiQbLHc0ExampleKeyLine"
)

// The check finds a planted leak of each kind of secret in the log and in events, says what
// leaked without the secret, and finds nothing in a clean log.
func TestFind(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-abcdef"},
			Type:       bootstrapapi.SecretTypeBootstrapToken,
			Data:       map[string][]byte{bootstrapapi.BootstrapTokenSecretKey: []byte(tokenSecret)},
		},
		&corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1-ca"},
			Type:       clusterv1.ClusterSecretType,
			Data:       map[string][]byte{"tls.key": []byte("-----BEGIN RSA PRIVATE KEY-----\n" + keyLine + "\n-----END RSA PRIVATE KEY-----\n")},
		},
		&eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "e1"},
			Note:       "key: " + keyLine,
		},
	).Build()

	found, looked, err := leaks.Find(t.Context(), c, "all well\n")
	require.NoError(t, err)
	assert.Equal(t, 3, looked, "the token, the key and rendered data")
	assert.Equal(t, []string{"private key of Secret ns/c1-ca appears in an event"}, found)

	log := &leaks.Log{}
	_, err = log.Write([]byte(`msg="rendered" token="abcdef.` + tokenSecret + `" data={"contents":{"source":"data:,x"}}` + "\n"))
	require.NoError(t, err)
	found, _, err = leaks.Find(t.Context(), c, log.String())
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{
		"join token secret of bootstrap-token-abcdef appears in the manager's log",
		"private key of Secret ns/c1-ca appears in an event",
		"rendered data appears in the manager's log",
	}, found)
	for _, f := range found {
		assert.NotContains(t, f, tokenSecret)
		assert.NotContains(t, f, keyLine)
	}
}
