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
