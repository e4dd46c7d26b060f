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

package testenv

// The Secrets of a Cluster that its control plane provider would write: the workload kubeconfig
// and the certificates, each owned by the Cluster.

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/secret"
)

// CreateWorkloadKubeconfigSecret writes the "<cluster>-kubeconfig" Secret (key "value", type
// cluster.x-k8s.io/secret, cluster-name label) pointing at the envtest API server, so the envtest
// server doubles as the workload cluster. It overwrites an existing Secret (CAPI's Cluster
// controller, if running, generates one from the "<cluster>-ca" Secret that this server rejects).
func (e *Environment) CreateWorkloadKubeconfigSecret(ctx context.Context, cluster *clusterv1.Cluster) (*corev1.Secret, error) {
	data, err := e.Kubeconfig(cluster.Name)
	if err != nil {
		return nil, fmt.Errorf("testenv: writing kubeconfig: %w", err)
	}
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cluster.Namespace,
			Name:            secret.Name(cluster.Name, secret.Kubeconfig),
			Labels:          map[string]string{clusterv1.ClusterNameLabel: cluster.Name},
			OwnerReferences: clusterOwnerRefs(cluster),
		},
		Type: clusterv1.ClusterSecretType,
		Data: map[string][]byte{secret.KubeconfigDataName: data},
	}
	err = e.Client.Create(ctx, s)
	if apierrors.IsAlreadyExists(err) {
		err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
			existing := &corev1.Secret{}
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(s), existing); err != nil {
				return err
			}
			existing.Labels = s.Labels
			existing.Type = s.Type
			existing.Data = s.Data
			if err := e.Client.Update(ctx, existing); err != nil {
				return err
			}
			s = existing
			return nil
		})
	}
	if err != nil {
		return nil, fmt.Errorf("testenv: writing Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return s, nil
}

// CreateClusterCA looks up or generates the "<cluster>-ca" Secret (tls.crt/tls.key, with
// sigs.k8s.io/cluster-api/util/secret, as CABPK does) and returns the CA certificate PEM.
func (e *Environment) CreateClusterCA(ctx context.Context, cluster *clusterv1.Cluster) ([]byte, error) {
	certs := secret.NewCertificatesForInitialControlPlane(&kubeadmv1.ClusterConfiguration{})
	ca := certs.GetByPurpose(secret.ClusterCA)
	if err := (secret.Certificates{ca}).LookupOrGenerate(ctx, e.Client, client.ObjectKeyFromObject(cluster), clusterOwnerRef(cluster)); err != nil {
		return nil, fmt.Errorf("testenv: creating cluster CA: %w", err)
	}
	return ca.KeyPair.Cert, nil
}

// CreateClusterCertificates looks up or generates all certificates of an initial control plane
// (CA, etcd CA, front-proxy CA, service-account key) as "<cluster>-<purpose>" Secrets.
func (e *Environment) CreateClusterCertificates(ctx context.Context, cluster *clusterv1.Cluster) (secret.Certificates, error) {
	certs := secret.NewCertificatesForInitialControlPlane(&kubeadmv1.ClusterConfiguration{})
	if err := certs.LookupOrGenerate(ctx, e.Client, client.ObjectKeyFromObject(cluster), clusterOwnerRef(cluster)); err != nil {
		return nil, fmt.Errorf("testenv: creating cluster certificates: %w", err)
	}
	return certs, nil
}

func clusterOwnerRefs(cluster *clusterv1.Cluster) []metav1.OwnerReference {
	if cluster.UID == "" {
		return nil
	}
	return []metav1.OwnerReference{{
		APIVersion: clusterv1.GroupVersion.String(),
		Kind:       "Cluster",
		Name:       cluster.Name,
		UID:        cluster.UID,
	}}
}

func clusterOwnerRef(cluster *clusterv1.Cluster) metav1.OwnerReference {
	if refs := clusterOwnerRefs(cluster); len(refs) > 0 {
		return refs[0]
	}
	return metav1.OwnerReference{}
}
