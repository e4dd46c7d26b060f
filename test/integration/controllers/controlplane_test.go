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
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// A whole cluster from IgnitionConfigs alone: three control-plane Machines and two workers. One
// control-plane Machine wins the init lock and renders kubeadm init; the rest wait, and once the
// first node joined they render control-plane and worker joins.
func TestControlPlaneInitAndJoins(t *testing.T) {
	for _, variant := range []cabpiv1.Variant{cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS} {
		t.Run(string(variant), func(t *testing.T) {
			ctx := t.Context()
			f := fx.NewCluster(t, fixtures.BeforeInit())
			spec := cabpiv1.IgnitionConfigSpec{
				Variant: variant,
				ClusterConfiguration: kubeadmv1.ClusterConfiguration{
					APIServer: kubeadmv1.APIServer{CertSANs: []string{"api.example.com"}},
				},
			}
			cps := map[string]*clusterv1.Machine{}
			for _, name := range []string{"cp-0", "cp-1", "cp-2"} {
				cps[name] = f.AddMachine(t, name, true, spec)
			}
			for _, name := range []string{"w-0", "w-1"} {
				f.AddMachine(t, name, false, cabpiv1.IgnitionConfigSpec{Variant: variant})
			}

			// Exactly one control-plane Machine renders init; the others wait for the lock.
			var initName string
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				initName = ""
				waiting := 0
				for name := range cps {
					cfg := &cabpiv1.IgnitionConfig{}
					if !assert.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: name}, cfg)) {
						return
					}
					if ptr.Deref(cfg.Status.Initialization.DataSecretCreated, false) {
						initName = name
					} else if reasonOf(cfg, cabpiv1.DataSecretAvailableCondition) == cabpiv1.WaitingForInitLockReason {
						waiting++
					}
				}
				assert.NotEmpty(c, initName, "one control-plane Machine renders init")
				assert.Equal(c, 2, waiting, "the other two wait for the init lock")
			}, eventually, tick)
			for _, name := range []string{"w-0", "w-1"} {
				fx.WaitForCondition(t, f.Namespace, name, cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.WaitingForControlPlaneInitializedReason)
			}
			fx.WaitForCondition(t, f.Namespace, initName, cabpiv1.CertificatesAvailableCondition, metav1.ConditionTrue, cabpiv1.CertificatesAvailableReason)

			// The cluster certificates were generated (no control-plane provider), owned by the Cluster.
			for _, suffix := range []string{"ca", "etcd", "proxy", "sa"} {
				s := &corev1.Secret{}
				require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: f.Namespace, Name: f.Cluster.Name + "-" + suffix}, s))
				owner := metav1.GetControllerOf(s)
				require.NotNil(t, owner, suffix)
				assert.Equal(t, "Cluster", owner.Kind)
			}

			// The first node joins: Cluster API marks the control plane initialized, the rest render joins.
			_, err := env.MarkMachineNodeJoined(ctx, cps[initName])
			require.NoError(t, err)
			require.NoError(t, env.MarkControlPlaneInitialized(ctx, f.Cluster))
			for _, name := range []string{"cp-0", "cp-1", "cp-2", "w-0", "w-1"} {
				fx.WaitForCondition(t, f.Namespace, name, cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
				fx.WaitForCondition(t, f.Namespace, name, cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
			}

			inits := 0
			for _, name := range []string{"cp-0", "cp-1", "cp-2", "w-0", "w-1"} {
				secret, ok := fx.DataSecret(t, f.Namespace, name)
				require.True(t, ok)
				root := ignitionapply.Apply(t, secret.Data["value"])
				kubeadmYAML := readFile(t, root, "/etc/kubeadm.yml", 0o600)
				script := readFile(t, root, "/etc/kubeadm.sh", 0o700)
				assert.True(t, ignitionapply.UnitEnabled(t, root, "kubeadm.service"))
				assertInOrder(t, script, "kubeadm ", "/run/cluster-api/bootstrap-success.complete")
				// Counted from what was rendered, whatever the Machine: one init per cluster.
				if strings.Contains(kubeadmYAML, "kind: InitConfiguration") {
					inits++
				}
				switch {
				case name == initName:
					assert.Contains(t, kubeadmYAML, "kind: ClusterConfiguration")
					assert.Contains(t, kubeadmYAML, "kind: InitConfiguration")
					assert.Contains(t, kubeadmYAML, "clusterName: "+f.Cluster.Name)
					assert.Contains(t, kubeadmYAML, "api.example.com")
					assert.Contains(t, script, "kubeadm init --config /etc/kubeadm.yml")
					assertCertificates(t, root, true)
				case strings.HasPrefix(name, "cp-"):
					assert.Contains(t, kubeadmYAML, "kind: JoinConfiguration")
					assert.Contains(t, kubeadmYAML, "controlPlane:")
					assert.NotContains(t, kubeadmYAML, "node.cluster.x-k8s.io/uninitialized")
					assert.Contains(t, script, "kubeadm join --config /etc/kubeadm.yml")
					assertCertificates(t, root, true)
				default:
					assert.Contains(t, kubeadmYAML, "kind: JoinConfiguration")
					assert.NotContains(t, kubeadmYAML, "controlPlane:")
					assert.Contains(t, kubeadmYAML, "node.cluster.x-k8s.io/uninitialized")
					assertCertificates(t, root, false)
				}
				if strings.HasPrefix(name, "cp-") {
					fx.WaitForCondition(t, f.Namespace, name, cabpiv1.CertificatesAvailableCondition, metav1.ConditionTrue, cabpiv1.CertificatesAvailableReason)
				}
			}
			assert.Equal(t, 1, inits, "exactly one kubeadm init per cluster")
		})
	}
}

// assertCertificates checks the control-plane certificates under root: keys 0600, certs 0644.
func assertCertificates(t *testing.T, root string, want bool) {
	t.Helper()
	pairs := [][2]string{
		{"/etc/kubernetes/pki/ca.crt", "/etc/kubernetes/pki/ca.key"},
		{"/etc/kubernetes/pki/etcd/ca.crt", "/etc/kubernetes/pki/etcd/ca.key"},
		{"/etc/kubernetes/pki/front-proxy-ca.crt", "/etc/kubernetes/pki/front-proxy-ca.key"},
		{"/etc/kubernetes/pki/sa.pub", "/etc/kubernetes/pki/sa.key"},
	}
	for _, p := range pairs {
		if !want {
			assert.NoFileExists(t, root+p[1], "workers get no cluster keys")
			continue
		}
		cert := readFile(t, root, p[0], 0o644)
		key := readFile(t, root, p[1], 0o600)
		assert.Contains(t, cert, "-----BEGIN ")
		assert.Contains(t, key, "PRIVATE KEY-----")
	}
}

func reasonOf(cfg *cabpiv1.IgnitionConfig, condType string) string {
	for _, c := range cfg.Status.Conditions {
		if c.Type == condType {
			return c.Reason
		}
	}
	return ""
}
