package controllers

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	bootstrapkubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/secret"

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// placeholderToken stands in for the join token in a dry render: the token is created in the
// workload cluster only once the config is known to render, so bad input leaves no token behind.
const placeholderToken = "abcdef.0123456789abcdef"

// reconcileJoin renders a worker or control-plane join.
func (r *Reconciler) reconcileJoin(ctx context.Context, s *scope, role ignition.Role) (ctrl.Result, error) {
	in, o, err := r.joinInput(ctx, s, role)
	if err != nil {
		return ctrl.Result{}, err
	}
	if o != nil {
		return o.apply(r, s.config), nil
	}
	res, o, err := r.renderJoin(ctx, s, in)
	if o != nil {
		res = o.apply(r, s.config)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return res, nil
}

// joinInput resolves everything of a join but the token.
func (r *Reconciler) joinInput(ctx context.Context, s *scope, role ignition.Role) (ignition.Input, *outcome, error) {
	in, o, err := r.baseInput(ctx, s, role)
	if err != nil || o != nil {
		return in, o, err
	}

	join := s.config.Spec.JoinConfiguration.DeepCopy()
	if role == ignition.RoleControlPlaneJoin {
		certs := secret.NewControlPlaneJoinCerts(&s.config.Spec.ClusterConfiguration)
		if o, err := r.lookupCertificates(ctx, s, certs, false); err != nil || o != nil {
			return in, o, err
		}
		in.Certificates = configinput.CertificateFiles(certs)
		if join.ControlPlane == nil {
			join.ControlPlane = &bootstrapkubeadmv1.JoinControlPlane{}
		}
	} else {
		join.ControlPlane = nil
	}

	if o, err := r.fillDiscovery(ctx, s, join); err != nil || o != nil {
		return in, o, err
	}
	in.JoinConfiguration = join
	return in, nil, nil
}

// fillDiscovery completes kubeadm's discovery from the Cluster. File discovery is the user's;
// a kubeconfig it describes gets the Cluster's endpoint and CA where it leaves them out, as
// Cluster API's KubeadmConfig does. Otherwise bootstrap-token discovery is pinned to the cluster
// CA, against the Cluster's endpoint.
func (r *Reconciler) fillDiscovery(ctx context.Context, s *scope, join *bootstrapkubeadmv1.JoinConfiguration) (*outcome, error) {
	needsEndpoint, needsCA := configinput.DiscoveryKubeconfigNeeds(join)
	if !join.Discovery.File.IsDefined() {
		needsEndpoint = join.Discovery.BootstrapToken.APIServerEndpoint == ""
		needsCA = len(join.Discovery.BootstrapToken.CACertHashes) == 0
	}
	endpoint := ""
	if needsEndpoint {
		if !s.cluster.Spec.ControlPlaneEndpoint.IsValid() {
			return waitFor(bootstrapv1.WaitingForControlPlaneEndpointReason,
				"Waiting for Cluster spec.controlPlaneEndpoint to be set"), nil
		}
		endpoint = s.cluster.Spec.ControlPlaneEndpoint.String()
	}
	var ca *secret.Certificate
	if needsCA {
		var err error
		if ca, err = r.clusterCA(ctx, s.cluster); err != nil {
			return nil, err
		}
		if ca == nil {
			return waitFor(bootstrapv1.WaitingForClusterCAReason,
				fmt.Sprintf("Waiting for Secret %s to hold the cluster CA certificate", secret.Name(s.cluster.Name, secret.ClusterCA))), nil
		}
	}

	if join.Discovery.File.IsDefined() {
		var caCert []byte
		if ca != nil {
			caCert = ca.KeyPair.Cert
		}
		configinput.DefaultDiscoveryKubeconfig(join, endpoint, caCert)
		return nil, nil
	}
	bt := &join.Discovery.BootstrapToken
	if endpoint != "" {
		bt.APIServerEndpoint = endpoint
	}
	if ca != nil {
		hashes, err := ca.Hashes()
		if err != nil {
			return nil, fmt.Errorf("hashing the CA of Cluster %s: %w", s.cluster.Name, err)
		}
		bt.CACertHashes = hashes
	}
	return nil, nil
}

// usesOurToken is true when cabpi must provide the join token (the user set none).
func usesOurToken(join *bootstrapkubeadmv1.JoinConfiguration) bool {
	return !join.Discovery.File.IsDefined() && join.Discovery.BootstrapToken.Token == ""
}

// renderJoin dry-renders with a placeholder token, creates the real token, renders and stores.
// MachinePool token rotation comes through here too, rewriting the Secret in place, which is why
// it does not touch the conditions: a failure is returned as an outcome (with an error when it is
// to be retried with backoff), and the caller decides what it means for the config's status.
func (r *Reconciler) renderJoin(ctx context.Context, s *scope, in ignition.Input) (ctrl.Result, *outcome, error) {
	join := in.JoinConfiguration
	if !usesOurToken(join) {
		out, err := ignition.Render(in)
		if err != nil {
			return ctrl.Result{}, renderFailed(err), nil
		}
		if err := r.storeDataSecret(ctx, s, out.Data, ""); err != nil {
			return ctrl.Result{}, storeFailed(err), err
		}
		return ctrl.Result{}, nil, nil
	}

	join.Discovery.BootstrapToken.Token = placeholderToken
	if _, err := ignition.Render(in); err != nil {
		return ctrl.Result{}, renderFailed(err), nil
	}

	remote, err := r.ClusterCache.GetClient(ctx, util.ObjectKey(s.cluster))
	if err != nil {
		return ctrl.Result{}, &outcome{reason: bootstrapv1.BootstrapTokenFailedReason, requeue: waitRequeue,
			message: fmt.Sprintf("Workload cluster not reachable to create the join token: %v", err)}, nil
	}
	token, err := createJoinToken(ctx, remote, util.ObjectKey(s.config), r.TokenTTL, nowFunc())
	if err != nil {
		return ctrl.Result{}, &outcome{reason: bootstrapv1.BootstrapTokenFailedReason, message: err.Error()}, err
	}
	join.Discovery.BootstrapToken.Token = token.Value
	out, err := ignition.Render(in)
	if err != nil {
		// Cannot happen after a successful dry render (the renderer is pure); reported all the same.
		return ctrl.Result{}, renderFailed(err), nil
	}
	if err := r.storeDataSecret(ctx, s, out.Data, token.ID); err != nil {
		return ctrl.Result{}, storeFailed(err), err
	}
	ctrl.LoggerFrom(ctx).Info("Rendered bootstrap data", "role", in.Role, "tokenID", token.ID,
		"ignitionVersion", out.SpecVersion, "bytes", out.Size.Bytes, "gzipBytes", out.Size.GzipBytes)
	// Come back to refresh (Machine) or rotate (MachinePool) the token.
	return ctrl.Result{RequeueAfter: r.tokenCheckInterval()}, nil, nil
}
