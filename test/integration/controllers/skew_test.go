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
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// The join skew guard against a real API server: a worker a minor ahead of the Cluster's
// control-plane Machine is not rendered and says why, with both versions; once the control-plane
// Machine is at its minor, it renders. A worker two minors behind is refused.
func TestJoinHeldToTheControlPlaneVersion(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	cp := f.AddMachine(t, "cp0", true, cabpiv1.IgnitionConfigSpec{}, func(m *clusterv1.Machine) { m.Spec.Version = "v1.34.4" })
	f.AddMachine(t, "ahead", false, cabpiv1.IgnitionConfigSpec{}, func(m *clusterv1.Machine) { m.Spec.Version = "v1.35.0" })
	f.AddMachine(t, "behind", false, cabpiv1.IgnitionConfigSpec{}, func(m *clusterv1.Machine) { m.Spec.Version = "v1.32.9" })

	cond := fx.WaitForCondition(t, f.Namespace, "ahead", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.WaitingForControlPlaneVersionReason)
	assert.Contains(t, cond.Message, "v1.35.0")
	assert.Contains(t, cond.Message, "v1.34.4")
	_, ok := fx.DataSecret(t, f.Namespace, "ahead")
	assert.False(t, ok, "no data for a worker ahead of the control plane")
	cond = fx.WaitForCondition(t, f.Namespace, "behind", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.KubeadmVersionSkewReason)
	assert.Contains(t, cond.Message, "v1.32.9")

	// The control plane is upgraded (its Machine's version; a provider would replace it).
	cur := &clusterv1.Machine{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(cp), cur))
	upgraded := cur.DeepCopy()
	upgraded.Spec.Version = "v1.35.0"
	require.NoError(t, env.Client.Patch(ctx, upgraded, client.MergeFrom(cur)))
	fx.WaitForCondition(t, f.Namespace, "ahead", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
}
