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
	"encoding/json"
	"errors"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"sigs.k8s.io/cluster-api/feature"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
)

const (
	providerLabel     = "cluster.x-k8s.io/provider"
	providerName      = "bootstrap-ignition"
	contractLabel     = "cluster.x-k8s.io/v1beta2"
	kubernetesVersion = "v1.34.0"
	image             = "ghcr.io/cabpi/cluster-api-bootstrap-provider-ignition:" + providerVersion
)

// providerVariables are the clusterctl variables of bootstrap-components.yaml. The diagnostics
// ones are Cluster API's own, so that one setting reaches every provider.
var providerVariables = []string{"CABPI_BOOTSTRAP_TOKEN_TTL", "CABPI_CONCURRENCY", "EXP_MACHINE_POOL",
	"CAPI_DIAGNOSTICS_ADDRESS", "CAPI_INSECURE_DIAGNOSTICS"}

// vsphereVariables are the variables the vSphere template needs without defaults.
var vsphereVariables = map[string]string{
	"CONTROL_PLANE_ENDPOINT_IP":  "10.0.0.10",
	"VSPHERE_SERVER":             "vcenter.example.com",
	"VSPHERE_TLS_THUMBPRINT":     "AA:BB:CC:DD",
	"VSPHERE_USERNAME":           "capv@vsphere.local",
	"VSPHERE_PASSWORD":           "secret",
	"VSPHERE_DATACENTER":         "dc0",
	"VSPHERE_DATASTORE":          "ds0",
	"VSPHERE_FOLDER":             "vm/capi",
	"VSPHERE_RESOURCE_POOL":      "*/Resources",
	"VSPHERE_NETWORK":            "VM Network",
	"VSPHERE_TEMPLATE":           "flatcar-stable",
	"VSPHERE_SSH_AUTHORIZED_KEY": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIExample core@example",
}

// TestReleaseAssets checks what `make release-manifests` writes: the components with the
// provider label and the CRD contract label matching metadata.yaml, and the templates.
func TestReleaseAssets(t *testing.T) {
	r := newProviderRepo(t)

	// Every template ships with the release, unchanged.
	templates, err := filepath.Glob(filepath.Join(repoRoot, "templates", "*.yaml"))
	require.NoError(t, err)
	require.Len(t, templates, 5+len(cloudFlavors)-1) // the vSphere flavor is among the cloud flavors
	for _, f := range append(templates, filepath.Join(repoRoot, "metadata.yaml")) {
		want, err := os.ReadFile(f)
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(r.release, filepath.Base(f)))
		require.NoError(t, err, "release asset %s", filepath.Base(f))
		assert.Equal(t, string(want), string(got), filepath.Base(f))
	}

	// metadata.yaml: this release's series implements contract v1beta2, the contract our CRDs
	// declare with their label.
	var md struct {
		APIVersion    string `json:"apiVersion"`
		Kind          string `json:"kind"`
		ReleaseSeries []struct {
			Major, Minor int
			Contract     string
		} `json:"releaseSeries"`
	}
	data, err := os.ReadFile(filepath.Join(r.release, "metadata.yaml"))
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, &md))
	assert.Equal(t, "clusterctl.cluster.x-k8s.io/v1alpha3", md.APIVersion)
	assert.Equal(t, "Metadata", md.Kind)
	require.Len(t, md.ReleaseSeries, 1)
	assert.Equal(t, 0, md.ReleaseSeries[0].Major)
	assert.Equal(t, 1, md.ReleaseSeries[0].Minor)
	assert.Equal(t, "v1beta2", md.ReleaseSeries[0].Contract)
	assert.Equal(t, "cluster.x-k8s.io/"+md.ReleaseSeries[0].Contract, contractLabel)

	// The raw components (before clusterctl adds its own labels) already carry the provider
	// label everywhere and have a single Namespace.
	data, err = os.ReadFile(filepath.Join(r.release, "bootstrap-components.yaml"))
	require.NoError(t, err)
	objs, err := toUnstructured(data)
	require.NoError(t, err)
	for _, o := range objs {
		assert.Equal(t, providerName, o.GetLabels()[providerLabel], "%s %s has no provider label", o.GetKind(), o.GetName())
	}
	require.Len(t, byKind(objs, "Namespace"), 1)
	assert.Equal(t, "cabpi-system", byKind(objs, "Namespace")[0].GetName())
	crds := byKind(objs, "CustomResourceDefinition")
	require.Len(t, crds, 2)
	for _, crd := range crds {
		assert.Equal(t, "v1alpha1", crd.GetLabels()[contractLabel], crd.GetName())
	}
	// The variables are in the components as clusterctl variables with their defaults.
	dep := byKind(objs, "Deployment")
	require.Len(t, dep, 1)
	args := containerArgs(t, &dep[0])
	for _, want := range []string{
		"--bootstrap-token-ttl=${CABPI_BOOTSTRAP_TOKEN_TTL:=15m}",
		"--concurrency=${CABPI_CONCURRENCY:=10}",
		"--feature-gates=MachinePool=${EXP_MACHINE_POOL:=true}",
		"--diagnostics-address=${CAPI_DIAGNOSTICS_ADDRESS:=:8443}",
		"--insecure-diagnostics=${CAPI_INSECURE_DIAGNOSTICS:=false}",
	} {
		assert.Contains(t, args, want)
	}
	assert.Equal(t, image, containerImage(t, &dep[0]))
}

// TestGenerateProvider renders our components with `clusterctl generate provider`, with the
// variables' defaults and with values, checks them, and dry-run applies them.
func TestGenerateProvider(t *testing.T) {
	r := newProviderRepo(t)

	objs := parseObjects(t, r.mustClusterctl(t, nil, "generate", "provider", "--bootstrap", "ignition:"+providerVersion))
	counts := kindCounts(objs)
	for kind, n := range map[string]int{
		"Namespace": 1, "CustomResourceDefinition": 2, "Deployment": 1, "ServiceAccount": 1, "Service": 2,
	} {
		assert.Equal(t, n, counts[kind], "number of %s", kind)
	}
	for _, o := range objs {
		assert.Equal(t, providerName, o.GetLabels()[providerLabel], "%s %s", o.GetKind(), o.GetName())
		if o.GetNamespace() != "" {
			assert.Equal(t, "cabpi-system", o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
		}
	}
	crdNames := []string{}
	for _, crd := range byKind(objs, "CustomResourceDefinition") {
		crdNames = append(crdNames, crd.GetName())
		assert.Equal(t, "v1alpha1", crd.GetLabels()[contractLabel], crd.GetName())
	}
	assert.ElementsMatch(t, []string{"ignitionconfigs.bootstrap.cluster.x-k8s.io", "ignitionconfigtemplates.bootstrap.cluster.x-k8s.io"}, crdNames)

	// Cluster API's controllers get our kinds through the aggregated ClusterRole.
	var aggregated *unstructured.Unstructured
	for _, cr := range byKind(objs, "ClusterRole") {
		if cr.GetLabels()["cluster.x-k8s.io/aggregate-to-manager"] == "true" {
			aggregated = &cr
		}
	}
	require.NotNil(t, aggregated, "no ClusterRole labelled cluster.x-k8s.io/aggregate-to-manager")
	rules, _, _ := unstructured.NestedSlice(aggregated.Object, "rules")
	var resources []string
	for _, rule := range rules {
		m := rule.(map[string]any)
		if slices.Contains(toStrings(m["apiGroups"]), cabpiv1.GroupVersion.Group) {
			resources = append(resources, toStrings(m["resources"])...)
			assert.Subset(t, toStrings(m["verbs"]), []string{"create", "delete", "get", "list", "patch", "update", "watch"})
		}
	}
	assert.Subset(t, resources, []string{"ignitionconfigs", "ignitionconfigtemplates"})

	// The metrics endpoint: the manager's port https behind a Service, and a ClusterRole that
	// lets a scraper get /metrics and nothing else.
	dep := &byKind(objs, "Deployment")[0]
	assert.Contains(t, managerContainer(t, dep)["ports"], map[string]any{"containerPort": float64(8443), "name": "https", "protocol": "TCP"})
	metricsService := find(t, objs, "Service", "cabpi-metrics-service")
	assert.Equal(t, []any{map[string]any{"name": "https", "port": float64(8443), "protocol": "TCP", "targetPort": "https"}},
		nested(t, metricsService, "spec", "ports"))
	assert.Equal(t, nested(t, dep, "spec", "selector", "matchLabels"), nested(t, metricsService, "spec", "selector"))
	assert.Equal(t, []any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}},
		nested(t, find(t, objs, "ClusterRole", "cabpi-metrics-reader"), "rules"))

	// The defaults, and the manager accepts the flags.
	args := containerArgs(t, dep)
	assert.Subset(t, args, []string{"--bootstrap-token-ttl=15m", "--concurrency=10", "--feature-gates=MachinePool=true",
		"--diagnostics-address=:8443", "--insecure-diagnostics=false"})
	assert.Equal(t, image, containerImage(t, dep))
	requireManagerAccepts(t, args)

	// Values from the environment.
	set := parseObjects(t, r.mustClusterctl(t, map[string]string{
		"CABPI_BOOTSTRAP_TOKEN_TTL": "1h", "CABPI_CONCURRENCY": "3", "EXP_MACHINE_POOL": "false",
		"CAPI_DIAGNOSTICS_ADDRESS": ":8080", "CAPI_INSECURE_DIAGNOSTICS": "true",
	}, "generate", "provider", "--bootstrap", "ignition:"+providerVersion))
	args = containerArgs(t, &byKind(set, "Deployment")[0])
	assert.Subset(t, args, []string{"--bootstrap-token-ttl=1h", "--concurrency=3", "--feature-gates=MachinePool=false",
		"--diagnostics-address=:8080", "--insecure-diagnostics=true"})
	requireManagerAccepts(t, args)

	// --describe is what `clusterctl init --list-images` goes through: it parses the images
	// before any variable is substituted.
	describe := r.mustClusterctl(t, nil, "generate", "provider", "--bootstrap", "ignition:"+providerVersion, "--describe")
	vars, images, ok := strings.Cut(describe, "Images:")
	require.True(t, ok, describe)
	_, vars, ok = strings.Cut(vars, "Variables:")
	require.True(t, ok, describe)
	for _, v := range providerVariables {
		assert.Contains(t, vars, "  - "+v+"\n")
	}
	assert.Equal(t, len(providerVariables), strings.Count(vars, "  - "), describe)
	assert.Equal(t, "\n  - "+image+"\n", strings.TrimRight(images, "\n")+"\n")

	// Everything but cert-manager's kinds (clusterctl installs cert-manager; its CRDs are not in
	// this API server) is valid for the API server.
	err := env.Client.Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "cabpi-system"}})
	require.True(t, err == nil || apierrors.IsAlreadyExists(err), "creating namespace cabpi-system: %v", err)
	errs, skipped := dryRunApply(t.Context(), objs, "cert-manager.io")
	for id, err := range errs {
		t.Errorf("dry-run apply of %s: %v", id, err)
	}
	t.Logf("not applied (cert-manager kinds): %v", skipped)
}

// TestGenerateClusterIgnition renders the CAPD flavor "ignition" with three control-plane
// Machines asked for: the template has one (docs/adr/005) and renders without any variable left.
func TestGenerateClusterIgnition(t *testing.T) {
	r := newProviderRepo(t)
	ns := env.CreateNamespace(t, "ignition").Name

	out := r.mustClusterctl(t, nil, "generate", "cluster", "demo",
		"--infrastructure", "docker:"+capiVersion, "--flavor", "ignition", "--kubernetes-version", kubernetesVersion,
		"--control-plane-machine-count", "3", "--worker-machine-count", "2", "--target-namespace", ns)
	objs := parseObjects(t, out)
	assert.Equal(t, map[string]int{
		"Cluster": 1, "DockerCluster": 1,
		"Machine": 1, "DockerMachine": 1, "IgnitionConfig": 1,
		"MachineDeployment": 1, "DockerMachineTemplate": 1, "IgnitionConfigTemplate": 1,
	}, kindCounts(objs))
	requireInNamespace(t, objs, ns)
	requireReferencesResolve(t, objs)

	cluster := find(t, objs, "Cluster", "demo")
	assert.Equal(t, []any{"192.168.0.0/16"}, nested(t, cluster, "spec", "clusterNetwork", "pods", "cidrBlocks"))
	assert.Equal(t, []any{"10.128.0.0/12"}, nested(t, cluster, "spec", "clusterNetwork", "services", "cidrBlocks"))

	cp := find(t, objs, "Machine", "demo-control-plane-0")
	assert.Contains(t, cp.GetLabels(), "cluster.x-k8s.io/control-plane")
	assert.Equal(t, kubernetesVersion, nested(t, cp, "spec", "version"))
	md := find(t, objs, "MachineDeployment", "demo-md-0")
	assert.EqualValues(t, 2, nested(t, md, "spec", "replicas"))
	assert.Equal(t, kubernetesVersion, nested(t, md, "spec", "template", "spec", "version"))

	config := find(t, objs, "IgnitionConfig", "demo-control-plane-0")
	assert.Contains(t, config.GetLabels(), "cluster.x-k8s.io/control-plane")
	template := find(t, objs, "IgnitionConfigTemplate", "demo-md-0")
	assert.Equal(t, "flatcar", nested(t, config, "spec", "variant"))
	assert.Equal(t, "flatcar", nested(t, template, "spec", "template", "spec", "variant"))

	requireDryRunApplied(t, objs)
	// The configs render for every role their Machines can have.
	renderIgnition(t, config, ignition.RoleInit)
	renderIgnition(t, config, ignition.RoleControlPlaneJoin)
	renderIgnition(t, template, ignition.RoleWorkerJoin)

	// IGNITION_VARIANT selects Fedora CoreOS.
	fcos := parseObjects(t, r.mustClusterctl(t, map[string]string{"IGNITION_VARIANT": "fcos"}, "generate", "cluster", "demo",
		"--infrastructure", "docker:"+capiVersion, "--flavor", "ignition", "--kubernetes-version", kubernetesVersion, "--target-namespace", ns))
	config = find(t, fcos, "IgnitionConfig", "demo-control-plane-0")
	template = find(t, fcos, "IgnitionConfigTemplate", "demo-md-0")
	assert.Equal(t, "fcos", nested(t, config, "spec", "variant"))
	assert.Equal(t, "fcos", nested(t, template, "spec", "template", "spec", "variant"))
	// clusterctl's default worker count is 0.
	assert.EqualValues(t, 0, nested(t, find(t, fcos, "MachineDeployment", "demo-md-0"), "spec", "replicas"))
	requireDryRunApplied(t, fcos)
	renderIgnition(t, config, ignition.RoleInit)
	renderIgnition(t, template, ignition.RoleWorkerJoin)
}

// TestGenerateClusterIgnitionKCP renders the CAPD flavor "ignition-kcp" (docs/adr/023): a
// KubeadmControlPlane whose KubeadmConfigs are CABPK's Ignition format, beside cabpi's workers;
// everything is admitted by the CRDs of Cluster API's kubeadm providers and cabpi's webhooks.
func TestGenerateClusterIgnitionKCP(t *testing.T) {
	r := newProviderRepo(t)
	ns := env.CreateNamespace(t, "ignition-kcp").Name

	out := r.mustClusterctl(t, nil, "generate", "cluster", "demo",
		"--infrastructure", "docker:"+capiVersion, "--flavor", "ignition-kcp", "--kubernetes-version", kubernetesVersion,
		"--control-plane-machine-count", "3", "--worker-machine-count", "2", "--target-namespace", ns)
	objs := parseObjects(t, out)
	assert.Equal(t, map[string]int{
		"Cluster": 1, "DockerCluster": 1, "KubeadmControlPlane": 1, "DockerMachineTemplate": 2,
		"MachineDeployment": 1, "IgnitionConfigTemplate": 1,
	}, kindCounts(objs))
	requireInNamespace(t, objs, ns)
	requireReferencesResolve(t, objs)

	cluster := find(t, objs, "Cluster", "demo")
	assert.Equal(t, "KubeadmControlPlane", nested(t, cluster, "spec", "controlPlaneRef", "kind"))
	kcp := find(t, objs, "KubeadmControlPlane", "demo-control-plane")
	assert.EqualValues(t, 3, nested(t, kcp, "spec", "replicas"), "KCP's replicas follow --control-plane-machine-count")
	assert.Equal(t, kubernetesVersion, nested(t, kcp, "spec", "version"))
	assert.Equal(t, "ignition", nested(t, kcp, "spec", "kubeadmConfigSpec", "format"), "CABPK's Ignition format")
	assert.NotEmpty(t, nested(t, kcp, "spec", "kubeadmConfigSpec", "ignition", "containerLinuxConfig", "additionalConfig"))
	md := find(t, objs, "MachineDeployment", "demo-md-0")
	assert.EqualValues(t, 2, nested(t, md, "spec", "replicas"))
	assert.Equal(t, "IgnitionConfigTemplate", nested(t, md, "spec", "template", "spec", "bootstrap", "configRef", "kind"), "cabpi's workers")

	requireDryRunApplied(t, objs)
	renderIgnition(t, find(t, objs, "IgnitionConfigTemplate", "demo-md-0"), ignition.RoleWorkerJoin)
}

// TestGenerateClusterClusterClass renders the CAPD flavor "ignition-clusterclass": clusterctl
// adds ClusterClass "ignition" from the overrides because there is no management cluster.
func TestGenerateClusterClusterClass(t *testing.T) {
	r := newProviderRepo(t)
	ns := env.CreateNamespace(t, "clusterclass").Name

	out := r.mustClusterctl(t, nil, "generate", "cluster", "demo",
		"--infrastructure", "docker:"+capiVersion, "--flavor", "ignition-clusterclass", "--kubernetes-version", kubernetesVersion,
		"--control-plane-machine-count", "3", "--worker-machine-count", "2", "--target-namespace", ns)
	objs := parseObjects(t, out)
	assert.Equal(t, map[string]int{
		"Cluster": 1, "ClusterClass": 1, "DockerClusterTemplate": 1, "KubeadmControlPlaneTemplate": 1,
		"DockerMachineTemplate": 2, "IgnitionConfigTemplate": 1,
	}, kindCounts(objs))
	requireInNamespace(t, objs, ns)

	cluster := find(t, objs, "Cluster", "demo")
	assert.Equal(t, "ignition", nested(t, cluster, "spec", "topology", "classRef", "name"))
	assert.Equal(t, kubernetesVersion, nested(t, cluster, "spec", "topology", "version"))
	assert.EqualValues(t, 3, nested(t, cluster, "spec", "topology", "controlPlane", "replicas"))
	mds := nested(t, cluster, "spec", "topology", "workers", "machineDeployments").([]any)
	require.Len(t, mds, 1)
	assert.Equal(t, "default-worker", mds[0].(map[string]any)["class"])
	assert.EqualValues(t, 2, mds[0].(map[string]any)["replicas"])
	assert.Equal(t, []any{map[string]any{"name": "ignitionVariant", "value": "flatcar"}},
		nested(t, cluster, "spec", "topology", "variables"))

	// The ClusterClass references templates that are all in the output; workers use cabpi, the
	// control plane KubeadmControlPlane.
	class := find(t, objs, "ClusterClass", "ignition")
	refs := map[string][]string{
		"controlPlane":         {"spec", "controlPlane", "templateRef"},
		"controlPlaneInfra":    {"spec", "controlPlane", "machineInfrastructure", "templateRef"},
		"infrastructure":       {"spec", "infrastructure", "templateRef"},
		"workerBootstrap":      {"spec", "workers", "machineDeployments", "0", "bootstrap", "templateRef"},
		"workerInfrastructure": {"spec", "workers", "machineDeployments", "0", "infrastructure", "templateRef"},
	}
	resolved := map[string]*unstructured.Unstructured{}
	for name, path := range refs {
		ref := nestedMap(t, class, path...)
		gv, err := schema.ParseGroupVersion(ref["apiVersion"].(string))
		require.NoError(t, err)
		o := find(t, objs, ref["kind"].(string), ref["name"].(string))
		assert.Equal(t, gv.String(), o.GetAPIVersion(), name)
		resolved[name] = o
	}
	assert.Equal(t, "KubeadmControlPlaneTemplate", resolved["controlPlane"].GetKind())
	assert.Equal(t, "IgnitionConfigTemplate", resolved["workerBootstrap"].GetKind())
	assert.Equal(t, cabpiv1.GroupVersion.String(), resolved["workerBootstrap"].GetAPIVersion())

	// The ignitionVariant patch targets a field the IgnitionConfigTemplate has, with a value the
	// variable's schema allows.
	patches := nested(t, class, "spec", "patches").([]any)
	require.Len(t, patches, 1)
	jp := nestedMap(t, &unstructured.Unstructured{Object: patches[0].(map[string]any)}, "definitions", "0", "jsonPatches", "0")
	assert.Equal(t, "/spec/template/spec/variant", jp["path"])
	assert.Equal(t, "flatcar", nested(t, resolved["workerBootstrap"], "spec", "template", "spec", "variant"))
	variables := nested(t, class, "spec", "variables").([]any)
	require.Len(t, variables, 1)
	schemaEnum := nestedMap(t, &unstructured.Unstructured{Object: variables[0].(map[string]any)}, "schema", "openAPIV3Schema")["enum"]
	assert.ElementsMatch(t, []any{string(cabpiv1.VariantFlatcar), string(cabpiv1.VariantFCOS)}, schemaEnum)

	requireDryRunApplied(t, objs)
	renderIgnition(t, resolved["workerBootstrap"], ignition.RoleWorkerJoin)
}

// TestGenerateClusterVSphere renders the vSphere flavor and checks, through the real renderer,
// that spec.kubernetes (source sysext) puts the Kubernetes sysext of the Machine's version on the
// node, from the bakery's current layout.
func TestGenerateClusterVSphere(t *testing.T) {
	r := newProviderRepo(t)
	ns := env.CreateNamespace(t, "vsphere").Name

	out := r.mustClusterctl(t, vsphereVariables, "generate", "cluster", "demo",
		"--infrastructure", infra["vsphere"].ref(), "--flavor", "ignition-vsphere", "--kubernetes-version", kubernetesVersion,
		"--worker-machine-count", "2", "--target-namespace", ns)
	objs := parseObjects(t, out)
	assert.Equal(t, map[string]int{
		"Cluster": 1, "VSphereCluster": 1, "Secret": 1,
		"Machine": 1, "VSphereMachine": 1, "IgnitionConfig": 1,
		"MachineDeployment": 1, "VSphereMachineTemplate": 1, "IgnitionConfigTemplate": 1,
	}, kindCounts(objs))
	requireInNamespace(t, objs, ns)
	requireReferencesResolve(t, objs)
	assert.Equal(t, "demo", nested(t, find(t, objs, "VSphereCluster", "demo"), "spec", "identityRef", "name"))
	assert.Equal(t, "", nested(t, find(t, objs, "VSphereMachine", "demo-control-plane-0"), "spec", "storagePolicyName"))
	requireDryRunApplied(t, objs)

	sysext := "/opt/extensions/kubernetes/kubernetes-" + kubernetesVersion + "-x86-64.raw"
	source := cabpiv1.DefaultSysextBaseURL + "/kubernetes-" + kubernetesVersion + "-x86-64.raw"
	check := func(cfg ignitionJSON, role ignition.Role) {
		t.Helper()
		f, ok := cfg.file(sysext)
		require.True(t, ok, "%s: no %s", role, sysext)
		assert.Equal(t, source, f.Contents.Source, role)
		link, ok := cfg.link("/etc/extensions/kubernetes.raw")
		require.True(t, ok, "%s: no sysext link", role)
		assert.Equal(t, sysext, link.Target, role)
		assert.False(t, link.Hard, role)
		for _, unit := range []string{"containerd.service", "set-hostname.service", ignition.KubeadmUnitName} {
			u, ok := cfg.unit(unit)
			assert.True(t, ok && u.Enabled != nil && *u.Enabled, "%s: %s not enabled", role, unit)
		}
		script := cfg.fileContent(t, "/opt/bin/set-hostname")
		assert.Contains(t, script, `vmtoolsd=$(find /usr/bin /usr/share/oem`)
		assert.Contains(t, script, `hostnamectl set-hostname "${name}"`)
		assert.Contains(t, script, `{print $2}`)
		require.Len(t, cfg.Passwd.Users, 1)
		assert.Equal(t, []string{vsphereVariables["VSPHERE_SSH_AUTHORIZED_KEY"]}, cfg.Passwd.Users[0].SSHAuthorizedKeys)
	}

	config := find(t, objs, "IgnitionConfig", "demo-control-plane-0")
	assert.Contains(t, config.GetLabels(), "cluster.x-k8s.io/control-plane")
	init := renderIgnition(t, config, ignition.RoleInit)
	check(init, ignition.RoleInit)
	kubeVIP := init.fileContent(t, "/etc/kubernetes/manifests/kube-vip.yaml")
	assert.Contains(t, kubeVIP, `{name: address, value: "10.0.0.10"}`)
	assert.Contains(t, kubeVIP, "image: ghcr.io/kube-vip/kube-vip:v0.8.9")
	assert.Contains(t, kubeVIP, `{name: vip_interface, value: ""}`)
	pod := &corev1.Pod{}
	require.NoError(t, yaml.UnmarshalStrict([]byte(kubeVIP), pod), "kube-vip static pod manifest")
	assert.Contains(t, init.fileContent(t, ignition.KubeadmScriptPath),
		"if grep -q '^kind: InitConfiguration' /etc/kubeadm.yml; then sed -i")
	assert.Contains(t, init.fileContent(t, ignition.KubeadmConfigPath), "kind: InitConfiguration")
	check(renderIgnition(t, config, ignition.RoleControlPlaneJoin), ignition.RoleControlPlaneJoin)
	check(renderIgnition(t, find(t, objs, "IgnitionConfigTemplate", "demo-md-0"), ignition.RoleWorkerJoin), ignition.RoleWorkerJoin)
}

// TestListVariables checks the variables each flavor asks for, and that templates/README.md
// documents every variable of the templates and of the components.
func TestListVariables(t *testing.T) {
	r := newProviderRepo(t)
	readme, err := os.ReadFile(filepath.Join(repoRoot, "templates", "README.md"))
	require.NoError(t, err)
	documented := map[string]bool{}
	for _, m := range regexp.MustCompile("`([A-Z][A-Z0-9_]+)`").FindAllStringSubmatch(string(readme), -1) {
		documented[m[1]] = true
	}

	all := slices.Clone(providerVariables)
	type flavorVariables struct {
		infra, flavor string
		required      []string
	}
	flavors := []flavorVariables{
		{"docker:" + capiVersion, "ignition", []string{"KUBERNETES_VERSION"}},
		{"docker:" + capiVersion, "ignition-clusterclass", []string{"KUBERNETES_VERSION"}},
		{"docker:" + capiVersion, "ignition-kcp", []string{"KUBERNETES_VERSION"}},
	}
	for _, f := range cloudFlavors {
		flavors = append(flavors, flavorVariables{infra[f.infra].ref(), f.flavor, append(keys(f.variables), "KUBERNETES_VERSION")})
	}
	for _, tc := range flavors {
		out := r.mustClusterctl(t, nil, "generate", "cluster", "demo", "--infrastructure", tc.infra,
			"--flavor", tc.flavor, "--target-namespace", "default", "--list-variables")
		required, optional := listVariables(t, out)
		slices.Sort(tc.required)
		assert.Equal(t, tc.required, required, "required variables of %s", tc.flavor)
		assert.Contains(t, optional, "CLUSTER_NAME", tc.flavor)
		all = append(append(all, required...), optional...)
	}
	for _, v := range all {
		assert.True(t, documented[v], "variable %s is not documented in templates/README.md", v)
	}
}

// TestDryRunRejectsInvalidObjects shows that the dry-run apply used above validates: an unknown
// field and a bad enum value in a rendered object are errors.
func TestDryRunRejectsInvalidObjects(t *testing.T) {
	ns := env.CreateNamespace(t, "invalid").Name
	for name, mutate := range map[string]func(*unstructured.Unstructured){
		"unknown field": func(u *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(u.Object, "x", "spec", "notAField"))
		},
		"bad variant": func(u *unstructured.Unstructured) {
			require.NoError(t, unstructured.SetNestedField(u.Object, "ubuntu", "spec", "variant"))
		},
	} {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": cabpiv1.GroupVersion.String(), "kind": "IgnitionConfig",
			"metadata": map[string]any{"name": "c", "namespace": ns},
			"spec":     map[string]any{"variant": "flatcar"},
		}}
		errs, _ := dryRunApply(t.Context(), []unstructured.Unstructured{*u})
		require.Empty(t, errs, "the valid object must apply")
		mutate(u)
		errs, _ = dryRunApply(t.Context(), []unstructured.Unstructured{*u})
		assert.Len(t, errs, 1, name)
	}
}

// --- helpers -------------------------------------------------------------------------------

func containerArgs(t *testing.T, dep *unstructured.Unstructured) []string {
	t.Helper()
	return toStrings(managerContainer(t, dep)["args"])
}

func containerImage(t *testing.T, dep *unstructured.Unstructured) string {
	t.Helper()
	img, _ := managerContainer(t, dep)["image"].(string)
	return img
}

func managerContainer(t *testing.T, dep *unstructured.Unstructured) map[string]any {
	t.Helper()
	containers, _, err := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	require.NoError(t, err)
	for _, c := range containers {
		if m := c.(map[string]any); m["name"] == "manager" {
			return m
		}
	}
	t.Fatalf("no manager container in Deployment %s", dep.GetName())
	return nil
}

// requireManagerAccepts parses args with the manager's real flag set: --help at the end stops
// it after parsing, so it returns pflag.ErrHelp only when every flag before it is valid.
func requireManagerAccepts(t *testing.T, args []string) {
	t.Helper()
	// --feature-gates sets Cluster API's process-wide gates: restore them.
	machinePool := feature.Gates.Enabled(feature.MachinePool)
	defer func() {
		require.NoError(t, feature.MutableGates.SetFromMap(map[string]bool{string(feature.MachinePool): machinePool}))
	}()
	stderr := os.Stderr
	devNull, err := os.Open(os.DevNull)
	require.NoError(t, err)
	defer devNull.Close()
	os.Stderr = devNull // pflag prints the usage
	_, _, err = setup.ParseCommandLine(append(slices.Clone(args), "--help"))
	os.Stderr = stderr
	require.True(t, errors.Is(err, pflag.ErrHelp), "manager flags %v: %v", args, err)
}

func toStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, s := range l {
		out = append(out, s.(string))
	}
	return out
}

func keys(m map[string]string) []string { return slices.Collect(maps.Keys(m)) }

func nested(t *testing.T, u *unstructured.Unstructured, path ...string) any {
	t.Helper()
	var cur any = u.Object
	for _, p := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[p]
			require.True(t, ok, "%s %s: no %s", u.GetKind(), u.GetName(), strings.Join(path, "."))
			cur = v
		case []any:
			idx := 0
			for _, ch := range p {
				require.True(t, ch >= '0' && ch <= '9', "%s: %s is not an index", strings.Join(path, "."), p)
				idx = idx*10 + int(ch-'0')
			}
			require.Less(t, idx, len(c), "%s %s: %s", u.GetKind(), u.GetName(), strings.Join(path, "."))
			cur = c[idx]
		default:
			t.Fatalf("%s %s: %s is not an object", u.GetKind(), u.GetName(), strings.Join(path, "."))
		}
	}
	return cur
}

func nestedMap(t *testing.T, u *unstructured.Unstructured, path ...string) map[string]any {
	t.Helper()
	m, ok := nested(t, u, path...).(map[string]any)
	require.True(t, ok, "%s %s: %s is not an object", u.GetKind(), u.GetName(), strings.Join(path, "."))
	return m
}

func requireInNamespace(t *testing.T, objs []unstructured.Unstructured, ns string) {
	t.Helper()
	for _, o := range objs {
		assert.Equal(t, ns, o.GetNamespace(), "%s %s", o.GetKind(), o.GetName())
	}
}

// requireReferencesResolve checks that the Cluster's, Machines' and MachineDeployments'
// references (Cluster API v1beta2: apiGroup, kind, name) name objects of the output.
func requireReferencesResolve(t *testing.T, objs []unstructured.Unstructured) {
	t.Helper()
	paths := map[string][][]string{
		"Cluster":           {{"spec", "infrastructureRef"}},
		"Machine":           {{"spec", "infrastructureRef"}, {"spec", "bootstrap", "configRef"}},
		"MachineDeployment": {{"spec", "template", "spec", "infrastructureRef"}, {"spec", "template", "spec", "bootstrap", "configRef"}},
	}
	n := 0
	for i := range objs {
		o := &objs[i]
		for _, path := range paths[o.GetKind()] {
			ref := nestedMap(t, o, path...)
			target := find(t, objs, ref["kind"].(string), ref["name"].(string))
			assert.Equal(t, ref["apiGroup"], target.GroupVersionKind().Group, "%s %s %s", o.GetKind(), o.GetName(), strings.Join(path, "."))
			n++
		}
	}
	assert.Positive(t, n)
}

// ignitionJSON is the part of an Ignition 3.x config the tests look at.
type ignitionJSON struct {
	Ignition struct {
		Version string `json:"version"`
	} `json:"ignition"`
	Passwd struct {
		Users []struct {
			Name              string   `json:"name"`
			SSHAuthorizedKeys []string `json:"sshAuthorizedKeys"`
		} `json:"users"`
	} `json:"passwd"`
	Storage struct {
		Files []ignitionFile `json:"files"`
		Links []ignitionLink `json:"links"`
	} `json:"storage"`
	Systemd struct {
		Units []ignitionUnit `json:"units"`
	} `json:"systemd"`
	// contents are what the files hold once written (ignition.ReadFiles), compressed as they may be.
	contents map[string][]byte
}

type ignitionFile struct {
	Path     string `json:"path"`
	Contents struct {
		Source string `json:"source"`
	} `json:"contents"`
}

type ignitionLink struct {
	Path   string `json:"path"`
	Target string `json:"target"`
	Hard   bool   `json:"hard"`
}

type ignitionUnit struct {
	Name    string `json:"name"`
	Enabled *bool  `json:"enabled"`
}

func (c ignitionJSON) file(path string) (ignitionFile, bool) {
	for _, f := range c.Storage.Files {
		if f.Path == path {
			return f, true
		}
	}
	return ignitionFile{}, false
}

func (c ignitionJSON) fileContent(t *testing.T, path string) string {
	t.Helper()
	_, ok := c.file(path)
	require.True(t, ok, "no file %s", path)
	content, ok := c.contents[path]
	require.True(t, ok, "%s is not a data URL", path)
	return string(content)
}

func (c ignitionJSON) link(path string) (ignitionLink, bool) {
	for _, l := range c.Storage.Links {
		if l.Path == path {
			return l, true
		}
	}
	return ignitionLink{}, false
}

func (c ignitionJSON) unit(name string) (ignitionUnit, bool) {
	for _, u := range c.Systemd.Units {
		if u.Name == name {
			return u, true
		}
	}
	return ignitionUnit{}, false
}

// renderIgnition renders an IgnitionConfig or IgnitionConfigTemplate of the output for role with
// cabpi's renderer (the controller's, with placeholder credentials: `cabpi render`). The object is
// decoded strictly: a field the API does not have is an error.
func renderIgnition(t *testing.T, u *unstructured.Unstructured, role ignition.Role) ignitionJSON {
	t.Helper()
	var spec *cabpiv1.IgnitionConfigSpec
	switch u.GetKind() {
	case "IgnitionConfig":
		c := &cabpiv1.IgnitionConfig{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, c, true))
		spec = &c.Spec
	case "IgnitionConfigTemplate":
		c := &cabpiv1.IgnitionConfigTemplate{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, c, true))
		spec = &c.Spec.Template.Spec
	default:
		t.Fatalf("cannot render a %s", u.GetKind())
	}
	out, err := configinput.RenderOffline(t.Context(), spec, role, kubernetesVersion, io.Discard)
	require.NoError(t, err, "rendering %s %s as %s", u.GetKind(), u.GetName(), role)
	return parseRendered(t, out)
}

// parseRendered reads rendered data: the config (unwrapped where it was wrapped) and its files.
func parseRendered(t *testing.T, out ignition.Output) ignitionJSON {
	t.Helper()
	config, err := ignition.Unwrap(out.Data)
	require.NoError(t, err)
	var cfg ignitionJSON
	require.NoError(t, json.Unmarshal(config, &cfg))
	require.True(t, strings.HasPrefix(cfg.Ignition.Version, "3."), cfg.Ignition.Version)
	cfg.contents, err = ignition.ReadFiles(out.Data)
	require.NoError(t, err)
	return cfg
}
