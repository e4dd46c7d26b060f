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
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// Once converged, events on the Machines and the Cluster make no writes: configs, data Secrets
// and the tokens of joined nodes keep their resourceVersion; the token of a node that has not
// joined changes only by its scheduled refresh (the expiration).
func TestNoChurnAfterConvergence(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	joined := f.AddMachine(t, "joined", false, cabpiv1.IgnitionConfigSpec{})
	waiting := f.AddMachine(t, "waiting", false, cabpiv1.IgnitionConfigSpec{})
	for _, name := range []string{"joined", "waiting"} {
		fx.WaitForCondition(t, f.Namespace, name, cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	}
	joinNode(t, joined)
	// The reconciles the join caused, and a token check that read the Machine before it, have
	// written by the time both configs, their data and the joined node's token have gone a check
	// interval unwritten. (The waiting node's token is refreshed every interval, by design.)
	joinedData, _ := fx.DataSecret(t, f.Namespace, "joined")
	joinedID := joinedData.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
	quiet(t, checkInterval, append(configObjects(f.Namespace, "joined", joinedID), configObjects(f.Namespace, "waiting", "")...)...)

	type snapshot struct {
		configs, dataSecrets map[string]string // name → resourceVersion
		tokens               map[string]corev1.Secret
	}
	take := func() snapshot {
		s := snapshot{configs: map[string]string{}, dataSecrets: map[string]string{}, tokens: map[string]corev1.Secret{}}
		for _, name := range []string{"joined", "waiting"} {
			s.configs[name] = getConfig(t, f.Namespace, name).ResourceVersion
			d, ok := fx.DataSecret(t, f.Namespace, name)
			require.True(t, ok)
			s.dataSecrets[name] = d.ResourceVersion
			maps.Copy(s.tokens, fx.TokensOf(t, f.Namespace, name))
		}
		return s
	}
	before := take()
	require.Len(t, before.tokens, 2)

	// Events: the Machines and the Cluster change (labels), again and again, for longer than a
	// token check interval.
	deadline := time.Now().Add(tokenTTL/3 + 2*time.Second)
	for i := 0; time.Now().Before(deadline); i++ {
		for _, key := range []client.ObjectKey{client.ObjectKeyFromObject(joined), client.ObjectKeyFromObject(waiting)} {
			m := &clusterv1.Machine{}
			require.NoError(t, env.Client.Get(ctx, key, m))
			p := client.MergeFrom(m.DeepCopy())
			m.Labels["example.com/poke"] = fmt.Sprint(i)
			require.NoError(t, env.Client.Patch(ctx, m, p))
		}
		c := &clusterv1.Cluster{}
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(f.Cluster), c))
		p := client.MergeFrom(c.DeepCopy())
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		c.Labels["example.com/poke"] = fmt.Sprint(i)
		require.NoError(t, env.Client.Patch(ctx, c, p))
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(time.Second)

	after := take()
	assert.Equal(t, before.configs, after.configs, "no config writes")
	assert.Equal(t, before.dataSecrets, after.dataSecrets, "no data Secret writes")
	require.Len(t, after.tokens, 2)
	for id, tok := range after.tokens {
		was := before.tokens[id]
		if id == joinedID {
			assert.Equal(t, was.ResourceVersion, tok.ResourceVersion, "the token of a joined node is left alone")
			continue
		}
		// The waiting node's token: only its expiration may have moved (a scheduled refresh).
		delete(was.Data, bootstrapapi.BootstrapTokenExpirationKey)
		got := tok.DeepCopy()
		delete(got.Data, bootstrapapi.BootstrapTokenExpirationKey)
		assert.Equal(t, was.Data, got.Data, "a refresh changes the expiration only")
	}
}
