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

package e2e_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/kubeconfig"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/workload"
)

// controlPlaneSkipPhases are the addons kubeadm init leaves out here: their images (kube-proxy,
// CoreDNS) are not in the node image, and the nodes' bridge CNI needs neither.
var controlPlaneSkipPhases = []string{"addon/kube-proxy", "addon/coredns"}

// lbCluster is a cluster whose control plane runs on its own Machines, behind the provider's
// load balancer: cabpi renders kubeadm init for the first and control-plane joins for the rest,
// and generates the cluster's certificates; Cluster API writes the kubeconfig Secret.
type lbCluster struct {
	cluster *clusterv1.Cluster
	infra   *infrav1.NspawnCluster
}

func createLBCluster(t *testing.T, name string) *lbCluster {
	t.Helper()
	c := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.GroupVersion.Group, Kind: "NspawnCluster", Name: name}},
	}
	create(t, c)
	owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: c.Name, UID: c.UID}
	nc := &infrav1.NspawnCluster{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, OwnerReferences: []metav1.OwnerReference{owner}},
		Spec:       infrav1.NspawnClusterSpec{LoadBalancer: true},
	}
	create(t, nc)
	t.Cleanup(func() { deleteAndWait(t, c, 5*time.Minute) })
	return &lbCluster{cluster: c, infra: nc}
}

// controlPlaneMachine is a control-plane Machine of the cluster with its IgnitionConfig and
// NspawnMachine: cabpi's default output for the variant, named from metadata.
func (lc *lbCluster) controlPlaneMachine(t *testing.T, f flavor, name string, mutate ...func(*cabpiv1.IgnitionConfigSpec)) *clusterv1.Machine {
	t.Helper()
	return lc.controlPlaneMachineWith(t, f, name, infrav1.NspawnMachineSpec{Flavor: f.name}, mutate...)
}

// controlPlaneMachineWith is controlPlaneMachine with the NspawnMachine's spec given.
func (lc *lbCluster) controlPlaneMachineWith(t *testing.T, f flavor, name string, infraSpec infrav1.NspawnMachineSpec,
	mutate ...func(*cabpiv1.IgnitionConfigSpec)) *clusterv1.Machine {
	t.Helper()
	labels := map[string]string{clusterv1.ClusterNameLabel: lc.cluster.Name, clusterv1.MachineControlPlaneLabel: ""}
	spec := cabpiv1.IgnitionConfigSpec{
		Variant:           f.variant,
		NodeName:          &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformOpenStack, ProviderID: true},
		InitConfiguration: kubeadmv1.InitConfiguration{SkipPhases: controlPlaneSkipPhases},
	}
	for _, m := range mutate {
		m(&spec)
	}
	config, infra, machine := standaloneMachine(lc.cluster.Name, name, kubernetesVersion, labels, spec, infraSpec)
	create(t, config, infra, machine)
	return machine
}

// workloadClient is a client of the workload cluster from the kubeconfig Secret Cluster API wrote.
func (lc *lbCluster) workloadClient(t *testing.T) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(lc.workloadConfig(t))
	require.NoError(t, err)
	return c
}

// workloadConfig is the client configuration of the workload cluster's kubeconfig Secret.
func (lc *lbCluster) workloadConfig(t *testing.T) *rest.Config {
	t.Helper()
	var data []byte
	require.Eventually(t, func() bool {
		var err error
		data, err = kubeconfig.FromSecret(t.Context(), mgmt.Client, client.ObjectKeyFromObject(lc.cluster))
		return err == nil
	}, time.Minute, time.Second, "the kubeconfig Secret of %s", lc.cluster.Name)
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	require.NoError(t, err)
	cfg.Timeout = 10 * time.Second
	return cfg
}

// answersOnNewConnections lists the Nodes n times, each time on a connection of its own, so
// each request is a new connection the load balancer places: a connection that was open to a
// node when its power was cut fails with it, as behind any TCP load balancer, and proves
// nothing about the endpoint.
func (lc *lbCluster) answersOnNewConnections(t *testing.T, n int) error {
	t.Helper()
	base := lc.workloadConfig(t)
	for i := range n {
		cfg := rest.CopyConfig(base)
		// A dial function of its own keeps client-go from reusing a cached transport (and its
		// open connections).
		cfg.Dial = (&net.Dialer{Timeout: 10 * time.Second}).DialContext
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return err
		}
		if _, err := c.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{}); err != nil {
			return fmt.Errorf("request %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// waitMachines waits until every Machine has joined (Running, nodeRef, NodeHealthy); when they do
// not in time, it logs each one's state and its node's diagnosis (dumpState).
func waitMachines(t *testing.T, machines []*clusterv1.Machine, within time.Duration) {
	t.Helper()
	joined := func() bool {
		for _, m := range machines {
			cur := &clusterv1.Machine{}
			if mgmt.Client.Get(t.Context(), client.ObjectKeyFromObject(m), cur) != nil {
				return false
			}
			if cur.Status.NodeRef.IsDefined() {
				noteNodeRef(cur.Name)
			}
			if !machineJoined(cur) {
				return false
			}
			cur.DeepCopyInto(m)
		}
		return true
	}
	if assert.Eventually(t, joined, within, time.Second, "control-plane Machines joined") {
		return
	}
	current := make([]clusterv1.Machine, 0, len(machines))
	for _, m := range machines {
		cur := &clusterv1.Machine{}
		if mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(m), cur) == nil {
			current = append(current, *cur)
		}
	}
	dumpState(t, mgmt.Client, current)
	t.FailNow()
}

// etcdClient is a client of an etcd whose CA is ca, with a client certificate of that CA.
func etcdClient(t *testing.T, ca *secret.Certificate, endpoints ...string) *clientv3.Client {
	t.Helper()
	certPEM, keyPEM, err := workload.SignCertificate(ca, certs.Config{CommonName: "cabpi-e2e",
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	require.NoError(t, err)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	require.NoError(t, err)
	caCert, err := certs.DecodeCertPEM(ca.KeyPair.Cert)
	require.NoError(t, err)
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	c, err := clientv3.New(clientv3.Config{
		Endpoints: endpoints, DialTimeout: 10 * time.Second,
		TLS: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// etcdMembers lists the etcd cluster's members through the control-plane nodes' client ports
// (any one that answers: an etcd the kubelet is restarting does not), with a client certificate
// signed by the cluster's etcd CA (the <cluster>-etcd Secret cabpi generated).
func (lc *lbCluster) etcdMembers(t *testing.T, machines []*clusterv1.Machine) []string {
	t.Helper()
	ca := secret.NewCertificatesForInitialControlPlane(&kubeadmv1.ClusterConfiguration{}).GetByPurpose(secret.EtcdCA)
	require.NoError(t, secret.Certificates{ca}.Lookup(t.Context(), mgmt.Client, client.ObjectKeyFromObject(lc.cluster)))
	var endpoints []string
	for _, m := range machines {
		endpoints = append(endpoints, "https://"+net.JoinHostPort(instanceOf(t, m).Address.String(), "2379"))
	}
	c := etcdClient(t, ca, endpoints...)
	var names []string
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		resp, err := c.MemberList(ctx)
		if err != nil {
			return false
		}
		names = names[:0]
		for _, m := range resp.Members {
			names = append(names, m.Name)
		}
		return true
	}, time.Minute, time.Second, "the etcd members of %s", lc.cluster.Name)
	slices.Sort(names)
	return names
}

// A control plane whose ClusterConfiguration names an external etcd (one the suite runs on the
// bridge, with the cluster's etcd CA, as a user runs one): cabpi writes the etcd CA and the API
// server's etcd client certificate from the <cluster>-etcd and <cluster>-apiserver-etcd-client
// Secrets the user made; the node comes up with no etcd of its own and the cluster's data is in
// the external etcd.
func TestExternalEtcd(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f.name), func(t *testing.T) {
			t.Parallel()
			lc := createLBCluster(t, "xe-"+string(f.name))
			owner := metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Cluster", Name: lc.cluster.Name, UID: lc.cluster.UID}
			key := client.ObjectKeyFromObject(lc.cluster)
			ca := &secret.Certificate{Purpose: secret.EtcdCA}
			require.NoError(t, ca.Generate())
			clientCert, clientKey, err := workload.SignCertificate(ca, certs.Config{CommonName: "kube-apiserver-etcd-client",
				Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
			require.NoError(t, err)
			apiServerClient := &secret.Certificate{Purpose: secret.APIServerEtcdClient, KeyPair: &certs.KeyPair{Cert: clientCert, Key: clientKey}}
			// The user hands over the etcd CA's certificate, not its key: an external etcd's CA stays
			// with whoever runs the etcd.
			caSecret := ca.AsSecret(key, owner)
			delete(caSecret.Data, secret.TLSKeyDataName)
			create(t, caSecret, apiServerClient.AsSecret(key, owner))

			etcd, err := workload.StartEtcd(t.Context(), workload.EtcdOptions{Dir: t.TempDir(), Address: instances.Network.HostAddr(),
				Bin: os.Getenv("CABPI_ETCD_BIN"), CA: ca})
			require.NoError(t, err)
			t.Cleanup(func() { assert.NoError(t, etcd.Stop()) })

			m := lc.controlPlaneMachine(t, f, lc.cluster.Name+"-cp", func(s *cabpiv1.IgnitionConfigSpec) {
				s.ClusterConfiguration.Etcd.External = kubeadmv1.ExternalEtcd{
					Endpoints: []string{etcd.Endpoint},
					CAFile:    "/etc/kubernetes/pki/etcd/ca.crt",
					CertFile:  "/etc/kubernetes/pki/apiserver-etcd-client.crt",
					KeyFile:   "/etc/kubernetes/pki/apiserver-etcd-client.key",
				}
			})
			waitMachines(t, []*clusterv1.Machine{m}, joinWithin)

			wc := lc.workloadClient(t)
			pods, err := wc.CoreV1().Pods(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{LabelSelector: "component=etcd"})
			require.NoError(t, err)
			assert.Empty(t, pods.Items, "no etcd on the node")
			ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
			defer cancel()
			node, err := etcdClient(t, ca, etcd.Endpoint).Get(ctx, "/registry/minions/"+m.Name)
			require.NoError(t, err)
			assert.EqualValues(t, 1, node.Count, "the Node %s is stored in the external etcd", m.Name)
		})
	}
}

// A workload cluster made by cabpi alone on real nodes, for each flavor:
//  1. three control-plane Machines created at once: cabpi's init lock gives one kubeadm init and
//     two control-plane joins; three etcd members, three API servers behind the provider's load
//     balancer, every Node with its Machine's provider ID and the control-plane taint, and the
//     kubeconfig Cluster API wrote works through the load balancer;
//  2. a MachineDeployment of two workers joins that cluster;
//  5. one control-plane node powered off: the API still answers through the load balancer, and
//     a worker created now joins.
func TestControlPlane(t *testing.T) {
	t.Parallel()
	for _, f := range flavors {
		t.Run(string(f.name), func(t *testing.T) {
			t.Parallel()
			lc := createLBCluster(t, "cp-"+string(f.name))
			var machines []*clusterv1.Machine
			for i := range 3 {
				machines = append(machines, lc.controlPlaneMachine(t, f, lc.cluster.Name+"-cp"+string(rune('a'+i))))
			}
			waitMachines(t, machines, joinWithin+2*time.Minute)
			for _, m := range machines {
				recordTiming(t, f, m)
			}

			wc := lc.workloadClient(t)
			nodeList, err := wc.CoreV1().Nodes().List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err, "the kubeconfig Cluster API wrote reaches the API servers through the load balancer")
			assert.Len(t, nodeList.Items, 3)
			for _, m := range machines {
				node, err := wc.CoreV1().Nodes().Get(t.Context(), m.Name, metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, m.Spec.ProviderID, node.Spec.ProviderID, "Node %s reports its Machine's provider ID", m.Name)
				// The Machine counts as joined once its Node is Ready, which the kubelet reaches
				// while kubeadm join still runs its last phases (etcd, marking the control plane);
				// the taint and the sentinel follow within seconds (a warm CI run saw the check
				// lose that race on a loaded host).
				inst := instanceOf(t, m)
				assert.EventuallyWithT(t, func(c *assert.CollectT) {
					node, err := wc.CoreV1().Nodes().Get(t.Context(), m.Name, metav1.GetOptions{})
					if !assert.NoError(c, err) {
						return
					}
					assert.Contains(c, node.Spec.Taints, corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule})
					assert.True(c, exists(t, inst, "/run/cluster-api/bootstrap-success.complete"), "the sentinel on %s", m.Name)
				}, time.Minute, time.Second, "kubeadm join finished on %s", m.Name)
			}
			// The kubelet reports each static pod as a mirror pod once it reaches the API: a
			// node's may come a little after its Node.
			var want []string
			for _, m := range machines {
				want = append(want, m.Name)
			}
			slices.Sort(want)
			assert.EventuallyWithT(t, func(c *assert.CollectT) {
				pods, err := wc.CoreV1().Pods(metav1.NamespaceSystem).List(t.Context(), metav1.ListOptions{LabelSelector: "component=kube-apiserver"})
				if !assert.NoError(c, err) {
					return
				}
				var on []string
				for _, p := range pods.Items {
					on = append(on, p.Spec.NodeName)
				}
				slices.Sort(on)
				assert.Equal(c, want, on, "the nodes of the kube-apiserver mirror pods")
			}, 2*time.Minute, time.Second, "an API server on each control-plane node")

			nc := &infrav1.NspawnCluster{}
			require.NoError(t, mgmt.Client.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: lc.cluster.Name}, nc))
			assert.Len(t, nc.Status.LoadBalancerBackends, 3, "the load balancer sends to the three nodes")
			members := lc.etcdMembers(t, machines)
			assert.Equal(t, []string{machines[0].Name, machines[1].Name, machines[2].Name}, members, "three etcd members")
			if t.Failed() {
				return
			}

			// 2. Workers join the cluster cabpi made.
			md := lc.cluster.Name + "-workers"
			create(t, ignitionTemplate(f, md, "a"), infraTemplate(f, md))
			deployment := clusterMachineDeployment(lc.cluster.Name, md, 2, md, md)
			create(t, deployment)
			t.Cleanup(func() { deleteAndWait(t, deployment, 5*time.Minute) })
			workers := waitDeployment(t, f, md, 2, nil, joinWithin)
			timings.addCluster(clusterTiming{flavor: string(f.name), cluster: lc.cluster.Name, machines: len(machines) + len(workers),
				seconds: time.Since(lc.cluster.CreationTimestamp.Time).Seconds()})
			for _, w := range workers {
				node, err := wc.CoreV1().Nodes().Get(t.Context(), w.Name, metav1.GetOptions{})
				require.NoError(t, err, "worker %s is a Node of the cluster cabpi made", w.Name)
				assert.Equal(t, w.Spec.ProviderID, node.Spec.ProviderID)
			}

			// 5. One control-plane node's power cut: the endpoint still answers, a new worker joins.
			down := instanceOf(t, machines[1])
			require.NoError(t, down.Kill())
			// Two rounds of the three backends: each new connection the load balancer tries on
			// the powered-off node must go on to a live one.
			require.NoError(t, lc.answersOnNewConnections(t, 6),
				"the API answers through the load balancer with %s powered off", machines[1].Name)
			scale(t, md, 3)
			waitDeployment(t, f, md, 3, nil, joinWithin)
		})
	}
}
