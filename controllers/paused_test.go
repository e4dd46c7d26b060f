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

package controllers

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/paused"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// The NotPaused condition set by hand must be what Cluster API's EnsurePausedCondition sets:
// otherwise that patches it alone and asks for a reconcile of its own, which the hand-set
// condition is there to save. The config is not in the (fake) API server, so any patch fails.
func TestNotPausedConditionNeedsNoPatchOfItsOwn(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, cabpiv1.AddToScheme(scheme))
	require.NoError(t, clusterv1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).Build()
	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c1"}}

	t.Run("new config", func(t *testing.T) {
		config := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w0", Generation: 3}}
		markNewConfigNotPaused(cluster, config)
		require.True(t, conditions.IsFalse(config, clusterv1.PausedCondition))

		isPaused, requeue, err := paused.EnsurePausedCondition(t.Context(), c, cluster, config)
		require.NoError(t, err, "EnsurePausedCondition patched: the hand-set condition differs from its own")
		assert.False(t, isPaused)
		assert.False(t, requeue)
	})

	t.Run("paused config", func(t *testing.T) {
		config := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w1",
			Annotations: map[string]string{clusterv1.PausedAnnotation: ""}}}
		markNewConfigNotPaused(cluster, config)
		assert.Nil(t, conditions.Get(config, clusterv1.PausedCondition), "a paused config is left to EnsurePausedCondition")

		_, requeue, err := paused.EnsurePausedCondition(t.Context(), c, cluster, config)
		assert.Error(t, err, "EnsurePausedCondition must patch the Paused condition itself here")
		assert.False(t, requeue)
	})
}
