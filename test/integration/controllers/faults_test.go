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
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// A workload cluster that cannot be reached (its kubeconfig points nowhere) is a condition that
// says so, and the config converges once the cluster can be reached again.
func TestUnreachableWorkloadClusterConverges(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{NoInfrastructure: true})
	kubeconfig := &corev1.Secret{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: secret.Name(f.Cluster.Name, secret.Kubeconfig)}, kubeconfig))
	cfg, err := clientcmd.Load(kubeconfig.Data[secret.KubeconfigDataName])
	require.NoError(t, err)
	for _, c := range cfg.Clusters {
		c.Server = "https://127.0.0.1:1" // nothing listens there
	}
	kubeconfig.Data[secret.KubeconfigDataName], err = clientcmd.Write(*cfg)
	require.NoError(t, err)
	require.NoError(t, env.Client.Update(ctx, kubeconfig))
	require.NoError(t, env.MarkInfrastructureProvisioned(ctx, f.Cluster))

	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})
	c := fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.BootstrapTokenFailedReason)
	assert.Contains(t, c.Message, "Workload cluster not reachable")
	_, ok := fx.DataSecret(t, f.Namespace, "w0")
	assert.False(t, ok, "no data without a token")

	_, err = env.CreateWorkloadKubeconfigSecret(ctx, f.Cluster)
	require.NoError(t, err)
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	d, ok := fx.DataSecret(t, f.Namespace, "w0")
	require.True(t, ok)
	assert.NotEmpty(t, d.Annotations[cabpiv1.BootstrapTokenIDAnnotation])
}

// Another writer of the config's status (a policy engine, an operator's tooling) keeps what it
// wrote: the controller patches the conditions it owns and never overwrites the status.
func TestConcurrentStatusWritersArePatchedNotOverwritten(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{NoControlPlaneInit: true})
	f.AddMachine(t, "w0", false, cabpiv1.IgnitionConfigSpec{})
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.WaitingForControlPlaneInitializedReason)

	// The other writer keeps updating its own condition while the controller renders. It
	// writes as a well-behaved writer does, with optimistic locking (a merge patch replaces the
	// whole conditions list, so a stale one would itself overwrite the controller's), and its
	// requests are never cancelled half-way, so "last" is exactly its last stored write.
	var stop atomic.Bool
	var wg sync.WaitGroup
	var last int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load() && i < 200; i++ {
			obj := &cabpiv1.IgnitionConfig{}
			if env.Client.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: "w0"}, obj) != nil {
				continue
			}
			p := client.MergeFromWithOptions(obj.DeepCopy(), client.MergeFromWithOptimisticLock{})
			conditions.Set(obj, metav1.Condition{Type: "example.com/Audited", Status: metav1.ConditionTrue,
				Reason: "Audited", Message: fmt.Sprint(i)})
			if env.Client.Status().Patch(ctx, obj, p) == nil {
				last = i
			}
		}
	}()
	require.NoError(t, env.MarkControlPlaneInitialized(ctx, f.Cluster))
	fx.WaitForCondition(t, f.Namespace, "w0", cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
	stop.Store(true)
	wg.Wait()

	got := conditions.Get(getConfig(t, f.Namespace, "w0"), "example.com/Audited")
	require.NotNil(t, got, "the other writer's condition is kept")
	assert.Equal(t, fmt.Sprint(last), got.Message, "and its last write")
	assert.True(t, conditions.IsTrue(getConfig(t, f.Namespace, "w0"), cabpiv1.DataSecretAvailableCondition))
}
