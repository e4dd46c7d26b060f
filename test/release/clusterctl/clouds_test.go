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

package clusterctl_test

import (
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// cloudFlavor is a flavor written for a cloud's infrastructure provider: what clusterctl needs
// to generate it, and what it must hold.
type cloudFlavor struct {
	infra, flavor string
	// variables are the values of the variables without defaults (KUBERNETES_VERSION aside).
	variables map[string]string
	kinds     map[string]int
	variant   cabpiv1.Variant
	// nodeName is the spec.nodeName.fromMetadata of every cabpi config ("" none).
	nodeName cabpiv1.MetadataPlatform
	// hostnameUnit is a unit of the snippet that names the node before kubeadm runs ("" none).
	hostnameUnit string
	// storage is where the provider keeps cabpi's data (CAPA: S3 behind a 3.4 stub).
	storage configinput.Storage
}

var (
	awsVariables = map[string]string{
		"AWS_REGION": "eu-central-1", "AWS_SSH_KEY_NAME": "default", "AWS_S3_BUCKET_NAME": "cabpi-demo-bootstrap",
	}
	azureVariables = map[string]string{
		"AZURE_LOCATION": "westeurope", "AZURE_SUBSCRIPTION_ID": "00000000-0000-0000-0000-000000000001",
		"AZURE_TENANT_ID": "00000000-0000-0000-0000-000000000002", "AZURE_CLIENT_ID": "00000000-0000-0000-0000-000000000003",
	}
	gcpVariables       = map[string]string{"GCP_PROJECT": "cabpi-demo", "GCP_REGION": "europe-west4"}
	openstackVariables = map[string]string{
		// clouds.yaml, base64-encoded: "clouds: {}" (the Secret is only applied, never read).
		"OPENSTACK_CLOUD_YAML_B64": "Y2xvdWRzOiB7fQo=", "OPENSTACK_EXTERNAL_NETWORK_ID": "00000000-0000-0000-0000-00000000000e",
		"OPENSTACK_CONTROL_PLANE_MACHINE_FLAVOR": "m1.medium", "OPENSTACK_NODE_MACHINE_FLAVOR": "m1.medium",
		"OPENSTACK_SSH_KEY_NAME": "cabpi-demo",
	}
)

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

func standalone(cluster, machine string, extra ...string) map[string]int {
	kinds := map[string]int{"Cluster": 1, cluster: 1, "Machine": 1, machine: 1, "IgnitionConfig": 1,
		"MachineDeployment": 1, machine + "Template": 1, "IgnitionConfigTemplate": 1}
	for _, k := range extra {
		kinds[k]++
	}
	return kinds
}

var cloudFlavors = []cloudFlavor{
	{infra: "aws", flavor: "ignition-aws", variables: with(awsVariables, "AWS_FLATCAR_AMI_ID", "ami-0flatcar"),
		kinds: standalone("AWSCluster", "AWSMachine"), variant: cabpiv1.VariantFlatcar, nodeName: cabpiv1.MetadataPlatformAWS,
		storage: configinput.StorageObjectStore},
	{infra: "aws", flavor: "ignition-aws-fcos", variables: with(awsVariables, "AWS_FCOS_AMI_ID", "ami-0fcos"),
		kinds: standalone("AWSCluster", "AWSMachine"), variant: cabpiv1.VariantFCOS, nodeName: cabpiv1.MetadataPlatformAWS,
		storage: configinput.StorageObjectStore},
	{infra: "aws", flavor: "ignition-aws-kcp", variables: with(awsVariables, "AWS_FLATCAR_AMI_ID", "ami-0flatcar"),
		kinds: map[string]int{"Cluster": 1, "AWSCluster": 1, "KubeadmControlPlane": 1, "AWSMachineTemplate": 2,
			"MachineDeployment": 1, "IgnitionConfigTemplate": 1},
		variant: cabpiv1.VariantFlatcar, nodeName: cabpiv1.MetadataPlatformAWS, storage: configinput.StorageObjectStore},
	{infra: "azure", flavor: "ignition-azure", variables: azureVariables,
		kinds: standalone("AzureCluster", "AzureMachine", "AzureClusterIdentity"), variant: cabpiv1.VariantFlatcar, nodeName: cabpiv1.MetadataPlatformAzure},
	{infra: "azure", flavor: "ignition-azure-fcos", variables: with(azureVariables, "AZURE_FCOS_IMAGE_ID",
		"/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/images/providers/Microsoft.Compute/images/fedora-coreos"),
		kinds: standalone("AzureCluster", "AzureMachine", "AzureClusterIdentity"), variant: cabpiv1.VariantFCOS, nodeName: cabpiv1.MetadataPlatformAzure},
	{infra: "gcp", flavor: "ignition-gcp", variables: gcpVariables,
		kinds: standalone("GCPCluster", "GCPMachine"), variant: cabpiv1.VariantFlatcar, hostnameUnit: "set-hostname.service"},
	{infra: "gcp", flavor: "ignition-gcp-fcos", variables: gcpVariables,
		kinds: standalone("GCPCluster", "GCPMachine"), variant: cabpiv1.VariantFCOS, hostnameUnit: "set-hostname.service"},
	{infra: "openstack", flavor: "ignition-openstack", variables: openstackVariables,
		kinds: standalone("OpenStackCluster", "OpenStackMachine", "Secret"), variant: cabpiv1.VariantFlatcar, nodeName: cabpiv1.MetadataPlatformOpenStack},
	{infra: "openstack", flavor: "ignition-openstack-fcos", variables: openstackVariables,
		kinds: standalone("OpenStackCluster", "OpenStackMachine", "Secret"), variant: cabpiv1.VariantFCOS, nodeName: cabpiv1.MetadataPlatformOpenStack},
	{infra: "vsphere", flavor: "ignition-vsphere", variables: vsphereVariables,
		kinds: standalone("VSphereCluster", "VSphereMachine", "Secret"), variant: cabpiv1.VariantFlatcar, hostnameUnit: "set-hostname.service"},
}

// TestGenerateCloudFlavors generates every cloud flavor offline with the real clusterctl,
// server-side dry-run applies each object against the provider's own CRDs (from its module, at
// the version hack/versions.env pins) and cabpi's webhooks, and renders every cabpi config for its
// roles the way the controller would for the infrastructure machine the flavor gives it: the
// Kubernetes source of the variant at the Machine's version, the node name, and data that fits
// how that machine stores it.
func TestGenerateCloudFlavors(t *testing.T) {
	r := newProviderRepo(t)
	for _, f := range cloudFlavors {
		t.Run(f.flavor, func(t *testing.T) {
			ns := env.CreateNamespace(t, f.infra).Name
			out := r.mustClusterctl(t, f.variables, "generate", "cluster", "demo", "--infrastructure", infra[f.infra].ref(),
				"--flavor", f.flavor, "--kubernetes-version", kubernetesVersion, "--control-plane-machine-count", "3",
				"--worker-machine-count", "2", "--target-namespace", ns)
			objs := parseObjects(t, out)
			assert.Equal(t, f.kinds, kindCounts(objs))
			requireInNamespace(t, objs, ns)
			requireReferencesResolve(t, objs)
			requireDryRunApplied(t, objs)

			configs := append(byKind(objs, "IgnitionConfig"), byKind(objs, "IgnitionConfigTemplate")...)
			require.NotEmpty(t, configs)
			for i := range configs {
				config := &configs[i]
				spec := specOf(t, config)
				assert.Equal(t, f.variant, spec.Variant, config.GetName())
				var nodeName cabpiv1.MetadataPlatform
				if spec.NodeName != nil {
					nodeName = spec.NodeName.FromMetadata
				}
				assert.Equal(t, f.nodeName, nodeName, config.GetName())
				wantSource := map[cabpiv1.Variant]cabpiv1.KubernetesSource{
					cabpiv1.VariantFlatcar: cabpiv1.KubernetesSourceSysext, cabpiv1.VariantFCOS: cabpiv1.KubernetesSourceBinaries}[f.variant]
				assert.Equal(t, wantSource, spec.Kubernetes.Source, config.GetName())

				delivery := deliveryOf(t, objs, config)
				assert.Equal(t, f.storage, delivery.Storage, "%s: where %s keeps the data", config.GetName(), delivery.Kind)
				if delivery.Storage == configinput.StorageObjectStore {
					assert.Equal(t, "3.4", delivery.StubIgnitionVersion, config.GetName())
				}
				roles := []ignition.Role{ignition.RoleWorkerJoin}
				if config.GetKind() == "IgnitionConfig" {
					roles = []ignition.Role{ignition.RoleInit, ignition.RoleControlPlaneJoin}
				}
				for _, role := range roles {
					cfg, out := renderFor(t, spec, role, delivery)
					assert.False(t, out.Size.OverLimit(), "%s as %s: %d bytes over %d", config.GetName(), role, out.Size.Bytes, out.Size.Limit)
					assert.NotEmpty(t, out.KubernetesFrom, "%s: Kubernetes downloaded at the Machine's version", config.GetName())
					for _, u := range out.KubernetesFrom {
						assert.Contains(t, u, kubernetesVersion)
					}
					if f.hostnameUnit != "" {
						u, ok := cfg.unit(f.hostnameUnit)
						assert.True(t, ok && u.Enabled != nil && *u.Enabled, "%s as %s: %s", config.GetName(), role, f.hostnameUnit)
					}
					u, ok := cfg.unit("containerd.service")
					assert.True(t, ok && u.Enabled != nil && *u.Enabled, "%s as %s: containerd enabled", config.GetName(), role)
				}
			}
		})
	}
}

// On AWS, the FCOS flavor's Ignition 3.4 stub is what lets it boot: the same objects with CAPA's
// default stub (2.3) are refused by the render the controller does, naming spec.ignition.version.
// The KCP flavor's control plane keeps CAPA's 2.3 stub for CABPK's Ignition 2.3.
func TestAWSFlavorsIgnitionVersions(t *testing.T) {
	r := newProviderRepo(t)
	generate := func(flavor string) []unstructured.Unstructured {
		for _, f := range cloudFlavors {
			if f.flavor == flavor {
				return parseObjects(t, r.mustClusterctl(t, f.variables, "generate", "cluster", "demo", "--infrastructure",
					infra["aws"].ref(), "--flavor", flavor, "--kubernetes-version", kubernetesVersion, "--worker-machine-count", "1", "--target-namespace", "default"))
			}
		}
		t.Fatalf("no flavor %s", flavor)
		return nil
	}

	objs := generate("ignition-aws-fcos")
	workers := find(t, objs, "IgnitionConfigTemplate", "demo-md-0")
	machines := find(t, objs, "AWSMachineTemplate", "demo-md-0")
	require.NoError(t, unstructured.SetNestedField(machines.Object, "2.3", "spec", "template", "spec", "ignition", "version"))
	_, err := configinput.RenderOfflineFor(t.Context(), specOf(t, workers), ignition.RoleWorkerJoin, kubernetesVersion, deliveryOf(t, objs, workers), io.Discard)
	var refused *configinput.DeliveryError
	require.True(t, errors.As(err, &refused), "want a DeliveryError, got %v", err)
	assert.Contains(t, refused.Error(), "spec.ignition.version")

	objs = generate("ignition-aws-kcp")
	assert.Equal(t, "2.3", nested(t, find(t, objs, "AWSMachineTemplate", "demo-control-plane"), "spec", "template", "spec", "ignition", "version"))
	assert.Equal(t, "ignition", nested(t, find(t, objs, "KubeadmControlPlane", "demo-control-plane"), "spec", "kubeadmConfigSpec", "format"))
}

// specOf reads the spec of an IgnitionConfig or an IgnitionConfigTemplate's template.
func specOf(t *testing.T, u *unstructured.Unstructured) *cabpiv1.IgnitionConfigSpec {
	t.Helper()
	data, err := u.MarshalJSON()
	require.NoError(t, err)
	spec, err := configinput.SpecFromYAML(data)
	require.NoError(t, err)
	return spec
}

// deliveryOf follows config's owner (Machine or MachineDeployment) to its infrastructure machine
// (template) among objs, and reads how that machine hands the data over.
func deliveryOf(t *testing.T, objs []unstructured.Unstructured, config *unstructured.Unstructured) configinput.Delivery {
	t.Helper()
	for _, o := range objs {
		path := map[string][]string{"Machine": {"spec"}, "MachineDeployment": {"spec", "template", "spec"}}[o.GetKind()]
		if path == nil {
			continue
		}
		ref, _, _ := unstructured.NestedStringMap(o.Object, append(append([]string{}, path...), "bootstrap", "configRef")...)
		if ref["kind"] != config.GetKind() || ref["name"] != config.GetName() {
			continue
		}
		infraRef, _, _ := unstructured.NestedStringMap(o.Object, append(append([]string{}, path...), "infrastructureRef")...)
		d, err := configinput.DeliveryOf(find(t, objs, infraRef["kind"], infraRef["name"]))
		require.NoError(t, err)
		return d
	}
	t.Fatalf("no owner of %s %s", config.GetKind(), config.GetName())
	return configinput.Delivery{}
}

// renderFor renders spec for role as the controller would for a machine that stores the data as
// delivery says.
func renderFor(t *testing.T, spec *cabpiv1.IgnitionConfigSpec, role ignition.Role, delivery configinput.Delivery) (ignitionJSON, ignition.Output) {
	t.Helper()
	out, err := configinput.RenderOfflineFor(t.Context(), spec, role, kubernetesVersion, delivery, io.Discard)
	require.NoError(t, err, "rendering as %s", role)
	return parseRendered(t, out), out
}
