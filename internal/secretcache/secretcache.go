// Package secretcache configures the manager's one cache of Secrets. Like Cluster API's own
// managers, only Secrets carrying the cluster-name label are cached (data Secrets and cluster
// certificates), so unrelated Secrets of the management cluster cost no memory; everything else
// is read from the API server. The configuration is CABPK's (bootstrap/kubeadm/setup), which
// cannot be taken from there without its informer naming, which allows one manager per process.
package secretcache

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
)

// ByObject is the cache configuration of Secrets: those with the cluster-name label, with the
// data kept only for Cluster API's purpose Secrets (<cluster>-ca, -etcd, -proxy, -sa,
// -kubeconfig, ...), which are read for their content, as CABPK's. Data Secrets are cached for their
// metadata only (existence, controller, token annotation): 1,000 of them cost a few hundred KiB.
func ByObject() cache.ByObject {
	hasCluster, err := labels.NewRequirement(clusterv1.ClusterNameLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant requirement
	}
	return cache.ByObject{
		Label: labels.NewSelector().Add(*hasCluster),
		Transform: func(in any) (any, error) {
			if s, ok := in.(*corev1.Secret); ok {
				s.SetManagedFields(nil)
				if !secret.HasPurposeSuffix(s.Name) {
					s.Data = nil
				}
			}
			return in, nil
		},
	}
}
