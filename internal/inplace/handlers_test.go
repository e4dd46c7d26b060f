package inplace

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

func templateRaw(t *testing.T, spec *cabpiv1.IgnitionConfigSpec) runtime.RawExtension {
	t.Helper()
	tpl := &cabpiv1.IgnitionConfigTemplate{Spec: cabpiv1.IgnitionConfigTemplateSpec{Template: cabpiv1.IgnitionConfigTemplateResource{Spec: *spec}}}
	tpl.SetGroupVersionKind(templateKind)
	tpl.Name = "workers"
	data, err := json.Marshal(tpl)
	require.NoError(t, err)
	return runtime.RawExtension{Raw: data}
}

func machineSet(version string) clusterv1.MachineSet {
	ms := clusterv1.MachineSet{}
	ms.Name = "workers"
	ms.Spec.Template.Spec.Version = version
	return ms
}

// applied applies a hook's patch to raw as Cluster API does (the whole object), then returns
// what is below spec.template.spec, the part Cluster API compares.
func applied(t *testing.T, raw []byte, p runtimehooksv1.Patch) map[string]any {
	t.Helper()
	if p.IsDefined() {
		require.Equal(t, runtimehooksv1.JSONMergePatchType, p.PatchType)
		var err error
		raw, err = jsonpatch.MergePatch(raw, p.Patch)
		require.NoError(t, err)
	}
	var obj map[string]any
	require.NoError(t, json.Unmarshal(raw, &obj))
	for _, field := range []string{"spec", "template", "spec"} {
		next, _ := obj[field].(map[string]any)
		obj = next
	}
	return obj
}

// CanUpdateMachineSet as Cluster API uses it: after the patches, current equals desired exactly
// when everything is taken in place; a Butane change is never covered.
func TestCanUpdateMachineSet(t *testing.T) {
	const cp = "v1.34.4"
	butane := sysextSpec("https://b.example/ext")
	butane.Butane.Inline = "variant: flatcar\nversion: 1.0.0\n"
	tests := []struct {
		name                 string
		current, desired     string
		currentSpec, desSpec *cabpiv1.IgnitionConfigSpec
		inPlace              bool
		messageContains      string
	}{
		{"version", "v1.33.13", "v1.34.4", sysextSpec(""), sysextSpec(""), true, "in place"},
		{"version and mirror", "v1.33.13", "v1.34.4", sysextSpec("https://a.example/ext"), sysextSpec("https://b.example/ext"), true, "in place"},
		{"mirror to the default", "v1.34.4", "v1.34.4", binariesSpec("https://a.example/r"), binariesSpec(""), true, "in place"},
		{"butane", "v1.33.13", "v1.34.4", sysextSpec("https://b.example/ext"), butane, false, "spec.butane"},
		{"image source", "v1.33.13", "v1.34.4", &cabpiv1.IgnitionConfigSpec{}, &cabpiv1.IgnitionConfigSpec{}, false, "image"},
		{"newer than the control plane", "v1.34.4", "v1.35.0", sysextSpec(""), sysextSpec(""), false, "newer than the control plane"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &runtimehooksv1.CanUpdateMachineSetRequest{}
			req.Current.MachineSet, req.Desired.MachineSet = machineSet(tt.current), machineSet(tt.desired)
			req.Current.BootstrapConfigTemplate = templateRaw(t, tt.currentSpec)
			req.Desired.BootstrapConfigTemplate = templateRaw(t, tt.desSpec)
			resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
			canUpdateMachineSet(req, resp, func() (string, error) { return cp, nil })
			require.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.Status, resp.Message)
			assert.Contains(t, resp.Message, tt.messageContains)

			currentMS, err := json.Marshal(req.Current.MachineSet)
			require.NoError(t, err)
			desiredMS, err := json.Marshal(req.Desired.MachineSet)
			require.NoError(t, err)
			msMatches := assert.ObjectsAreEqual(applied(t, desiredMS, runtimehooksv1.Patch{}), applied(t, currentMS, resp.MachineSetPatch))
			templateMatches := assert.ObjectsAreEqual(applied(t, req.Desired.BootstrapConfigTemplate.Raw, runtimehooksv1.Patch{}),
				applied(t, req.Current.BootstrapConfigTemplate.Raw, resp.BootstrapConfigTemplatePatch))
			assert.Equal(t, tt.inPlace, msMatches && templateMatches, "after the patches, current equals desired")
			if !tt.inPlace {
				assert.True(t, strings.HasPrefix(resp.Message, "cabpi declines"), resp.Message)
			}
		})
	}
}

// A bootstrap config that is not cabpi's is not cabpi's to update.
func TestCanUpdateMachineOtherBootstrap(t *testing.T) {
	req := &runtimehooksv1.CanUpdateMachineRequest{}
	req.Current.Machine.Spec.Version, req.Desired.Machine.Spec.Version = "v1.33.13", "v1.34.4"
	other := []byte(`{"apiVersion":"bootstrap.cluster.x-k8s.io/v1beta2","kind":"KubeadmConfig","metadata":{"name":"x"},"spec":{}}`)
	req.Current.BootstrapConfig, req.Desired.BootstrapConfig = runtime.RawExtension{Raw: other}, runtime.RawExtension{Raw: other}
	resp := &runtimehooksv1.CanUpdateMachineResponse{}
	// Its workload cluster cannot be reached: that does not matter to a config cabpi does not own.
	canUpdateMachine(req, resp, func() (string, error) { return "", errors.New("not connected") })
	assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.Status)
	assert.False(t, resp.MachinePatch.IsDefined())
	assert.Contains(t, resp.Message, "not an IgnitionConfig")
}

// A CanUpdate hook whose inputs cannot be read answers Failure, which Cluster API asks again,
// never a "cannot" without a patch, which it keeps for a day and answers by replacing every
// Machine; and it reads the control plane's version only for a version change it could take.
func TestCanUpdateMachineSetControlPlaneNotReachable(t *testing.T) {
	notConnected := func() (string, error) { return "", errors.New("the workload cluster is not connected yet") }
	tests := []struct {
		name                 string
		current, desired     string
		currentSpec, desSpec *cabpiv1.IgnitionConfigSpec
		wantStatus           runtimehooksv1.ResponseStatus
	}{
		{"a version change: the skew cannot be checked", "v1.33.13", "v1.34.4", sysextSpec(""), sysextSpec(""), runtimehooksv1.ResponseStatusFailure},
		{"the mirror alone: no version to check", "v1.34.4", "v1.34.4", sysextSpec("https://a.example/ext"), sysextSpec(""), runtimehooksv1.ResponseStatusSuccess},
		{"image source: declined whatever the version", "v1.33.13", "v1.34.4", &cabpiv1.IgnitionConfigSpec{}, &cabpiv1.IgnitionConfigSpec{}, runtimehooksv1.ResponseStatusSuccess},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &runtimehooksv1.CanUpdateMachineSetRequest{}
			req.Current.MachineSet, req.Desired.MachineSet = machineSet(tt.current), machineSet(tt.desired)
			req.Current.BootstrapConfigTemplate = templateRaw(t, tt.currentSpec)
			req.Desired.BootstrapConfigTemplate = templateRaw(t, tt.desSpec)
			resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
			canUpdateMachineSet(req, resp, notConnected)
			assert.Equal(t, tt.wantStatus, resp.Status, resp.Message)
			if tt.wantStatus == runtimehooksv1.ResponseStatusFailure {
				assert.Contains(t, resp.Message, "not connected yet")
				assert.False(t, resp.MachineSetPatch.IsDefined())
				assert.False(t, resp.BootstrapConfigTemplatePatch.IsDefined())
			}
		})
	}
}

// Cluster API's marks of an update it runs: both are needed, whatever else is pending.
func TestUpdateRequested(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        bool
	}{
		{"none", nil, false},
		{"in progress, no hook pending", map[string]string{clusterv1.UpdateInProgressAnnotation: ""}, false},
		{"hook pending, not in progress", map[string]string{runtimev1.PendingHooksAnnotation: "UpdateMachine"}, false},
		{"both", map[string]string{clusterv1.UpdateInProgressAnnotation: "", runtimev1.PendingHooksAnnotation: "UpdateMachine"}, true},
		{"among other hooks", map[string]string{clusterv1.UpdateInProgressAnnotation: "", runtimev1.PendingHooksAnnotation: "AfterClusterUpgrade, UpdateMachine"}, true},
		{"another hook only", map[string]string{clusterv1.UpdateInProgressAnnotation: "", runtimev1.PendingHooksAnnotation: "UpdateMachineSet,CanUpdateMachine"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &clusterv1.Machine{}
			m.Annotations = tt.annotations
			assert.Equal(t, tt.want, updateRequested(m))
		})
	}
}

// The update Job: one per node whatever its name's length, pinned to it, the node side's
// failure not retried.
func TestUpdateJob(t *testing.T) {
	long := strings.Repeat("n", 253)
	assert.LessOrEqual(t, len(jobName(long)), 63)
	assert.NotEqual(t, jobName("a"), jobName("b"))
	args, err := updateNodeArgs(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
		Binaries: &cabpiv1.BinariesSource{BaseURL: "https://mirror.example/release", Kubectl: true}}, "v1.34.4")
	require.NoError(t, err)
	assert.Equal(t, []string{"update-node", "--version=v1.34.4", "--source=binaries", "--arch=amd64",
		"--base-url=https://mirror.example/release", "--kubectl"}, args)
	_, err = updateNodeArgs(cabpiv1.KubernetesSpec{}, "v1.34.4")
	assert.Error(t, err, "the image source cannot be updated in place")

	job := updateJob("node-1", "v1.34.4", "example.invalid/cabpi:v1", args)
	pod := job.Spec.Template.Spec
	assert.Equal(t, "node-1", pod.NodeName)
	assert.True(t, pod.HostNetwork)
	assert.Equal(t, int64(0), *pod.SecurityContext.RunAsUser)
	assert.Equal(t, "v1.34.4", job.Annotations[VersionAnnotation])
	require.Len(t, job.Spec.PodFailurePolicy.Rules, 1)
	assert.Equal(t, []int32{1}, job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values)
}
