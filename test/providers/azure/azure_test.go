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

// Package azure proves, with Cluster API Provider Azure v1.21.0's own code (imported, not
// copied), what an Azure VM receives when cabpi's data Secret (value = Ignition JSON, format =
// "ignition") is handed to CAPZ: the VM's osProfile.customData. The data is cabpi's real output
// (`cabpi render`); the Secret, the Cluster, CAPZ's AzureCluster, AzureClusterIdentity and
// AzureMachine live in a real kube-apiserver (envtest, CAPZ's and Cluster API's own CRDs); CAPZ's
// ClusterScope and MachineScope are built by CAPZ's constructors over them. Only the Azure
// Resource SKUs API, which cannot be reached, is stood in for, with CAPZ's own static SKU cache
// (resourceskus.NewStaticCache). No Azure API is called: VMSpec.Parameters builds the request
// body (armcompute.VirtualMachine) that CAPZ's async reconciler would PUT.
//
// What is called:
//   - azure/scope.MachineScope.GetBootstrapData, InitMachineCache and VMSpec, then
//     virtualmachines.VMSpec.Parameters(ctx, nil): OSProfile.CustomData;
//   - CAPZ's AzureMachine defaulting and validation (AzureMachine.SetDefaults, which the webhook
//     calls, and ValidateAzureMachineSpec) and the AzureCluster webhook's Default and
//     ValidateCreate;
//   - for an AzureMachinePool: azure/scope.MachinePoolScope.GetBootstrapData, GetVMImage,
//     MaxSurge, ScaleSetSpec, then scalesets.ScaleSetSpec.Parameters(ctx, nil): the scale set's
//     VirtualMachineProfile.OSProfile.CustomData.
//
// What cannot be called, and why:
//   - virtualmachines.Service.Reconcile (the PUT itself) needs the live Azure Resource Manager
//     API; Parameters is what it sends, so the test stops there.
//   - MachinePoolScope.InitMachinePoolCache: it looks SKUs up through resourceskus.GetCache,
//     which calls the Azure Resource SKUs API (MachinePoolScopeParams has no SKU-cache field,
//     unlike MachineScopeParams, and the scope's skuCache is unexported); and
//     MachinePoolScopeParams.Cache cannot stand in, because NewMachinePoolScope (v1.21.0) does
//     not copy it into the scope. So the test takes ScaleSetSpec's result without a cache and
//     sets the four values ScaleSetSpec copies from the cache (BootstrapData, VMImage, SKU,
//     MaxSurge) from the scope's own exported methods (GetBootstrapData, GetVMImage, MaxSurge)
//     and the static SKU: the values InitMachinePoolCache would store.
//   - The AzureMachine and AzureClusterIdentity webhooks are unexported types
//     (azureMachineWebhook, azureClusterIdentityWebhook); their exported bodies
//     (SetDefaults, ValidateAzureMachineSpec) are called for the AzureMachine.
package azure

import (
	"context"
	"encoding/base64"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/compute/armcompute/v5"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "sigs.k8s.io/cluster-api-provider-azure/api/v1beta1"
	"sigs.k8s.io/cluster-api-provider-azure/azure"
	"sigs.k8s.io/cluster-api-provider-azure/azure/scope"
	"sigs.k8s.io/cluster-api-provider-azure/azure/services/resourceskus"
	"sigs.k8s.io/cluster-api-provider-azure/azure/services/scalesets"
	"sigs.k8s.io/cluster-api-provider-azure/azure/services/virtualmachines"
	infrav1exp "sigs.k8s.io/cluster-api-provider-azure/exp/api/v1beta1"
	clusterv1 "sigs.k8s.io/cluster-api/api/v1beta1"
	expv1 "sigs.k8s.io/cluster-api/exp/api/v1beta1"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/providers/providertest"
)

const (
	capzModule = "sigs.k8s.io/cluster-api-provider-azure"
	capiModule = "sigs.k8s.io/cluster-api"
	// customDataLimit: the ARM API documents osProfile.customData as a base-64 string that "is
	// decoded to a binary array that is saved as a file on the Virtual Machine. The maximum
	// length of the binary array is 65535 bytes." So cabpi's raw data must be at most 65535.
	customDataLimit = 65535
	location        = "westeurope"
	vmSize          = "Standard_D2s_v3"
)

func capzClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, infrav1.AddToScheme, infrav1exp.AddToScheme, clusterv1.AddToScheme, expv1.AddToScheme} {
		require.NoError(t, add(scheme))
	}
	// CAPZ's CRDs for the objects its scopes read and patch; Cluster API's Cluster, which CAPZ's
	// AzureMachine defaulting looks up, and MachinePool, whose patch helper the pool scope builds.
	return providertest.KubeClient(t, scheme,
		capzModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_azureclusters.yaml",
		capzModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_azureclusteridentities.yaml",
		capzModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_azuremachines.yaml",
		capzModule+":config/crd/bases/infrastructure.cluster.x-k8s.io_azuremachinepools.yaml",
		capiModule+":config/crd/bases/cluster.x-k8s.io_clusters.yaml",
		capiModule+":config/crd/bases/cluster.x-k8s.io_machinepools.yaml",
	)
}

// isolateAzure keeps CAPZ's settings off this machine's environment: CAPZ reads AZURE_* for
// values the cluster does not set.
func isolateAzure(t *testing.T) {
	t.Helper()
	for _, k := range []string{"AZURE_SUBSCRIPTION_ID", "AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "AZURE_ENVIRONMENT", "AZURE_AD_RESOURCE"} {
		t.Setenv(k, "")
	}
}

// staticSKUs stand in for the Resource SKUs API: the VM size with what CAPZ checks before it
// builds a VM (at least 2 vCPUs and 2 GB), and the aligned
// availability set SKU InitMachineCache looks up.
func staticSKUs() *resourceskus.Cache {
	capability := func(name, value string) *armcompute.ResourceSKUCapabilities {
		return &armcompute.ResourceSKUCapabilities{Name: ptr.To(name), Value: ptr.To(value)}
	}
	return resourceskus.NewStaticCache([]armcompute.ResourceSKU{
		{
			Name: ptr.To(vmSize), ResourceType: ptr.To(string(resourceskus.VirtualMachines)),
			Locations:    []*string{ptr.To(location)},
			LocationInfo: []*armcompute.ResourceSKULocationInfo{{Location: ptr.To(location)}},
			Capabilities: []*armcompute.ResourceSKUCapabilities{
				capability(resourceskus.VCPUs, "2"), capability(resourceskus.MemoryGB, "8"),
			},
		},
		{
			Name: ptr.To(string(armcompute.AvailabilitySetSKUTypesAligned)), ResourceType: ptr.To(string(resourceskus.AvailabilitySets)),
			Locations:    []*string{ptr.To(location)},
			Capabilities: []*armcompute.ResourceSKUCapabilities{capability(resourceskus.MaximumPlatformFaultDomainCount, "2")},
		},
	}, location)
}

// flatcarImage is Flatcar's Azure Marketplace image, as a cabpi user's AzureMachine names it.
func flatcarImage() *infrav1.Image {
	return &infrav1.Image{Marketplace: &infrav1.AzureMarketplaceImage{
		ImagePlan: infrav1.ImagePlan{Publisher: "kinvolk", Offer: "flatcar-container-linux-corevm-amd64", SKU: "stable-gen2"},
		Version:   "latest", ThirdPartyImage: true,
	}}
}

// azureCluster is one Cluster with its AzureCluster and CAPZ's ClusterScope over them.
type azureCluster struct {
	c       client.Client
	ns      string
	cluster *clusterv1.Cluster
	scope   *scope.ClusterScope
}

func newAzureCluster(t *testing.T) *azureCluster {
	t.Helper()
	isolateAzure(t)
	ctx := context.Background()
	c := capzClient(t)
	ns := providertest.NewNamespace(t, c)

	// A service principal identity: its client secret is a placeholder, used only to build
	// (not to call) the token credential.
	principal := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "principal", Namespace: ns},
		Data:       map[string][]byte{scope.AzureSecretKey: []byte("placeholder-not-a-secret")},
	}
	require.NoError(t, c.Create(ctx, principal))
	identity := &infrav1.AzureClusterIdentity{
		ObjectMeta: metav1.ObjectMeta{Name: "principal", Namespace: ns},
		Spec: infrav1.AzureClusterIdentitySpec{
			Type:              infrav1.ServicePrincipal,
			TenantID:          "00000000-0000-0000-0000-000000000001",
			ClientID:          "00000000-0000-0000-0000-000000000002",
			ClientSecret:      corev1.SecretReference{Name: principal.Name, Namespace: ns},
			AllowedNamespaces: &infrav1.AllowedNamespaces{},
		},
	}
	require.NoError(t, c.Create(ctx, identity))

	cluster := &clusterv1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cabpi", Namespace: ns},
		Spec: clusterv1.ClusterSpec{InfrastructureRef: &corev1.ObjectReference{
			APIVersion: infrav1.GroupVersion.String(), Kind: infrav1.AzureClusterKind, Name: "cabpi", Namespace: ns,
		}},
	}
	require.NoError(t, c.Create(ctx, cluster))
	azc := &infrav1.AzureCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cabpi", Namespace: ns, Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
		Spec: infrav1.AzureClusterSpec{
			AzureClusterClassSpec: infrav1.AzureClusterClassSpec{
				SubscriptionID: "00000000-0000-0000-0000-000000000003",
				Location:       location,
				IdentityRef:    &corev1.ObjectReference{Kind: infrav1.AzureClusterIdentityKind, Name: identity.Name, Namespace: ns},
			},
			ResourceGroup: "cabpi",
			// The CRD's default (+kubebuilder:default=true), which the API server applies
			// before the mutating webhook runs: the webhook then adds the API server's load
			// balancer, which a control-plane VM's NIC joins.
			ControlPlaneEnabled: true,
		},
	}
	hook := &infrav1.AzureClusterWebhook{}
	require.NoError(t, hook.Default(ctx, azc), "CAPZ's AzureCluster defaulting")
	_, err := hook.ValidateCreate(ctx, azc)
	require.NoError(t, err, "CAPZ's AzureCluster validation")
	require.NoError(t, c.Create(ctx, azc))

	cs, err := scope.NewClusterScope(ctx, scope.ClusterScopeParams{
		Client: c, Cluster: cluster, AzureCluster: azc, CredentialCache: azure.NewCredentialCache(),
	})
	require.NoError(t, err, "CAPZ's ClusterScope")
	return &azureCluster{c: c, ns: ns, cluster: cluster, scope: cs}
}

func (a *azureCluster) storeSecret(t *testing.T, name string, value []byte) {
	t.Helper()
	a.storeSecretWithFormat(t, name, value, "ignition")
}

// storeSecretWithFormat writes a data Secret whose format key says format ("": no format key).
func (a *azureCluster) storeSecretWithFormat(t *testing.T, name string, value []byte, format string) {
	t.Helper()
	secret := providertest.DataSecret(a.ns, name, a.cluster.Name, value, format)
	require.NoError(t, a.c.Create(context.Background(), secret), "creating the data Secret")
}

// machineScope is CAPZ's MachineScope for a Machine whose data Secret is secretName, its cache
// initialised as the AzureMachine controller does before it builds the VM.
func (a *azureCluster) machineScope(t *testing.T, name, secretName string, controlPlane bool) *scope.MachineScope {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{clusterv1.ClusterNameLabel: a.cluster.Name}
	if controlPlane {
		labels[clusterv1.MachineControlPlaneLabel] = ""
	}
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.ns, Labels: labels},
		Spec: clusterv1.MachineSpec{
			ClusterName: a.cluster.Name,
			Version:     ptr.To(providertest.KubernetesVersion),
			Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To(secretName)},
		},
	}
	azm := &infrav1.AzureMachine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: a.ns, Labels: labels},
		Spec: infrav1.AzureMachineSpec{
			VMSize: vmSize,
			Image:  flatcarImage(),
			OSDisk: infrav1.OSDisk{
				OSType: azure.LinuxOS, DiskSizeGB: ptr.To[int32](30), CachingType: "ReadWrite",
				ManagedDisk: &infrav1.ManagedDiskParameters{StorageAccountType: "Premium_LRS"},
			},
		},
	}
	// What CAPZ's AzureMachine webhook does at admission (its type is unexported).
	require.NoError(t, azm.SetDefaults(a.c), "CAPZ's AzureMachine defaulting")
	require.Empty(t, infrav1.ValidateAzureMachineSpec(azm.Spec), "CAPZ's AzureMachine validation")
	require.NoError(t, a.c.Create(ctx, azm))

	ms, err := scope.NewMachineScope(scope.MachineScopeParams{
		Client: a.c, ClusterScope: a.scope, Machine: machine, AzureMachine: azm, SKUCache: staticSKUs(),
	})
	require.NoError(t, err, "CAPZ's MachineScope")
	require.NoError(t, ms.InitMachineCache(ctx), "CAPZ's InitMachineCache")
	return ms
}

// TestAzureMachineCustomData: the VM CAPZ builds for an AzureMachine carries cabpi's data as
// osProfile.customData, base64 of the Secret's value and nothing else: no gzip, no wrapper, the
// format key not consulted; decoded, it must fit the 65535 bytes ARM allows. CAPZ checks no
// size: data one byte over is the VM's custom data whole, and cabpi, rendering against the same
// limit, has warned about it before.
func TestAzureMachineCustomData(t *testing.T) {
	for _, ex := range append(providertest.Examples("node-name-azure.yaml"), providertest.OverLimit(customDataLimit)) {
		t.Run(ex.Name(), func(t *testing.T) {
			ctx := context.Background()
			out := providertest.Render(t, ex, "azure")
			a := newAzureCluster(t)
			a.storeSecret(t, "data", out.Data)
			ms := a.machineScope(t, "m", "data", ex.ControlPlane)

			b64, err := ms.GetBootstrapData(ctx)
			require.NoError(t, err)
			providertest.RequireBase64Of(t, out.Data, b64, "GetBootstrapData (the value, base64-encoded)")

			spec, ok := ms.VMSpec().(*virtualmachines.VMSpec)
			require.True(t, ok, "VMSpec is %T", ms.VMSpec())
			params, err := spec.Parameters(ctx, nil)
			require.NoError(t, err, "CAPZ's VMSpec.Parameters")
			vm, ok := params.(armcompute.VirtualMachine)
			require.True(t, ok, "Parameters gave %T", params)
			require.NotNil(t, vm.Properties.OSProfile, "the VM has no osProfile")
			customData := checkCustomData(t, vm.Properties.OSProfile.CustomData, out)
			providertest.RequireLimitReported(t, out, len(customData), customDataLimit)
			// The machine the data is for: a Linux VM from Flatcar's image.
			require.Equal(t, ms.Name(), ptr.Deref(vm.Properties.OSProfile.ComputerName, ""))
			require.Equal(t, "kinvolk", ptr.Deref(vm.Properties.StorageProfile.ImageReference.Publisher, ""))
		})
	}
}

// TestAzureIgnoresFormat: CAPZ does not read the Secret's format key: the VM gets the same
// custom data whether it says ignition, cloud-config or nothing.
func TestAzureIgnoresFormat(t *testing.T) {
	out := providertest.RenderCabpi(t, "node-name-azure.yaml", "worker", "azure")
	for _, format := range []string{"ignition", "cloud-config", ""} {
		t.Run("format="+format, func(t *testing.T) {
			a := newAzureCluster(t)
			a.storeSecretWithFormat(t, "data", out.Data, format)
			ms := a.machineScope(t, "m", "data", false)
			spec, ok := ms.VMSpec().(*virtualmachines.VMSpec)
			require.True(t, ok, "VMSpec is %T", ms.VMSpec())
			params, err := spec.Parameters(context.Background(), nil)
			require.NoError(t, err, "CAPZ's VMSpec.Parameters")
			vm, ok := params.(armcompute.VirtualMachine)
			require.True(t, ok, "Parameters gave %T", params)
			checkCustomData(t, vm.Properties.OSProfile.CustomData, out)
		})
	}
}

// checkCustomData decodes custom data and requires it to be cabpi's data exactly.
func checkCustomData(t *testing.T, customData *string, out providertest.Rendered) []byte {
	t.Helper()
	require.NotNil(t, customData, "no customData")
	raw, err := base64.StdEncoding.DecodeString(*customData)
	require.NoError(t, err, "customData is not base64")
	providertest.RequireSameBytes(t, out.Data, raw, "the VM's customData, decoded")
	return raw
}

// TestAzureMachinePoolCustomData: the virtual machine scale set CAPZ builds for an
// AzureMachinePool carries cabpi's data as its VM profile's osProfile.customData, the same way,
// over the limit too.
func TestAzureMachinePoolCustomData(t *testing.T) {
	for _, ex := range []providertest.Example{{File: "node-name-azure.yaml", Role: "worker"}, providertest.OverLimit(customDataLimit)} {
		t.Run(ex.Name(), func(t *testing.T) { azureMachinePoolCustomData(t, providertest.Render(t, ex, "azure")) })
	}
}

// azureMachinePoolCustomData is one row of TestAzureMachinePoolCustomData.
func azureMachinePoolCustomData(t *testing.T, out providertest.Rendered) {
	ctx := context.Background()
	a := newAzureCluster(t)
	a.storeSecret(t, "pool-data", out.Data)

	mp := &expv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: a.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: a.cluster.Name}},
		Spec: expv1.MachinePoolSpec{
			ClusterName: a.cluster.Name,
			Replicas:    ptr.To[int32](2),
			Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
				ClusterName: a.cluster.Name,
				Version:     ptr.To(providertest.KubernetesVersion),
				Bootstrap:   clusterv1.Bootstrap{DataSecretName: ptr.To("pool-data")},
			}},
		},
	}
	amp := &infrav1exp.AzureMachinePool{
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: a.ns, Labels: map[string]string{clusterv1.ClusterNameLabel: a.cluster.Name}},
		Spec: infrav1exp.AzureMachinePoolSpec{
			Location: location,
			Template: infrav1exp.AzureMachinePoolMachineTemplate{
				VMSize:       vmSize,
				Image:        flatcarImage(),
				SSHPublicKey: "",
				OSDisk: infrav1.OSDisk{
					OSType: azure.LinuxOS, DiskSizeGB: ptr.To[int32](30),
					ManagedDisk: &infrav1.ManagedDiskParameters{StorageAccountType: "Premium_LRS"},
				},
			},
		},
	}
	// CAPZ's AzureMachinePool defaulting (the SSH key, the network interface from the subnet).
	require.NoError(t, amp.SetDefaults(a.c), "CAPZ's AzureMachinePool defaulting")
	require.NoError(t, a.c.Create(ctx, amp))

	mps, err := scope.NewMachinePoolScope(scope.MachinePoolScopeParams{Client: a.c, MachinePool: mp, AzureMachinePool: amp, ClusterScope: a.scope})
	require.NoError(t, err, "CAPZ's MachinePoolScope")
	bootstrapData, err := mps.GetBootstrapData(ctx)
	require.NoError(t, err, "MachinePoolScope.GetBootstrapData")
	providertest.RequireBase64Of(t, out.Data, bootstrapData, "GetBootstrapData (the value, base64-encoded)")
	image, err := mps.GetVMImage(ctx)
	require.NoError(t, err)
	maxSurge, err := mps.MaxSurge()
	require.NoError(t, err)
	sku, err := staticSKUs().Get(ctx, vmSize, resourceskus.VirtualMachines)
	require.NoError(t, err)

	// The scope's cache stays empty (see the package comment): ScaleSetSpec fills everything
	// else from the scope, and the four cached values are set as ScaleSetSpec copies them from
	// the cache InitMachinePoolCache fills, from the same exported methods.
	spec, ok := mps.ScaleSetSpec(ctx).(*scalesets.ScaleSetSpec)
	require.True(t, ok, "ScaleSetSpec is %T", mps.ScaleSetSpec(ctx))
	require.True(t, spec.BootstrapData == "", "ScaleSetSpec without a cache has bootstrap data: CAPZ now keeps MachinePoolScopeParams.Cache; use it")
	spec.BootstrapData, spec.VMImage, spec.SKU, spec.MaxSurge, spec.ShouldPatchCustomData = bootstrapData, image, sku, maxSurge, true
	vmssParams, err := spec.Parameters(ctx, nil)
	require.NoError(t, err, "CAPZ's ScaleSetSpec.Parameters")
	vmss, ok := vmssParams.(armcompute.VirtualMachineScaleSet)
	require.True(t, ok, "Parameters gave %T", vmssParams)
	osProfile := vmss.Properties.VirtualMachineProfile.OSProfile
	require.NotNil(t, osProfile, "the scale set's VM profile has no osProfile")
	customData := checkCustomData(t, osProfile.CustomData, out)
	providertest.RequireLimitReported(t, out, len(customData), customDataLimit)
}
