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

package controllers_test

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootcheck"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// A control plane on external etcd gets the etcd CA certificate (no key: the etcd cluster is run
// elsewhere) and the API server's etcd client certificate from the Cluster's Secrets, and its
// Secret boots into kubeadm init.
func TestExternalEtcdBoots(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.BeforeInit())
	etcdCA, etcdClient := generatedCertificate(t), generatedCertificate(t)
	for purpose, data := range map[secret.Purpose]map[string][]byte{
		secret.EtcdCA:              {secret.TLSCrtDataName: etcdCA.Cert},
		secret.APIServerEtcdClient: {secret.TLSCrtDataName: etcdClient.Cert, secret.TLSKeyDataName: etcdClient.Key},
	} {
		require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: secret.Name(f.Cluster.Name, purpose),
				Labels: map[string]string{clusterv1.ClusterNameLabel: f.Cluster.Name}},
			Data: data,
		}))
	}
	external := kubeadmv1.ExternalEtcd{
		Endpoints: []string{"https://etcd-0.example.internal:2379"},
		CAFile:    "/etc/kubernetes/pki/etcd/ca.crt",
		CertFile:  "/etc/kubernetes/pki/apiserver-etcd-client.crt",
		KeyFile:   "/etc/kubernetes/pki/apiserver-etcd-client.key",
	}
	f.AddMachine(t, "cp-0", true, cabpiv1.IgnitionConfigSpec{
		ClusterConfiguration: kubeadmv1.ClusterConfiguration{Etcd: kubeadmv1.Etcd{External: external}},
	})
	fx.WaitForCondition(t, f.Namespace, "cp-0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	data, ok := fx.DataSecret(t, f.Namespace, "cp-0")
	require.True(t, ok)

	root := appliedNode(t, data.Data["value"])
	assert.Equal(t, string(etcdCA.Cert), nodeFile(t, root, external.CAFile))
	assert.Equal(t, string(etcdClient.Key), nodeFile(t, root, external.KeyFile))
	assert.Equal(t, os.FileMode(0o600), nodeFileMode(t, root, external.KeyFile))
	assert.NoFileExists(t, filepath.Join(root, "etc/kubernetes/pki/etcd/ca.key"), "no etcd CA key for external etcd")
	assert.FileExists(t, filepath.Join(root, "etc/kubernetes/pki/ca.key"), "the cluster CA was generated and written")
	rep := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/opt/bin"})
	require.Equal(t, 0, rep.ExitCode, rep.Output)
	require.Len(t, rep.KubeadmCalls, 1)
	assert.Equal(t, "init", rep.KubeadmCalls[0].Args[0])
	assert.Contains(t, rep.KubeadmCalls[0].Config, "https://etcd-0.example.internal:2379")
	assert.True(t, rep.SentinelExists)
}

// appliedNode applies a data Secret's config with the real ignition-apply and checks its
// kubeadm.service with the host's real systemd (valid, enabled, running the bootstrap script with
// bash); the boot itself is the real-node suite's (docs/adr/029-one-way-to-boot-a-node.md).
func appliedNode(t *testing.T, data []byte) string {
	t.Helper()
	root := ignitionapply.Apply(t, data)
	bootcheck.Verify(t, root, "kubeadm.service")
	assert.True(t, bootcheck.Enabled(t, root, "kubeadm.service"))
	assert.Equal(t, []string{"/bin/bash " + bootcheck.ScriptPath}, bootcheck.ReadUnit(t, root, "kubeadm.service").Values("Service", "ExecStart"))
	return root
}

// nodeFile is the content of the file at path on the node whose root is root.
func nodeFile(t *testing.T, root, path string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, path))
	require.NoError(t, err, path)
	return string(data)
}

// nodeFileMode is the permission bits of the file at path on the node whose root is root.
func nodeFileMode(t *testing.T, root, path string) os.FileMode {
	t.Helper()
	fi, err := os.Lstat(filepath.Join(root, path))
	require.NoError(t, err, path)
	return fi.Mode().Perm()
}

// A worker using file discovery with an exec plugin gets the kubeconfig written from the spec,
// with the Cluster's endpoint and CA, and no bootstrap token; it boots into kubeadm join.
func TestFileDiscoveryBoots(t *testing.T) {
	f := fx.NewCluster(t, fixtures.ClusterSetup{})
	f.AddMachine(t, "w-0", false, cabpiv1.IgnitionConfigSpec{
		JoinConfiguration: kubeadmv1.JoinConfiguration{Discovery: kubeadmv1.Discovery{File: kubeadmv1.FileDiscovery{
			KubeConfigPath: "/etc/kubernetes/discovery.conf",
			KubeConfig: kubeadmv1.FileDiscoveryKubeConfig{User: kubeadmv1.KubeConfigUser{
				Exec: kubeadmv1.KubeConfigAuthExec{Command: "/opt/bin/cluster-token", Args: []string{"--cluster", "c1"}},
			}},
		}}},
	})
	fx.WaitForCondition(t, f.Namespace, "w-0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	data, ok := fx.DataSecret(t, f.Namespace, "w-0")
	require.True(t, ok)
	assert.Empty(t, data.Annotations[cabpiv1.BootstrapTokenIDAnnotation], "no bootstrap token for file discovery")
	assert.Empty(t, fx.TokensOf(t, f.Namespace, "w-0"))

	root := appliedNode(t, data.Data["value"])
	// The kubeconfig as Ignition wrote it, before kubeadm reads it.
	discovery := nodeFile(t, root, "/etc/kubernetes/discovery.conf")
	assert.Equal(t, os.FileMode(0o600), nodeFileMode(t, root, "/etc/kubernetes/discovery.conf"))
	rep := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/usr/bin"})
	require.Equal(t, 0, rep.ExitCode, rep.Output)
	require.Len(t, rep.KubeadmCalls, 1)
	assert.Equal(t, "join", rep.KubeadmCalls[0].Args[0])
	assert.Contains(t, rep.KubeadmCalls[0].Config, "kubeConfigPath: /etc/kubernetes/discovery.conf")

	var kubeconfig struct {
		Clusters []struct {
			Cluster struct {
				Server string `json:"server"`
				CA     string `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"clusters"`
		Users []struct {
			User struct {
				Exec struct {
					Command string `json:"command"`
				} `json:"exec"`
			} `json:"user"`
		} `json:"users"`
	}
	require.NoError(t, yaml.Unmarshal([]byte(discovery), &kubeconfig))
	require.Len(t, kubeconfig.Clusters, 1)
	assert.Equal(t, "https://"+f.Cluster.Spec.ControlPlaneEndpoint.String(), kubeconfig.Clusters[0].Cluster.Server)
	ca, err := base64.StdEncoding.DecodeString(kubeconfig.Clusters[0].Cluster.CA)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(ca), "-----BEGIN CERTIFICATE-----"), "the cluster CA")
	require.Len(t, kubeconfig.Users, 1)
	assert.Equal(t, "/opt/bin/cluster-token", kubeconfig.Users[0].User.Exec.Command)
}

// generatedCertificate is a fresh certificate and key (a CA, the way Cluster API generates one).
func generatedCertificate(t *testing.T) *certs.KeyPair {
	t.Helper()
	c := &secret.Certificate{Purpose: secret.ClusterCA}
	require.NoError(t, c.Generate())
	return c.KeyPair
}

// A cluster certificate Secret that holds no PEM certificate is a condition naming the Secret,
// on workers (the CA pins their discovery) and control planes alike, and no data is rendered.
func TestInvalidClusterCertificateGivesCondition(t *testing.T) {
	ctx := t.Context()
	t.Run("worker", func(t *testing.T) {
		f := fx.NewCluster(t, fixtures.ClusterSetup{Certificates: fixtures.NoCertificates})
		require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: secret.Name(f.Cluster.Name, secret.ClusterCA)},
			Data:       map[string][]byte{secret.TLSCrtDataName: []byte("not a certificate"), secret.TLSKeyDataName: []byte("not a key")},
		}))
		f.AddMachine(t, "w-0", false, cabpiv1.IgnitionConfigSpec{})
		c := fx.WaitForCondition(t, f.Namespace, "w-0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.InvalidClusterCertificateReason)
		assert.Contains(t, c.Message, "Secret c1-ca does not hold a PEM certificate in tls.crt")
		assert.NotContains(t, c.Message, "not a key")
		fx.WaitForCondition(t, f.Namespace, "w-0", cabpiv1.ReadyCondition, metav1.ConditionFalse, cabpiv1.NotReadyReason)
		_, ok := fx.DataSecret(t, f.Namespace, "w-0")
		assert.False(t, ok)
		assert.Empty(t, fx.TokensOf(t, f.Namespace, "w-0"), "no join token for data never rendered")
	})
	t.Run("external etcd CA on a control plane", func(t *testing.T) {
		f := fx.NewCluster(t, fixtures.BeforeInit())
		client := generatedCertificate(t)
		for purpose, data := range map[secret.Purpose]map[string][]byte{
			secret.EtcdCA:              {secret.TLSCrtDataName: []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")},
			secret.APIServerEtcdClient: {secret.TLSCrtDataName: client.Cert, secret.TLSKeyDataName: client.Key},
		} {
			require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: secret.Name(f.Cluster.Name, purpose)}, Data: data}))
		}
		f.AddMachine(t, "cp-0", true, cabpiv1.IgnitionConfigSpec{
			ClusterConfiguration: kubeadmv1.ClusterConfiguration{Etcd: kubeadmv1.Etcd{External: kubeadmv1.ExternalEtcd{
				Endpoints: []string{"https://etcd:2379"}, CAFile: "/etc/etcd/ca.crt", CertFile: "/etc/etcd/client.crt", KeyFile: "/etc/etcd/client.key",
			}}},
		})
		c := fx.WaitForCondition(t, f.Namespace, "cp-0", cabpiv1.CertificatesAvailableCondition, metav1.ConditionFalse, cabpiv1.InvalidClusterCertificateReason)
		assert.Contains(t, c.Message, "Secret c1-etcd")
		fx.WaitForCondition(t, f.Namespace, "cp-0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.InvalidClusterCertificateReason)
	})
}
