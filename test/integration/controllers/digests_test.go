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
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// A Machine at a release cabpi's catalogue does not have (a private build, a newer release), its
// binaries from a mirror: nothing is stored while no digest is known for them, and
// DataSecretAvailable says KubernetesDigestUnknown with the files and what to do. Listing them in
// the ConfigMap spec.kubernetes.digestsFrom names renders the data, each download pinned to the
// listed digest (docs/adr/046).
func TestUnknownDigestsWaitForTheList(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: "mirror",
		Labels: map[string]string{clusterv1.ClusterNameLabel: f.Cluster.Name}},
		Data: map[string]string{"SHA256SUMS": "# nothing yet\n"}}
	require.NoError(t, env.Client.Create(ctx, cm))
	f.AddMachine(t, "w", false, cabpiv1.IgnitionConfigSpec{Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
		Binaries:    &cabpiv1.BinariesSource{BaseURL: "http://mirror.example.internal/release"},
		DigestsFrom: &cabpiv1.DigestsSource{ConfigMap: &cabpiv1.KeyReference{Name: "mirror", Key: "SHA256SUMS"}}}},
		func(m *clusterv1.Machine) { m.Spec.Version = "v1.37.0" })

	c := fx.WaitForCondition(t, f.Namespace, "w", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.KubernetesDigestUnknownReason)
	assert.Contains(t, c.Message, "v1.37.0/bin/linux/amd64/kubeadm, v1.37.0/bin/linux/amd64/kubelet")
	assert.Contains(t, c.Message, "spec.kubernetes.digestsFrom")
	_, stored := fx.DataSecret(t, f.Namespace, "w")
	assert.False(t, stored, "nothing is stored while a download has no digest")

	kubeadm, kubelet := strings.Repeat("1", 64), strings.Repeat("2", 64)
	cm.Data["SHA256SUMS"] = kubeadm + "  v1.37.0/bin/linux/amd64/kubeadm\n" + kubelet + "  v1.37.0/bin/linux/amd64/kubelet\n"
	require.NoError(t, env.Client.Update(ctx, cm))
	data := deliveredData(t, f.Namespace, "w")
	inner, err := ignition.Unwrap(data.value)
	require.NoError(t, err)
	config := string(inner)
	assert.Contains(t, config, `"source":"http://mirror.example.internal/release/v1.37.0/bin/linux/amd64/kubelet","verification":{"hash":"sha256-`+kubelet+`"}`)
	assert.Contains(t, config, `"hash":"sha256-`+kubeadm+`"`)
}
