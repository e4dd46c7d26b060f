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

package testenv

// Waits on Cluster API's ClusterCache, which the Machine controller reads workload clusters through.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
)

// WaitForClusterCacheConnected polls (100ms) until the ClusterCache has a client for cluster, for
// at most timeout. Needs the kubeconfig Secret and infrastructureProvisioned.
func (e *Environment) WaitForClusterCacheConnected(ctx context.Context, cluster *clusterv1.Cluster, timeout time.Duration) error {
	if e.ClusterCache == nil {
		return errors.New("testenv: no ClusterCache (enable Options.ClusterCache or a CAPI controller)")
	}
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, last = e.ClusterCache.GetClient(ctx, client.ObjectKeyFromObject(cluster))
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("testenv: ClusterCache not connected to %s/%s (kubeconfig Secret created? infrastructureProvisioned?): %w (last: %v)",
			cluster.Namespace, cluster.Name, err, last)
	}
	return nil
}
