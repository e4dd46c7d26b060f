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

package inplace_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/blang/semver/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"
	"sigs.k8s.io/cluster-api/util/test/builder"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// TestCabpiExtensionDiscovered: the ExtensionConfig the suite created before the Manager started
// (as the e2e suite does) was discovered at warm-up, when cabpi's extension server started in
// the same Manager, and registered its two handlers.
func TestCabpiExtensionDiscovered(t *testing.T) {
	ctx := t.Context()
	handlers, err := env.WaitForExtension(ctx, cabpiExtensionConfig, timeout)
	require.NoError(t, err)
	assert.Equal(t, []string{
		inplace.CanUpdateMachineSetHandler + "." + cabpiExtensionConfig,
		inplace.UpdateMachineHandler + "." + cabpiExtensionConfig,
	}, handlers)
	assert.Equal(t, []string{"can-update-machineset.cabpi", "update-machine.cabpi"}, handlers,
		"the handler names ADR 038 and the guide document: no CanUpdateMachine, which only control planes call")

	ec := &runtimev1.ExtensionConfig{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Name: cabpiExtensionConfig}, ec))
	hooks := map[string]runtimev1.ExtensionHandler{}
	for _, h := range ec.Status.Handlers {
		hooks[h.RequestHook.Hook] = h
	}
	assert.Equal(t, runtimehooksv1.GroupVersion.String(), hooks["CanUpdateMachineSet"].RequestHook.APIVersion)
	assert.Equal(t, int32(30), hooks["UpdateMachine"].TimeoutSeconds, "UpdateMachine's own timeout")
	assert.Equal(t, int32(runtimehooksv1.DefaultHandlersTimeoutSeconds), hooks["CanUpdateMachineSet"].TimeoutSeconds)
	assert.NotContains(t, hooks, "CanUpdateMachine", "cabpi leaves KubeadmControlPlane's hook to control-plane extensions")
	for _, h := range ec.Status.Handlers {
		assert.Equal(t, runtimev1.FailurePolicyFail, h.FailurePolicy, h.Name)
	}

	// GetAllExtensions is how Cluster API's MachineDeployment and Machine reconcilers find them.
	ms := &clusterv1.MachineSet{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "ms"}}
	names, err := env.RuntimeClient.GetAllExtensions(ctx, runtimehooksv1.CanUpdateMachineSet, ms)
	require.NoError(t, err)
	assert.Equal(t, []string{"can-update-machineset.cabpi"}, names)
}

// TestCanUpdateMachineSet calls cabpi's CanUpdateMachineSet as Cluster API's MachineDeployment
// reconciler does (CallExtension with the old MachineSet), for a MachineSet whose version
// changes. The extension checks the version skew against the workload cluster's API server,
// which for a Cluster with a kubeconfig Secret is the envtest API server (testenv's workload
// cluster); without one the version is not known.
func TestCanUpdateMachineSet(t *testing.T) {
	apiServer := workloadAPIServerVersion(t)
	previousMinor := fmt.Sprintf("v%d.%d.0", apiServer.Major, apiServer.Minor-1)
	nextMinor := fmt.Sprintf("v%d.%d.0", apiServer.Major, apiServer.Minor+1)
	for _, tc := range []struct {
		name string
		// workload: the Cluster has a workload cluster the ClusterCache reaches.
		workload bool
		// controlPlaneMachine: the Cluster has a control-plane Machine at this version.
		controlPlaneMachine string
		source              cabpiv1.KubernetesSource
		current, desired    string
		wantPatch           bool
		// wantFailure: the extension cannot read what it decides from and answers Failure, which
		// Cluster API asks again (a "cannot" without a patch it keeps for a day, and replaces
		// the Machines).
		wantFailure bool
		wantMessage string
	}{
		{
			name: "sysext, to the API server's version", workload: true, source: cabpiv1.KubernetesSourceSysext,
			current: previousMinor, desired: "v" + apiServer.String(), wantPatch: true, wantMessage: "cabpi updates this change in place",
		},
		{
			name: "sysext, no workload cluster", source: cabpiv1.KubernetesSourceSysext,
			current: previousMinor, desired: "v" + apiServer.String(), wantFailure: true, wantMessage: "cannot be reached yet",
		},
		{
			name: "sysext, newer than the API server", workload: true, source: cabpiv1.KubernetesSourceSysext,
			current: "v" + apiServer.String(), desired: nextMinor, wantMessage: "is newer than the control plane's",
		},
		{
			// The bound is the control-plane Machines' lowest version, not what one API
			// server says (mid-rollout, the older servers bound the kubelets).
			name: "sysext, newer than a control-plane Machine", workload: true, source: cabpiv1.KubernetesSourceSysext,
			controlPlaneMachine: previousMinor, current: previousMinor, desired: "v" + apiServer.String(),
			wantMessage: "is newer than the control plane's " + previousMinor,
		},
		{
			name: "image", workload: true, source: cabpiv1.KubernetesSourceImage,
			current: previousMinor, desired: "v" + apiServer.String(), wantMessage: `spec.kubernetes.source is "image"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			_, err := env.WaitForExtension(ctx, cabpiExtensionConfig, timeout)
			require.NoError(t, err)
			ns := env.CreateNamespace(t, "canupdate").Name
			cluster := createCluster(t, ns, "c", tc.workload)
			if tc.controlPlaneMachine != "" {
				f := &fixtures.Cluster{Kit: &fixtures.Kit{Env: env}, Namespace: ns, Cluster: cluster}
				f.AddMachine(t, "cp", true, sysextConfigSpec(), func(m *clusterv1.Machine) { m.Spec.Version = tc.controlPlaneMachine })
			}

			oldMS := newMachineSet(cluster, "md-old", tc.current)
			newMS := newMachineSet(cluster, "md-new", tc.desired)
			template := ignitionConfigTemplate(ns, "md", tc.source)
			req := &runtimehooksv1.CanUpdateMachineSetRequest{
				Current: runtimehooksv1.CanUpdateMachineSetRequestObjects{
					MachineSet:                    *oldMS,
					InfrastructureMachineTemplate: genericInfraMachineTemplate(ns, "md"),
					BootstrapConfigTemplate:       runtime.RawExtension{Object: template},
				},
				Desired: runtimehooksv1.CanUpdateMachineSetRequestObjects{
					MachineSet:                    *newMS,
					InfrastructureMachineTemplate: genericInfraMachineTemplate(ns, "md"),
					BootstrapConfigTemplate:       runtime.RawExtension{Object: template.DeepCopy()},
				},
			}
			resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
			err = env.RuntimeClient.CallExtension(ctx, runtimehooksv1.CanUpdateMachineSet, oldMS,
				"can-update-machineset."+cabpiExtensionConfig, req, resp)
			if tc.wantFailure {
				// Cluster API's runtime client (and the suite's) makes a Failure an error.
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantMessage)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.GetStatus())
			assert.Contains(t, resp.GetMessage(), tc.wantMessage)
			assert.False(t, resp.BootstrapConfigTemplatePatch.IsDefined(), "the baseURL did not change")
			if !tc.wantPatch {
				assert.False(t, resp.MachineSetPatch.IsDefined(), "machineSetPatch: %s", resp.MachineSetPatch.Patch)
				return
			}
			require.True(t, resp.MachineSetPatch.IsDefined())
			assert.Equal(t, runtimehooksv1.JSONMergePatchType, resp.MachineSetPatch.PatchType)
			var patch map[string]any
			require.NoError(t, json.Unmarshal(resp.MachineSetPatch.Patch, &patch))
			version, _, err := unstructured.NestedString(patch, "spec", "template", "spec", "version")
			require.NoError(t, err)
			assert.Equal(t, tc.desired, version, "the patch takes the version change")
		})
	}
}

// workloadAPIServerVersion is the version of the envtest API server, every Cluster's workload
// cluster here.
func workloadAPIServerVersion(t *testing.T) semver.Version {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	require.NoError(t, err)
	info, err := dc.ServerVersion()
	require.NoError(t, err)
	v, err := semver.ParseTolerant(info.GitVersion)
	require.NoError(t, err, "the envtest API server's version %q", info.GitVersion)
	require.Positive(t, v.Minor)
	return v
}

// createCluster creates a Cluster; with workload, one whose workload cluster (the envtest API
// server, through its kubeconfig Secret) the ClusterCache has connected to, which the extension
// asks for the API server's version.
func createCluster(t *testing.T, ns, name string, workload bool) *clusterv1.Cluster {
	t.Helper()
	ctx := t.Context()
	if !workload {
		cluster, err := env.CreateCluster(ctx, ns, name)
		require.NoError(t, err)
		require.NoError(t, fixtures.CreateDigests(ctx, env.Client, ns, name))
		return cluster
	}
	cluster, err := env.CreateJoinableCluster(ctx, ns, name)
	require.NoError(t, err)
	require.NoError(t, fixtures.CreateDigests(ctx, env.Client, ns, name))
	require.NoError(t, env.WaitForClusterCacheConnected(ctx, cluster, timeout))
	return cluster
}

// newMachineSet is a MachineSet of cluster at version, as a MachineDeployment makes it.
func newMachineSet(cluster *clusterv1.Cluster, name, version string) *clusterv1.MachineSet {
	md := testenv.NewMachineDeployment(cluster, "md", 1)
	md.Spec.Template.Spec.Version = version
	return &clusterv1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: name, Labels: md.Spec.Template.Labels},
		Spec: clusterv1.MachineSetSpec{
			ClusterName: cluster.Name,
			Replicas:    ptr.To[int32](1),
			Selector:    md.Spec.Selector,
			Template:    md.Spec.Template,
		},
	}
}

// ignitionConfigTemplate is the MachineSets' bootstrap config template, with its apiVersion and
// kind (the extension tells an IgnitionConfigTemplate by them, as Cluster API sends it).
func ignitionConfigTemplate(ns, name string, source cabpiv1.KubernetesSource) *cabpiv1.IgnitionConfigTemplate {
	t := &cabpiv1.IgnitionConfigTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	t.SetGroupVersionKind(cabpiv1.GroupVersion.WithKind("IgnitionConfigTemplate"))
	t.Spec.Template.Spec.Kubernetes.Source = source
	if source == cabpiv1.KubernetesSourceSysext {
		t.Spec.Template.Spec.Kubernetes.Sysext = &cabpiv1.SysextSource{}
		t.Spec.Template.Spec.Kubernetes.DigestsFrom = fixtures.Digests
	}
	return t
}

func genericInfraMachineTemplate(ns, name string) runtime.RawExtension {
	return runtime.RawExtension{Object: builder.InfrastructureMachineTemplate(ns, name).Build()}
}
