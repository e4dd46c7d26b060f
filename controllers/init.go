package controllers

import (
	"context"

	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	bootstrapkubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types/upstream"
	"sigs.k8s.io/cluster-api/util/secret"

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// reconcileInit renders kubeadm init for the first control-plane Machine of a Cluster. Only the
// holder of the Cluster's init lock (a ConfigMap owned by the Cluster, so it survives manager
// restarts) renders it; the others wait until the control plane is initialized and then join.
func (r *Reconciler) reconcileInit(ctx context.Context, s *scope) (_ ctrl.Result, rerr error) {
	if !r.initLock.Lock(ctx, s.cluster, s.machine) {
		return waitFor(bootstrapv1.WaitingForInitLockReason,
			"Another control-plane Machine holds the kubeadm init lock; this one joins once the control plane is initialized").apply(r, s.config), nil
	}
	stored := false
	defer func() {
		// Whatever kept this Machine from getting init data, let another control-plane Machine try.
		if !stored && !r.initLock.Unlock(ctx, s.cluster) {
			rerr = kerrors.NewAggregate([]error{rerr, errUnlock})
		}
	}()

	in, o, err := r.baseInput(ctx, s, ignition.RoleInit)
	if err != nil {
		return ctrl.Result{}, err
	}
	if o != nil {
		return o.apply(r, s.config), nil
	}
	cc := s.config.Spec.ClusterConfiguration.DeepCopy()
	in.ClusterConfiguration = cc
	in.InitConfiguration = s.config.Spec.InitConfiguration.DeepCopy()
	in.ClusterData = r.clusterData(s, cc)

	certs := secret.NewCertificatesForInitialControlPlane(cc)
	// Without a control-plane provider nobody else creates the cluster certificates.
	generate := !s.cluster.Spec.ControlPlaneRef.IsDefined()
	if o, err := r.lookupCertificates(ctx, s, certs, generate); err != nil || o != nil {
		if o != nil {
			return o.apply(r, s.config), nil
		}
		return ctrl.Result{}, err
	}
	in.Certificates = configinput.CertificateFiles(certs)

	out, err := ignition.Render(in)
	if err != nil {
		return renderFailed(err).apply(r, s.config), nil
	}
	if err := r.storeDataSecret(ctx, s, out.Data, ""); err != nil {
		storeFailed(err).apply(r, s.config)
		return ctrl.Result{}, err
	}
	stored = true
	ctrl.LoggerFrom(ctx).Info("Rendered bootstrap data", "role", in.Role,
		"ignitionVersion", out.SpecVersion, "bytes", out.Size.Bytes, "gzipBytes", out.Size.GzipBytes)
	return ctrl.Result{}, nil
}

// clusterData carries into kubeadm's ClusterConfiguration what lives on the Cluster and Machine:
// name, endpoint, networking and the Kubernetes version.
func (r *Reconciler) clusterData(s *scope, cc *bootstrapkubeadmv1.ClusterConfiguration) *upstream.AdditionalData {
	if cc.ControlPlaneEndpoint == "" && s.cluster.Spec.ControlPlaneEndpoint.IsValid() {
		cc.ControlPlaneEndpoint = s.cluster.Spec.ControlPlaneEndpoint.String()
	}
	net := s.cluster.Spec.ClusterNetwork
	data := &upstream.AdditionalData{
		ClusterName:       ptr.To(s.cluster.Name),
		KubernetesVersion: ptr.To(s.kubernetesVersion()),
	}
	if net.ServiceDomain != "" {
		data.DNSDomain = ptr.To(net.ServiceDomain)
	}
	if len(net.Services.CIDRBlocks) > 0 {
		data.ServiceSubnet = ptr.To(net.Services.String())
	}
	if len(net.Pods.CIDRBlocks) > 0 {
		data.PodSubnet = ptr.To(net.Pods.String())
	}
	if t := s.config.Spec.InitConfiguration.Timeouts.ControlPlaneComponentHealthCheckSeconds; t != nil {
		data.ControlPlaneComponentHealthCheckSeconds = t
	}
	return data
}

var errUnlock = errorString("failed to release the kubeadm init lock")

type errorString string

func (e errorString) Error() string { return string(e) }
