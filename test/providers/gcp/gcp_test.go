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

// Package gcp proves, with Cluster API Provider GCP v1.13.1's own code (imported, not copied),
// what a GCE instance receives when cabpi's data Secret (value = Ignition JSON, format =
// "ignition") is handed to CAPG: instance metadata "user-data", which both Flatcar's and Fedora
// CoreOS's Ignition read on GCE. The data is cabpi's real output (`cabpi render`); the Secret,
// CAPG's GCPCluster and GCPMachine live in a real kube-apiserver (envtest, CAPG's own CRDs);
// CAPG's ClusterScope and MachineScope are built by CAPG's constructors; the instance is created
// by CAPG's instances service, instances.New(scope).Reconcile(ctx). The one stand-in is the GCE
// API, which cannot be reached: the k8s-cloud-provider library's MockGCE (cloud.NewMockGCE), the
// mock CAPG's own tests use, which keeps what is inserted and hands it back JSON round-tripped.
//
// What is called:
//   - scope.NewClusterScope, scope.NewMachineScope, MachineScope.GetBootstrapData and
//     InstanceSpec (through the service), instances.New and (*instances.Service).Reconcile;
//   - CAPG's webhooks' Default and ValidateCreate for the GCPCluster and GCPMachine.
//
// What cannot be called, and why:
//   - ClusterScope.Cloud() builds a GCE client over ClusterScopeParams.GCPServices.Compute (a
//     *compute.Service talking to the live GCE API), with no way to hand it the mock. So the
//     MachineScope's ClusterGetter is CAPG's ClusterScope wrapped (mockCloud below) to answer
//     Cloud() with the mock; every other method is CAPG's. GCPServices.Compute is an empty
//     *compute.Service, as in CAPG's own tests: it is never used, and it keeps NewClusterScope
//     from looking for Google credentials (which would reach the metadata server).
//   - The metadata key is the unexported const instances.metadataKeyUserData: the test asserts
//     "user-data" by what ends up on the instance.
package gcp

import (
	"context"
	"testing"

	"github.com/GoogleCloudPlatform/k8s-cloud-provider/pkg/cloud"
	"github.com/GoogleCloudPlatform/k8s-cloud-provider/pkg/cloud/meta"
	"github.com/stretchr/testify/require"
	"google.golang.org/api/compute/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-gcp/api/v1beta1"
	gcpcloud "sigs.k8s.io/cluster-api-provider-gcp/cloud"
	"sigs.k8s.io/cluster-api-provider-gcp/cloud/scope"
	"sigs.k8s.io/cluster-api-provider-gcp/cloud/services/compute/instances"
	"sigs.k8s.io/cluster-api-provider-gcp/webhooks"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/providers/providertest"
)

const (
	capgModule = "sigs.k8s.io/cluster-api-provider-gcp"
	// userDataKey is the metadata key Flatcar's and Fedora CoreOS's Ignition read on GCE.
	userDataKey = "user-data"
	// metadataValueLimit is GCE's limit on one metadata value: 256 KiB.
	metadataValueLimit = 256 << 10
	project            = "cabpi-project"
	region             = "europe-west4"
	zone               = "europe-west4-a"
)

func capgClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, infrav1.AddToScheme, clusterv1.AddToScheme} {
		require.NoError(t, add(scheme))
	}
	// CAPG's CRDs for the objects its scopes patch.
	return providertest.KubeClient(t, scheme,
		capgModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_gcpclusters.yaml",
		capgModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_gcpmachines.yaml",
	)
}

// mockCloud is CAPG's ClusterScope with the GCE API replaced by the mock (see the package
// comment): every method but Cloud and NetworkCloud is CAPG's own.
type mockCloud struct {
	*scope.ClusterScope
	gce *cloud.MockGCE
}

func (m mockCloud) Cloud() gcpcloud.Cloud        { return m.gce }
func (m mockCloud) NetworkCloud() gcpcloud.Cloud { return m.gce }

// gcpMachine is what one test case builds: the scope and the mock GCE behind it.
type gcpMachine struct {
	scope *scope.MachineScope
	gce   *cloud.MockGCE
}

// newGCPMachine builds a Cluster, GCPCluster, Machine and GCPMachine whose data Secret holds
// value with the given format, and CAPG's MachineScope over them.
func newGCPMachine(t *testing.T, value []byte, format string, controlPlane bool) gcpMachine {
	t.Helper()
	ctx := context.Background()
	c := capgClient(t)
	ns := providertest.NewNamespace(t, c)

	secret := providertest.DataSecret(ns, "data", "cabpi", value, format)
	require.NoError(t, c.Create(ctx, secret), "creating the data Secret")

	cluster := &clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "cabpi", Namespace: ns}}
	gcpc := &infrav1.GCPCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cabpi", Namespace: ns},
		Spec:       infrav1.GCPClusterSpec{Project: project, Region: region},
	}
	clusterHook := &webhooks.GCPCluster{}
	require.NoError(t, clusterHook.Default(ctx, gcpc), "CAPG's GCPCluster defaulting")
	_, err := clusterHook.ValidateCreate(ctx, gcpc)
	require.NoError(t, err, "CAPG's GCPCluster validation")
	require.NoError(t, c.Create(ctx, gcpc))
	cs, err := scope.NewClusterScope(ctx, scope.ClusterScopeParams{
		Client: c, Cluster: cluster, GCPCluster: gcpc,
		GCPServices: scope.GCPServices{Compute: &compute.Service{}},
	})
	require.NoError(t, err, "CAPG's ClusterScope")

	labels := map[string]string{clusterv1.ClusterNameLabel: cluster.Name}
	if controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName:   cluster.Name,
			Version:       providertest.KubernetesVersion,
			FailureDomain: zone,
			Bootstrap:     clusterv1.Bootstrap{DataSecretName: ptr.To(secret.Name)},
		},
	}
	gcpm := &infrav1.GCPMachine{
		ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: ns, Labels: labels},
		Spec: infrav1.GCPMachineSpec{
			InstanceType: "n2-standard-2",
			// Flatcar's GCE image family.
			ImageFamily: ptr.To("projects/kinvolk-public/global/images/family/flatcar-stable"),
		},
	}
	machineHook := &webhooks.GCPMachine{}
	require.NoError(t, machineHook.Default(ctx, gcpm), "CAPG's GCPMachine defaulting")
	_, err = machineHook.ValidateCreate(ctx, gcpm)
	require.NoError(t, err, "CAPG's GCPMachine validation")
	require.NoError(t, c.Create(ctx, gcpm))

	gce := cloud.NewMockGCE(&cloud.SingleProjectRouter{ID: project})
	ms, err := scope.NewMachineScope(scope.MachineScopeParams{
		Client: c, ClusterGetter: mockCloud{ClusterScope: cs, gce: gce}, Machine: machine, GCPMachine: gcpm,
	})
	require.NoError(t, err, "CAPG's MachineScope")
	return gcpMachine{scope: ms, gce: gce}
}

// reconcileUserData runs CAPG's instances service once and returns the metadata values of the
// instance it created under userDataKey.
func (g gcpMachine) reconcileUserData(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, instances.New(g.scope).Reconcile(ctx), "CAPG's instances.Service.Reconcile")
	instance, err := g.gce.Instances().Get(ctx, meta.ZonalKey(g.scope.Name(), zone))
	require.NoError(t, err, "the instance CAPG created")
	require.NotNil(t, instance.Metadata, "the instance has no metadata")
	var values []string
	for _, item := range instance.Metadata.Items {
		if item.Key == userDataKey {
			require.NotNil(t, item.Value, "metadata %q has no value", userDataKey)
			values = append(values, *item.Value)
		}
	}
	return values
}

// TestGCPMachineUserData: the instance CAPG creates for a GCPMachine carries cabpi's data as
// metadata "user-data", byte for byte (CAPG neither encodes nor compresses it), once, within
// GCE's 256 KiB per value. CAPG checks no size: data one byte over is the metadata value whole,
// and cabpi, rendering against the same limit, has warned about it before.
func TestGCPMachineUserData(t *testing.T) {
	for _, ex := range append(providertest.Examples("quickstart-worker.yaml"), providertest.OverLimit(metadataValueLimit)) {
		t.Run(ex.Name(), func(t *testing.T) {
			out := providertest.Render(t, ex, "gcp")
			g := newGCPMachine(t, out.Data, "ignition", ex.ControlPlane)

			got, err := g.scope.GetBootstrapData(context.Background())
			require.NoError(t, err)
			providertest.RequireSameBytes(t, out.Data, []byte(got), "GetBootstrapData")

			values := g.reconcileUserData(t)
			require.Len(t, values, 1, "metadata items %q on the instance", userDataKey)
			providertest.RequireSameBytes(t, out.Data, []byte(values[0]), "the instance's metadata "+userDataKey)
			providertest.RequireLimitReported(t, out, len(values[0]), metadataValueLimit)
		})
	}
}

// TestGCPIgnoresFormat: CAPG does not read the Secret's format key: the instance gets the same
// user-data whether it says ignition, cloud-config or nothing. (Ignition on GCE tells Ignition
// from cloud-config by the content.)
func TestGCPIgnoresFormat(t *testing.T) {
	out := providertest.RenderCabpi(t, "flatcar-kubernetes-sysext.yaml", "worker", "gcp")
	for _, format := range []string{"ignition", "cloud-config", ""} {
		t.Run("format="+format, func(t *testing.T) {
			values := newGCPMachine(t, out.Data, format, false).reconcileUserData(t)
			require.Len(t, values, 1, "metadata items %q on the instance", userDataKey)
			providertest.RequireSameBytes(t, out.Data, []byte(values[0]), "the instance's metadata "+userDataKey)
		})
	}
}
