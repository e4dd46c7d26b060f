package controllers_test

import (
	"context"
	"testing"
	"time"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

const (
	eventually = 30 * time.Second
	tick       = 100 * time.Millisecond
)

func getConfig(t *testing.T, ns, name string) *cabpiv1.IgnitionConfig {
	t.Helper()
	cfg := &cabpiv1.IgnitionConfig{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cfg))
	return cfg
}

func tokenSecret(t *testing.T, id string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, s))
	return s
}

func tokenExpiration(t *testing.T, id string) time.Time {
	t.Helper()
	exp, err := time.Parse(time.RFC3339, string(tokenSecret(t, id).Data[bootstrapapi.BootstrapTokenExpirationKey]))
	require.NoError(t, err)
	return exp
}

// fileIn returns the decoded content of path in rendered Ignition data (which parses), gzipped
// or wrapped as it may be.
func fileIn(t *testing.T, data []byte, path string) string {
	t.Helper()
	_, rpt, err := ignconfig.Parse(data)
	require.NoError(t, err, rpt.String())
	files, err := ignition.ReadFiles(data)
	require.NoError(t, err)
	content, ok := files[path]
	if !ok {
		t.Fatalf("%s is not in the config", path)
	}
	return string(content)
}

// joinNode plays the machine's node joining: the Node exists and CAPI has set the Machine's
// nodeRef.
func joinNode(t *testing.T, machine *clusterv1.Machine) {
	t.Helper()
	_, err := env.MarkMachineNodeJoined(t.Context(), machine)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := &clusterv1.Machine{}
		assert.NoError(c, env.Client.Get(t.Context(), client.ObjectKeyFromObject(machine), m))
		assert.True(c, m.Status.NodeRef.IsDefined())
	}, eventually, tick)
}

// eventsFor are the events regarding the config ns/name with reason.
func eventsFor(c assert.TestingT, ns, name, reason string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	if !assert.NoError(c, env.Client.List(context.Background(), list, client.InNamespace(ns))) {
		return nil
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
