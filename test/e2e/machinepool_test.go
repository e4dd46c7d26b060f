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

package e2e_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
)

// poolTokens are the join tokens cabpi made for a config in the workload cluster, oldest first.
func poolTokens(t *testing.T, wc kubernetes.Interface, config client.ObjectKey) []string {
	t.Helper()
	list, err := wc.CoreV1().Secrets(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{
		FieldSelector: "type=" + string(bootstrapapi.SecretTypeBootstrapToken)})
	require.NoError(t, err)
	var mine []corev1.Secret
	for _, s := range list.Items {
		if string(s.Data[bootstrapapi.BootstrapTokenDescriptionKey]) == controllers.TokenDescriptionPrefix+config.String() {
			mine = append(mine, s)
		}
	}
	slices.SortFunc(mine, func(a, b corev1.Secret) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
	ids := make([]string, 0, len(mine))
	for _, s := range mine {
		ids = append(ids, string(s.Data[bootstrapapi.BootstrapTokenIDKey]))
	}
	return ids
}

// poolNodesReady waits until the pool's instances are Ready Nodes with the pool's provider IDs.
func poolNodesReady(t *testing.T, wc kubernetes.Interface, pool *infrav1.NspawnMachinePool, replicas int, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		cur := &infrav1.NspawnMachinePool{}
		// The provider writes the spec's provider IDs and the status's instances in two patches:
		// both must have every replica, or a stale status would leave the newest out of the check.
		if mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(pool), cur) != nil ||
			len(cur.Spec.ProviderIDList) != replicas || len(cur.Status.Instances) != replicas {
			return false
		}
		for i, name := range cur.Status.Instances {
			n, err := wc.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
			if err != nil || n.Spec.ProviderID != cur.Spec.ProviderIDList[i] {
				return false
			}
			if _, ready := nodeReady(n); !ready {
				return false
			}
		}
		return true
	}, within, time.Second, "%d replicas of %s are Ready Nodes", replicas, pool.Name)
}

// A MachinePool of each flavor, in a cluster cabpi made (one control-plane Machine, kubeadm
// init): two replicas join from cabpi's pool data; cabpi rotates the pool's join token before it
// expires (the suite's token TTL is two minutes), the old token expires and the workload
// cluster's token cleaner removes it; then a third replica, created from the data as it is now,
// joins: with the rotated token, the only one left.
func TestMachinePool(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f.name), func(t *testing.T) {
			t.Parallel()
			name := "mp-" + string(f.name)
			lc := createLBCluster(t, name)
			cp := lc.controlPlaneMachine(t, f, name+"-cp")
			waitMachines(t, []*clusterv1.Machine{cp}, joinWithin+2*time.Minute)
			wc := lc.workloadClient(t)
			clusterName := lc.cluster.Name
			labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
			config := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
				Spec: workerSpec(f, "pool")}
			pool := &infrav1.NspawnMachinePool{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
				Spec: infrav1.NspawnMachinePoolSpec{Flavor: f.name}}
			mp := &clusterv1.MachinePool{
				ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels},
				Spec: clusterv1.MachinePoolSpec{
					ClusterName: clusterName,
					Replicas:    ptr.To[int32](2),
					Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
						ClusterName: clusterName, Version: kubernetesVersion,
						Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
							APIGroup: cabpiv1.GroupVersion.Group, Kind: "IgnitionConfig", Name: name}},
						InfrastructureRef: clusterv1.ContractVersionedObjectReference{
							APIGroup: infrav1.GroupVersion.Group, Kind: "NspawnMachinePool", Name: name},
					}},
				},
			}
			create(t, config, pool, mp)
			t.Cleanup(func() { deleteAndWait(t, mp, 3*time.Minute) })
			poolNodesReady(t, wc, pool, 2, joinWithin)

			first := poolTokens(t, wc, client.ObjectKeyFromObject(config))
			require.Len(t, first, 1, "one join token for the pool's data")
			require.Eventually(t, func() bool { return len(poolTokens(t, wc, client.ObjectKeyFromObject(config))) == 2 },
				3*time.Minute, time.Second, "cabpi rotates the pool's token before it expires")
			require.Eventually(t, func() bool {
				ids := poolTokens(t, wc, client.ObjectKeyFromObject(config))
				return len(ids) == 1 && ids[0] != first[0]
			}, 4*time.Minute, time.Second, "the first token %s expired and is gone from the workload cluster", first[0])

			before := &clusterv1.MachinePool{}
			require.NoError(t, mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(mp), before))
			scaled := before.DeepCopy()
			scaled.Spec.Replicas = ptr.To[int32](3)
			require.NoError(t, mgmt.Client.Patch(t.Context(), scaled, client.MergeFrom(before)))
			poolNodesReady(t, wc, pool, 3, joinWithin)
			// poolNodesReady checked each Node's provider ID against the pool's.
			_, err := wc.CoreV1().Nodes().Get(t.Context(), fmt.Sprintf("%s-2", name), metav1.GetOptions{})
			require.NoError(t, err, "the third replica joined with the rotated token, the only one left")
		})
	}
}
