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
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// lookupCertificates finds certs; when generate is true the missing ones are created (owned by
// the Cluster, so they outlive the first control-plane Machine). It returns what
// CertificatesAvailable says of them, and why no data can be rendered yet: waiting while one is
// missing, InvalidClusterCertificate when one is not PEM; an error (certificates unusable) is
// retried with backoff.
func (r *Reconciler) lookupCertificates(ctx context.Context, s *scope, certs secret.Certificates, generate bool) (*metav1.Condition, *notStored, error) {
	key := util.ObjectKey(s.cluster)
	var err error
	if generate {
		owner := *metav1.NewControllerRef(s.cluster, clusterv1.GroupVersion.WithKind("Cluster"))
		err = certs.LookupOrGenerateCached(ctx, r.SecretCachingClient, r.Client, key, owner)
	} else {
		err = certs.LookupCached(ctx, r.SecretCachingClient, r.Client, key)
	}
	return certificatesStatus(s.cluster.Name, certs, err)
}

// certificatesStatus is what CertificatesAvailable says of certs as looked up (lookupErr), and
// why no data can be rendered with them yet: waiting while one is missing,
// InvalidClusterCertificate when one is not PEM, an error when they cannot be read or created.
func certificatesStatus(clusterName string, certs secret.Certificates, lookupErr error) (*metav1.Condition, *notStored, error) {
	err := lookupErr
	if err == nil {
		err = certs.EnsureAllExist()
		if errors.Is(err, secret.ErrMissingCertificate) {
			return certificatesFalse(cabpiv1.CertificatesNotFoundReason,
					"Waiting for the cluster certificates (<cluster>-ca, -etcd, -proxy, -sa Secrets) to be created"),
				waitingFor(cabpiv1.WaitingForClusterCAReason, "Waiting for the cluster certificates"), nil
		}
	}
	if err != nil {
		// Retried with backoff; both conditions say why meanwhile (Ready summarises them).
		err = &certificatesUnusable{err: fmt.Errorf("certificates of Cluster %s: %w", clusterName, err)}
		return certificatesFalse(cabpiv1.CertificatesInternalErrorReason, err.Error()), nil, err
	}
	if why := invalidCertificate(clusterName, certs); why != nil {
		return certificatesFalse(cabpiv1.InvalidClusterCertificateReason, why.message), why, nil
	}
	return certificatesTrue(), nil, nil
}

// certificatesUnusable: the cluster certificates could not be read or created.
type certificatesUnusable struct{ err error }

func (e *certificatesUnusable) Error() string { return "Certificates unusable: " + e.err.Error() }
func (e *certificatesUnusable) Unwrap() error { return e.err }

// invalidCertificate checks that every certificate to be written is PEM x509 (the
// service-account "certificate" is a public key and is left alone): a node given anything else
// would fail at boot while the config said Ready. The message names the Secret, never its data.
func invalidCertificate(clusterName string, certs secret.Certificates) *notStored {
	for _, c := range certs {
		if c.KeyPair == nil || len(c.KeyPair.Cert) == 0 || c.Purpose == secret.ServiceAccount {
			continue
		}
		if _, err := certutil.ParseCertsPEM(c.KeyPair.Cert); err != nil {
			msg := fmt.Sprintf("Secret %s does not hold a PEM certificate in %s (%v): fix or delete it",
				secret.Name(clusterName, c.Purpose), secret.TLSCrtDataName, err)
			return &notStored{reason: cabpiv1.InvalidClusterCertificateReason, message: msg, requeue: renderErrorRetry, userError: true}
		}
	}
	return nil
}
