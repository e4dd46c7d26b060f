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
	"context"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// join renders a worker or control-plane join with the config's next join token and stores it
// (actControlPlaneJoin, actWorkerJoin): a first render, or a Machine's data rendered again
// before provisioning after its token was lost.
func (r *Reconciler) join(ctx context.Context, s *scope, role ignition.Role) outcome {
	r.releaseInitLock(ctx, s.cluster)
	b, err := r.buildInput(ctx, s, role, lookUpCertificates)
	return r.firstRender(ctx, s, b, err)
}

// releaseInitLock drops the Cluster's init lock, if any, once its control plane is up. A lock
// is taken only while the control plane is not initialized, so once it is found gone this
// manager does not look again for that Cluster.
func (r *Reconciler) releaseInitLock(ctx context.Context, cluster *clusterv1.Cluster) {
	if _, done := r.unlocked.Load(cluster.UID); done {
		return
	}
	if r.InitLock.Unlock(ctx, cluster) {
		r.unlocked.Store(cluster.UID, struct{}{})
	}
}

// countTokenMade counts a join token made for stored data (cabpi_join_tokens_total).
func countTokenMade(res stored, rotation bool) {
	if !res.tokenMade {
		return
	}
	if rotation {
		metrics.JoinToken(metrics.TokenRotate)
		return
	}
	metrics.JoinToken(metrics.TokenCreate)
}
