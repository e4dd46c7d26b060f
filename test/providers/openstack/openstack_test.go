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

// Package openstack proves, with Cluster API Provider OpenStack v0.13.0's own code (imported,
// not copied), what a Nova server receives when cabpi's data Secret (value = Ignition JSON,
// format = "ignition") is handed to CAPO: the server's user_data, base64-encoded, which Flatcar's
// and Fedora CoreOS's Ignition read (decoded) from the config drive or the metadata service. The
// data is cabpi's real output (`cabpi render`); the Secret, Cluster, Machine, OpenStackCluster,
// OpenStackMachine and the OpenStackServer CAPO creates live in a real kube-apiserver (envtest,
// CAPO's and Cluster API's own CRDs); CAPO's two controllers run as they do in CAPO's manager:
//
//   - (*controllers.OpenStackMachineReconciler).Reconcile creates the OpenStackServer, whose
//     spec.userDataRef names the Machine's bootstrap data Secret;
//   - (*controllers.OpenStackServerReconciler).Reconcile reads that Secret (its unexported
//     getUserDataSecretValue, through serverToInstanceSpec and getOrCreateServer) and creates the
//     server with compute.Service.CreateInstance, which hands servers.CreateOpts{UserData: ...}
//     to the compute client.
//
// The one stand-in is the OpenStack API, which cannot be reached: CAPO's own scope factory mock
// (scope.NewMockScopeFactory, the gomock clients of pkg/clients/mock, as CAPO's controller tests
// use them). The test keeps what the mock compute client's CreateServer receives, and turns it
// into the request body with gophercloud's own ToServerCreateMap, as gophercloud does before it
// sends it to Nova: "user_data" there is what Nova checks against its API schema (base64, at most
// 65,535 characters) and hands the server.
//
// CAPO's manager reads objects from controller-runtime's cache, which gives them their kind and
// API version (TypeMeta); the OpenStackMachine controller names its object by them in the
// OpenStackServer's owner reference. The test has no manager and no cache: managerReads gives the
// controllers' reads the same TypeMeta.
//
// What cannot be called, and why:
//   - CAPO's admission webhooks for OpenStackCluster, OpenStackMachine and OpenStackServer are
//     unexported types (pkg/webhooks), reachable only through a manager's webhook server
//     (SetupOpenStackMachineWebhook and the like). The flavors' objects are dry-run applied
//     against CAPO's CRDs, with their validation rules, in test/release/clusterctl instead.
//   - Nova itself: its user_data limit is the schema's maxLength, novaUserDataMaxLength below.
//
// CAPO v0.13.0 and ORC v2.2.0 are unknown to the checksum database; this module's go.sum pins
// them (docs/adr/028-delivery-by-infrastructure-machine.md).
package openstack

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/flavors"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/keypairs"
	"github.com/gophercloud/gophercloud/v2/openstack/compute/v2/servers"
	"github.com/gophercloud/gophercloud/v2/openstack/image/v2/images"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/stretchr/testify/require"
	"go.uber.org/mock/gomock"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrl "sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1alpha1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1alpha1"
	infrav1 "sigs.k8s.io/cluster-api-provider-openstack/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-openstack/controllers"
	"sigs.k8s.io/cluster-api-provider-openstack/pkg/scope"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/providers/providertest"
)

const (
	capoModule = "sigs.k8s.io/cluster-api-provider-openstack"
	capiModule = "sigs.k8s.io/cluster-api"
	// novaUserDataMaxLength is the maxLength of user_data in Nova's API schema for creating a
	// server (nova/api/openstack/compute/schemas/servers.py): base64 text of at most 65,535
	// characters.
	novaUserDataMaxLength = 65535
	// rawLimit is the most data whose base64 encoding fits: 4 characters for every 3 bytes (or
	// part of 3), so 16,383 groups, 49,149 bytes, 65,532 characters. 49,152 bytes (48 KiB) are
	// 65,536 characters, one over.
	rawLimit = novaUserDataMaxLength / 4 * 3

	imageName  = "flatcar-stable"
	imageID    = "00000000-0000-0000-0000-0000000000a1"
	flavorName = "m1.medium"
	flavorID   = "00000000-0000-0000-0000-0000000000f1"
	networkID  = "00000000-0000-0000-0000-0000000000e1"
	portID     = "00000000-0000-0000-0000-0000000000b1"
	serverID   = "00000000-0000-0000-0000-0000000000c1"
)

func capoClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, infrav1.AddToScheme, infrav1alpha1.AddToScheme, clusterv1.AddToScheme} {
		require.NoError(t, add(scheme))
	}
	// CAPO's CRDs for the objects its controllers read and patch, and Cluster API's for the
	// Cluster and Machine they follow (at the Cluster API version CAPO is built with).
	return providertest.KubeClient(t, scheme,
		capoModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_openstackclusters.yaml",
		capoModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_openstackmachines.yaml",
		capoModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_openstackservers.yaml",
		capiModule+":config/crd/bases/cluster.x-k8s.io_clusters.yaml",
		capiModule+":config/crd/bases/cluster.x-k8s.io_machines.yaml",
	)
}

// managerReads is the client as CAPO's controllers see it in CAPO's manager: objects read come
// with their kind and API version, as the manager's cache gives them (see the package comment).
type managerReads struct{ client.Client }

func (c managerReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	gvk, err := apiutil.GVKForObject(obj, c.Scheme())
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return nil
}

// novaServer is what CAPO asked the compute client to create.
type novaServer struct {
	// opts is what the mock compute client's CreateServer received.
	opts servers.CreateOptsBuilder
}

// createOpts is the servers.CreateOpts inside what CAPO passed (it wraps them with the key pair).
func (s novaServer) createOpts(t *testing.T) servers.CreateOpts {
	t.Helper()
	ext, ok := s.opts.(keypairs.CreateOptsExt)
	require.True(t, ok, "CAPO passed %T, not keypairs.CreateOptsExt", s.opts)
	opts, ok := ext.CreateOptsBuilder.(servers.CreateOpts)
	require.True(t, ok, "CAPO passed %T inside keypairs.CreateOptsExt, not servers.CreateOpts", ext.CreateOptsBuilder)
	return opts
}

// wireUserData is "user_data" of the request body gophercloud sends Nova for these options.
func (s novaServer) wireUserData(t *testing.T) string {
	t.Helper()
	body, err := s.opts.ToServerCreateMap()
	require.NoError(t, err, "gophercloud's ToServerCreateMap")
	server, ok := body["server"].(map[string]any)
	require.True(t, ok, "the request body has no server")
	userData, ok := server["user_data"].(*string)
	require.True(t, ok, "the request body's server has no user_data (%T)", server["user_data"])
	return *userData
}

// mockOpenStack is CAPO's scope factory mock with the answers one server's creation needs: one
// image and flavor of the names asked, no ports or servers yet. CreateServer keeps what it is
// given and must be called exactly once.
func mockOpenStack(t *testing.T, created *novaServer) *scope.MockScopeFactory {
	t.Helper()
	f := scope.NewMockScopeFactory(gomock.NewController(t), "")
	f.ImageClient.EXPECT().ListImages(gomock.Any()).Return([]images.Image{{ID: imageID, Name: imageName}}, nil).AnyTimes()
	f.ComputeClient.EXPECT().ListFlavors().Return([]flavors.Flavor{{ID: flavorID, Name: flavorName}}, nil).AnyTimes()
	f.NetworkClient.EXPECT().ListPort(gomock.Any()).Return(nil, nil).AnyTimes()
	f.NetworkClient.EXPECT().CreatePort(gomock.Any()).Return(&ports.Port{ID: portID, NetworkID: networkID}, nil).AnyTimes()
	f.ComputeClient.EXPECT().ListServers(gomock.Any()).Return(nil, nil).AnyTimes()
	f.ComputeClient.EXPECT().CreateServer(gomock.Any(), gomock.Any()).DoAndReturn(
		func(opts servers.CreateOptsBuilder, _ servers.SchedulerHintOptsBuilder) (*servers.Server, error) {
			created.opts = opts
			return &servers.Server{ID: serverID, Status: "BUILD"}, nil
		}).Times(1)
	return f
}

// openStackMachine is what one test case builds.
type openStackMachine struct {
	c      client.Client
	ns     string
	secret string
}

// newOpenStackMachine builds a Cluster, a ready OpenStackCluster (its network in the status, as
// CAPO's cluster controller leaves it), a Machine whose data Secret holds value with the given
// format, and its OpenStackMachine, as the flavors of templates/ make them.
func newOpenStackMachine(t *testing.T, value []byte, format string, controlPlane bool) openStackMachine {
	t.Helper()
	ctx := context.Background()
	c := capoClient(t)
	ns := providertest.NewNamespace(t, c)

	secret := providertest.DataSecret(ns, "data", "cabpi", value, format)
	require.NoError(t, c.Create(ctx, secret), "creating the data Secret")

	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cabpi", Namespace: ns},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: clusterv1.ContractVersionedObjectReference{
			APIGroup: infrav1.SchemeGroupVersion.Group, Kind: "OpenStackCluster", Name: "cabpi",
		}},
	}
	require.NoError(t, c.Create(ctx, cluster))
	osc := &infrav1.OpenStackCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cabpi", Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: infrav1.OpenStackClusterSpec{
			IdentityRef:     infrav1.OpenStackIdentityReference{Name: "cabpi-cloud-config", CloudName: "openstack"},
			ExternalNetwork: &infrav1.NetworkParam{ID: ptr.To("00000000-0000-0000-0000-00000000000e")},
		},
	}
	require.NoError(t, c.Create(ctx, osc))
	osc.Status.Ready = true
	osc.Status.Network = &infrav1.NetworkStatusWithSubnets{NetworkStatus: infrav1.NetworkStatus{ID: networkID, Name: "k8s-clusterapi-cluster-cabpi"}}
	require.NoError(t, c.Status().Update(ctx, osc), "the OpenStackCluster's status")

	labels := map[string]string{clusterv1.ClusterNameLabel: cluster.Name}
	if controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: cluster.Name,
			Version:     providertest.KubernetesVersion,
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(secret.Name)},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: infrav1.SchemeGroupVersion.Group, Kind: "OpenStackMachine", Name: "m",
			},
		},
	}
	require.NoError(t, c.Create(ctx, machine))
	osm := &infrav1.OpenStackMachine{
		ObjectMeta: metav1.ObjectMeta{
			Name: "m", Namespace: ns, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: machine.Name, UID: machine.UID,
			}},
		},
		Spec: infrav1.OpenStackMachineSpec{
			Flavor:     ptr.To(flavorName),
			Image:      infrav1.ImageParam{Filter: &infrav1.ImageFilter{Name: ptr.To(imageName)}},
			SSHKeyName: "cabpi",
		},
	}
	require.NoError(t, c.Create(ctx, osm))
	return openStackMachine{c: c, ns: ns, secret: secret.Name}
}

// reconcile runs CAPO's OpenStackMachine controller until it has created the OpenStackServer,
// then CAPO's OpenStackServer controller until it has created the server, and returns what it
// handed the compute client. Each controller's first passes add its finalizer and resolve the
// image, flavor and ports, each written back before anything is created (as in CAPO's manager).
func (m openStackMachine) reconcile(t *testing.T) novaServer {
	t.Helper()
	ctx := context.Background()
	var created novaServer
	factory := mockOpenStack(t, &created)
	key := client.ObjectKey{Namespace: m.ns, Name: "m"}

	machines := &controllers.OpenStackMachineReconciler{Client: managerReads{m.c}, ScopeFactory: factory}
	server := &infrav1alpha1.OpenStackServer{}
	for range 3 {
		_, err := machines.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		require.NoError(t, err, "CAPO's OpenStackMachineReconciler.Reconcile")
		if err := m.c.Get(ctx, key, server); err == nil {
			break
		}
	}
	require.NoError(t, m.c.Get(ctx, key, server), "the OpenStackServer CAPO's OpenStackMachine controller creates")
	require.NotNil(t, server.Spec.UserDataRef, "the OpenStackServer has no userDataRef")
	require.Equal(t, m.secret, server.Spec.UserDataRef.Name, "the OpenStackServer's userDataRef")

	servers := &controllers.OpenStackServerReconciler{Client: managerReads{m.c}, ScopeFactory: factory}
	for range 3 {
		_, err := servers.Reconcile(ctx, ctrl.Request{NamespacedName: key})
		require.NoError(t, err, "CAPO's OpenStackServerReconciler.Reconcile")
		if created.opts != nil {
			break
		}
	}
	require.NotNil(t, created.opts, "CAPO's OpenStackServer controller created no server")
	return created
}

// TestOpenStackMachineUserData: the server CAPO creates for an OpenStackMachine gets cabpi's
// data base64-encoded, once (CAPO encodes it, gophercloud sends it as it is), which decodes to
// cabpi's data byte for byte (CAPO neither compresses nor wraps it). Nova takes at most 65,535
// characters of it: 49,149 bytes of data, the limit cabpi must render against. CAPO checks no
// size: data one byte over is sent whole, Nova refuses the server, and cabpi, rendering against
// the same limit, has warned about it before; data at the limit fits.
func TestOpenStackMachineUserData(t *testing.T) {
	examples := append(providertest.Examples("node-name-openstack.yaml"),
		providertest.Example{File: "at-the-limit", Role: "worker", Bytes: rawLimit},
		providertest.OverLimit(rawLimit))
	for _, ex := range examples {
		t.Run(ex.Name(), func(t *testing.T) {
			out := providertest.Render(t, ex, "openstack")
			created := newOpenStackMachine(t, out.Data, "ignition", ex.ControlPlane).reconcile(t)

			// What the compute client receives: servers.CreateOpts.UserData, cabpi's data in base64.
			handed := created.createOpts(t).UserData
			providertest.RequireBase64Of(t, out.Data, string(handed), "servers.CreateOpts.UserData")

			// What gophercloud sends Nova: the same text (it is base64 already, so not encoded again).
			wire := created.wireUserData(t)
			require.Equal(t, base64.StdEncoding.EncodedLen(len(out.Data)), len(wire), "user_data is cabpi's data base64-encoded once")
			providertest.RequireBase64Of(t, out.Data, wire, "the request's user_data")

			overNova := len(wire) > novaUserDataMaxLength
			require.Equal(t, len(out.Data) > rawLimit, overNova,
				"%d bytes are %d characters of user_data (Nova's limit %d)", len(out.Data), len(wire), novaUserDataMaxLength)
			providertest.RequireLimitReported(t, out, len(out.Data), rawLimit)
		})
	}
}

// TestOpenStackIgnoresFormat: CAPO does not read the Secret's format key: the server gets the
// same user_data whether it says ignition, cloud-config or nothing. (Ignition tells Ignition from
// cloud-config by the content.)
func TestOpenStackIgnoresFormat(t *testing.T) {
	out := providertest.RenderCabpi(t, "flatcar-kubernetes-sysext.yaml", "worker", "openstack")
	for _, format := range []string{"ignition", "cloud-config", ""} {
		t.Run("format="+format, func(t *testing.T) {
			created := newOpenStackMachine(t, out.Data, format, false).reconcile(t)
			providertest.RequireBase64Of(t, out.Data, created.wireUserData(t), "the request's user_data")
		})
	}
}
