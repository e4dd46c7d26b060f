package controllers

import (
	"context"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	ctrl "sigs.k8s.io/controller-runtime"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// reconcileInit renders kubeadm init for the first control-plane Machine of a Cluster. Only the
// holder of the Cluster's init lock (a ConfigMap owned by the Cluster, so it survives manager
// restarts) renders it; the others wait until the control plane is initialized and then join.
func (r *Reconciler) reconcileInit(ctx context.Context, s *scope) (_ ctrl.Result, rerr error) {
	if !r.InitLock.Lock(ctx, s.cluster, s.machine) {
		return r.report(s.config, waitFor(cabpiv1.WaitingForInitLockReason,
			"Another control-plane Machine holds the kubeadm init lock; this one joins once the control plane is initialized")), nil
	}
	stored := false
	defer func() {
		// Whatever kept this Machine from getting init data, let another control-plane Machine try.
		if !stored && !r.InitLock.Unlock(ctx, s.cluster) {
			rerr = kerrors.NewAggregate([]error{rerr, errUnlock})
		}
	}()

	in, rep, err := r.buildInput(ctx, s, ignition.RoleInit, generateCertificates, r.resolver(s))
	if rep != nil || err != nil {
		return r.notStored(s.config, rep, err)
	}
	if rep, err := r.renderAndStore(ctx, s, in); rep != nil || err != nil {
		return r.notStored(s.config, rep, err)
	}
	stored = true
	return r.storedResult(in), nil
}

var errUnlock = errorString("failed to release the kubeadm init lock")

type errorString string

func (e errorString) Error() string { return string(e) }
