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

package controllers_test

import (
	"context"
	"fmt"
	"strings"
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
	// What the suite waits for at most before a state counts as never reached. make test runs
	// four test binaries at once on two cores (TEST_PACKAGES_AT_ONCE), and CI's flake hunt two
	// such runs: there the oversize config's first render (two 600 KiB files) took over 30 s to
	// reach its condition once, and a minute is what a loaded machine needs.
	eventually = time.Minute
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
// nodeRef. It returns once cabpi's manager cache has the nodeRef too: the controller reads
// Machines from that cache, and a reconcile that reads the Machine without it takes the node for
// not joined (refreshes its token, renders deleted data again). A reconcile that read it before
// may still be under way: quiet waits that out.
func joinNode(t *testing.T, machine *clusterv1.Machine) {
	t.Helper()
	_, err := env.MarkMachineNodeJoined(t.Context(), machine)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := &clusterv1.Machine{}
		assert.NoError(c, env.Client.Get(t.Context(), client.ObjectKeyFromObject(machine), m))
		assert.True(c, m.Status.NodeRef.IsDefined(), "the Machine has a nodeRef")
		cached := &clusterv1.Machine{}
		assert.NoError(c, env.Manager.GetClient().Get(t.Context(), client.ObjectKeyFromObject(machine), cached))
		assert.True(c, cached.Status.NodeRef.IsDefined(), "cabpi's manager cache has the Machine's nodeRef")
	}, eventually, tick)
}

// checkInterval is how often the controller looks at the join token of delivered data (every
// TTL/3), with a margin for a reconcile under way when the interval ends. Within it, the token
// of a node that has not joined is refreshed (less than 5/6 of the TTL is left by then).
const checkInterval = tokenTTL/3 + 2*time.Second

// quiet waits until none of objs has been written for period (their resourceVersions stay the
// same that long); objs give the objects' types, namespaces and names, and are not changed. A
// reconcile that read the world before the test changed it (a join, an annotation) and writes
// after shows up as a write, which starts the period again. With a period of checkInterval the
// controller's periodic token check has also looked at the objects in it: a token it would
// refresh is not quiet.
func quiet(t *testing.T, period time.Duration, objs ...client.Object) {
	t.Helper()
	last, since := "", time.Now()
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		versions := make([]string, 0, len(objs))
		for _, o := range objs {
			got := o.DeepCopyObject().(client.Object)
			if !assert.NoError(c, env.Client.Get(t.Context(), client.ObjectKeyFromObject(o), got)) {
				return
			}
			versions = append(versions, fmt.Sprintf("%T %s %s", o, client.ObjectKeyFromObject(o), got.GetResourceVersion()))
		}
		if now := strings.Join(versions, ", "); now != last {
			last, since = now, time.Now()
		}
		assert.GreaterOrEqual(c, time.Since(since), period, "written within the last %s: %s", period, last)
	}, period+eventually, tick, "the objects keep being written")
}

// configObjects are the IgnitionConfig ns/name, its data Secret and, when tokenID is not "",
// its join token Secret: what a reconcile of the config writes (for quiet).
func configObjects(ns, name, tokenID string) []client.Object {
	objs := []client.Object{
		&cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
	}
	if tokenID != "" {
		objs = append(objs, tokenObject(tokenID))
	}
	return objs
}

// tokenObject is the join token Secret of tokenID (for quiet).
func tokenObject(tokenID string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + tokenID}}
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
