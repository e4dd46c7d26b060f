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
	"errors"

	kerrors "k8s.io/apimachinery/pkg/util/errors"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// initialize renders kubeadm init for the first control-plane Machine of a Cluster (actInit).
// Only the holder of the Cluster's init lock (a ConfigMap owned by the Cluster, so it survives
// manager restarts) renders it; the others wait until the control plane is initialized and then
// join. The lock is taken here, not read by gather: taking it is the atomic test (a create), a
// read would race with another manager's take.
func (r *Reconciler) initialize(ctx context.Context, s *scope) outcome {
	if !r.InitLock.Lock(ctx, s.cluster, s.machine) {
		return waitingForInitLock()
	}
	b, err := r.buildInput(ctx, s, ignition.RoleInit, generateCertificates)
	o := r.firstRender(ctx, s, b, err)
	// Whatever kept this Machine from getting init data, let another control-plane Machine try.
	if o.stored == nil && !r.InitLock.Unlock(ctx, s.cluster) {
		o.err = kerrors.NewAggregate([]error{o.err, errUnlock})
	}
	return o
}

// waitingForInitLock: another control-plane Machine renders kubeadm init.
func waitingForInitLock() outcome {
	return waiting(cabpiv1.WaitingForInitLockReason,
		"Another control-plane Machine holds the kubeadm init lock; this one joins once the control plane is initialized", waitRequeue)
}

var errUnlock = errors.New("failed to release the kubeadm init lock")
