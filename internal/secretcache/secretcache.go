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

// Package secretcache configures the manager's caches of Secrets and ConfigMaps. Like Cluster
// API's own managers, only Secrets carrying the cluster-name label are cached (data Secrets,
// cluster certificates, and Secrets a config references), so unrelated Secrets of the management
// cluster cost no memory; everything else is read from the API server. The configuration is
// CABPK's (bootstrap/kubeadm/setup), which cannot be taken from there without its informer
// naming, which allows one manager per process. ConfigMaps with the label are watched as
// metadata only (the API server never sends their data), so that a change to one a config
// references is seen (docs/adr/015).
//
// A cache configured here holds only objects with the cluster-name label: an object without it
// is never seen by a watch, and a read of it misses the cache and goes to the API server.
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
	return cache.ByObject{
		Label: hasClusterName(),
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

// ConfigMapByObject is the cache configuration of ConfigMaps: those with the cluster-name label.
// The controller watches them as metadata only (PartialObjectMetadata, which this configuration
// applies to as well: the cache selects it by kind) for changes to the ConfigMaps configs
// reference; it reads their content from the API server (the manager's client does not use this
// cache).
func ConfigMapByObject() cache.ByObject {
	return cache.ByObject{Label: hasClusterName()}
}

// hasClusterName selects objects carrying the cluster-name label, whatever its value.
func hasClusterName() labels.Selector {
	hasCluster, err := labels.NewRequirement(clusterv1.ClusterNameLabel, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant requirement
	}
	return labels.NewSelector().Add(*hasCluster)
}
