package controllers

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// lookupCertificates finds certs; when generate is true the missing ones are created (owned by
// the Cluster, so they outlive the first control-plane Machine). A missing certificate is a
// waiting report, a certificate that is not PEM an InvalidClusterCertificate report; neither is
// an error. CertificatesAvailable says which.
func (r *Reconciler) lookupCertificates(ctx context.Context, s *scope, certs secret.Certificates, generate bool) (*report, error) {
	key := util.ObjectKey(s.cluster)
	var err error
	if generate {
		owner := *metav1.NewControllerRef(s.cluster, clusterv1.GroupVersion.WithKind("Cluster"))
		err = certs.LookupOrGenerateCached(ctx, r.SecretCachingClient, r.Client, key, owner)
	} else {
		err = certs.LookupCached(ctx, r.SecretCachingClient, r.Client, key)
	}
	if err == nil {
		err = certs.EnsureAllExist()
		if errors.Is(err, secret.ErrMissingCertificate) {
			setCertificatesFalse(s.config, cabpiv1.CertificatesNotFoundReason,
				"Waiting for the cluster certificates (<cluster>-ca, -etcd, -proxy, -sa Secrets) to be created")
			return waitFor(cabpiv1.WaitingForClusterCAReason, "Waiting for the cluster certificates"), nil
		}
	}
	if err != nil {
		// Retried with backoff; both conditions say why meanwhile (Ready summarises them).
		msg := fmt.Sprintf("Certificates unusable: %v", err)
		setCertificatesFalse(s.config, cabpiv1.CertificatesInternalErrorReason, msg)
		return nil, &conditionError{reason: cabpiv1.DataSecretInternalErrorReason, message: msg,
			err: fmt.Errorf("certificates of Cluster %s: %w", s.cluster.Name, err)}
	}
	if rep := invalidCertificates(s, certs); rep != nil {
		return rep, nil
	}
	setCertificatesAvailable(s.config)
	return nil, nil
}

// invalidCertificates checks that every certificate to be written is PEM x509 (the
// service-account "certificate" is a public key and is left alone): a node given anything else
// would fail at boot while the config said Ready. The message names the Secret, never its data.
func invalidCertificates(s *scope, certs secret.Certificates) *report {
	for _, c := range certs {
		if c.KeyPair == nil || len(c.KeyPair.Cert) == 0 || c.Purpose == secret.ServiceAccount {
			continue
		}
		if _, err := certutil.ParseCertsPEM(c.KeyPair.Cert); err != nil {
			msg := fmt.Sprintf("Secret %s does not hold a PEM certificate in %s (%v): fix or delete it",
				secret.Name(s.cluster.Name, c.Purpose), secret.TLSCrtDataName, err)
			setCertificatesFalse(s.config, cabpiv1.InvalidClusterCertificateReason, msg)
			return &report{reason: cabpiv1.InvalidClusterCertificateReason, message: msg, requeue: renderErrorRetry, warn: true}
		}
	}
	return nil
}

func setCertificatesAvailable(config *cabpiv1.IgnitionConfig) {
	conditions.Set(config, metav1.Condition{
		Type: cabpiv1.CertificatesAvailableCondition, Status: metav1.ConditionTrue, Reason: cabpiv1.CertificatesAvailableReason,
	})
}

func setCertificatesFalse(config *cabpiv1.IgnitionConfig, reason, message string) {
	conditions.Set(config, metav1.Condition{
		Type: cabpiv1.CertificatesAvailableCondition, Status: metav1.ConditionFalse, Reason: reason,
		Message: bounded(message, maxConditionMessage),
	})
}
