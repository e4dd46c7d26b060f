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
	"encoding/base64"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// On CAPA the limit follows the AWSMachine's spec.ignition (CAPA's CRD, from its module): data
// in S3 (storageType ClusterObjectStore, CAPA's default) has no user-data limit and is stored
// plainly, the same data as UnencryptedUserData is over EC2's 16 KiB; a Fedora CoreOS config
// behind CAPA's default Ignition 2.3 stub is refused before anything is stored, and a config whose
// AWSMachine does not exist yet waits for it.
func TestDeliveryFollowsTheAWSMachine(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	rnd := rand.New(rand.NewPCG(5, 6))
	raw := make([]byte, 24*1024) // random: no compression brings it under 16 KiB
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	large := []cabpiv1.File{{Path: "/opt/blob", Content: base64.StdEncoding.EncodeToString(raw)}}

	addOnAWS := func(name string, spec cabpiv1.IgnitionConfigSpec, ignition map[string]any) {
		t.Helper()
		if ignition != nil || name != "missing" {
			m := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "AWSMachine",
				"metadata": map[string]any{"name": name + "-aws", "namespace": f.Namespace},
				"spec":     map[string]any{"instanceType": "t3.large"},
			}}
			if ignition != nil {
				require.NoError(t, unstructured.SetNestedMap(m.Object, ignition, "spec", "ignition"))
			}
			require.NoError(t, env.Client.Create(context.Background(), m), "CAPA's CRD admits the AWSMachine")
		}
		f.AddMachine(t, name, false, spec, func(m *clusterv1.Machine) {
			m.Spec.InfrastructureRef = clusterv1.ContractVersionedObjectReference{
				APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "AWSMachine", Name: name + "-aws"}
		})
	}
	addOnAWS("s3", cabpiv1.IgnitionConfigSpec{Files: large}, map[string]any{"version": "3.4"})
	addOnAWS("userdata", cabpiv1.IgnitionConfigSpec{Files: large}, map[string]any{"version": "3.4", "storageType": "UnencryptedUserData"})
	addOnAWS("fcos", cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFCOS}, map[string]any{})
	addOnAWS("missing", cabpiv1.IgnitionConfigSpec{}, nil)

	fx.WaitForCondition(t, f.Namespace, "s3", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	s3, ok := fx.DataSecret(t, f.Namespace, "s3")
	require.True(t, ok)
	assert.Greater(t, len(s3.Data["value"]), 16384, "S3 holds the data whole")
	assert.NotContains(t, string(s3.Data["value"]), `"replace"`, "no wrapper where no limit applies")

	c := fx.WaitForCondition(t, f.Namespace, "userdata", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.OverPlatformLimitReason)
	assert.Contains(t, c.Message, "16384-byte user-data limit of platform aws")

	c = fx.WaitForCondition(t, f.Namespace, "fcos", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.IncompatibleInfrastructureReason)
	assert.Contains(t, c.Message, "spec.ignition.version")
	assert.Contains(t, c.Message, `"2.3"`, "CAPA's CRD defaulted the version")
	_, ok = fx.DataSecret(t, f.Namespace, "fcos")
	assert.False(t, ok, "nothing is stored for data the machine could not boot")

	fx.WaitForCondition(t, f.Namespace, "missing", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.WaitingForInfrastructureMachineReason)
}
