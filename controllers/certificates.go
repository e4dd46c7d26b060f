package controllers

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// clusterCA returns the certificate of the <cluster>-ca Secret; nil when the Secret does not
// exist (yet) or holds no certificate.
func (r *Reconciler) clusterCA(ctx context.Context, cluster *clusterv1.Cluster) (*secret.Certificate, error) {
	certs := secret.NewCertificatesForWorker("")
	if err := certs.Lookup(ctx, r.Client, util.ObjectKey(cluster)); err != nil {
		return nil, fmt.Errorf("looking up the CA of Cluster %s: %w", cluster.Name, err)
	}
	ca := certs.GetByPurpose(secret.ClusterCA)
	if ca.KeyPair == nil || len(ca.KeyPair.Cert) == 0 {
		return nil, nil
	}
	return ca, nil
}

// lookupCertificates finds certs; when generate is true the missing ones are created (owned by
// the Cluster, so they outlive the first control-plane Machine). A missing certificate is a
// waiting outcome, not an error.
func (r *Reconciler) lookupCertificates(ctx context.Context, s *scope, certs secret.Certificates, generate bool) (*outcome, error) {
	key := util.ObjectKey(s.cluster)
	var err error
	if generate {
		owner := *metav1.NewControllerRef(s.cluster, clusterv1.GroupVersion.WithKind("Cluster"))
		err = certs.LookupOrGenerate(ctx, r.Client, key, owner)
	} else {
		err = certs.Lookup(ctx, r.Client, key)
	}
	if err == nil {
		err = certs.EnsureAllExist()
		if errors.Is(err, secret.ErrMissingCertificate) {
			setCertificatesFalse(s.config, bootstrapv1.CertificatesNotFoundReason,
				"Waiting for the cluster certificates (<cluster>-ca, -etcd, -proxy, -sa Secrets) to be created")
			return waitFor(bootstrapv1.WaitingForClusterCAReason, "Waiting for the cluster certificates"), nil
		}
	}
	if err != nil {
		setCertificatesFalse(s.config, bootstrapv1.CertificatesInternalErrorReason, fmt.Sprintf("Certificates unusable: %v", err))
		return nil, fmt.Errorf("certificates of Cluster %s: %w", s.cluster.Name, err)
	}
	setCertificatesAvailable(s.config)
	return nil, nil
}

func setCertificatesAvailable(config *bootstrapv1.IgnitionConfig) {
	conditions.Set(config, metav1.Condition{
		Type: bootstrapv1.CertificatesAvailableCondition, Status: metav1.ConditionTrue, Reason: bootstrapv1.CertificatesAvailableReason,
	})
}

func setCertificatesFalse(config *bootstrapv1.IgnitionConfig, reason, message string) {
	conditions.Set(config, metav1.Condition{
		Type: bootstrapv1.CertificatesAvailableCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message,
	})
}
