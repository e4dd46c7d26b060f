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

package inplace

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodeupdate"
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

// withKubectl has the binaries source install kubectl too.
func withKubectl(spec *cabpiv1.IgnitionConfigSpec) *cabpiv1.IgnitionConfigSpec {
	if spec.Kubernetes.Binaries == nil {
		spec.Kubernetes.Binaries = &cabpiv1.BinariesSource{}
	}
	spec.Kubernetes.Binaries.Kubectl = true
	return spec
}

// canUpdateRequest is a CanUpdateMachineSet request for a MachineSet of IgnitionConfigTemplates
// from current to desired.
func canUpdateRequest(t *testing.T, current, desired string, currentSpec, desiredSpec *cabpiv1.IgnitionConfigSpec) *runtimehooksv1.CanUpdateMachineSetRequest {
	t.Helper()
	req := &runtimehooksv1.CanUpdateMachineSetRequest{}
	req.Current.MachineSet, req.Desired.MachineSet = machineSet(current), machineSet(desired)
	req.Current.BootstrapConfigTemplate = templateRaw(t, currentSpec)
	req.Desired.BootstrapConfigTemplate = templateRaw(t, desiredSpec)
	return req
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
		{"mirror from the default", "v1.34.4", "v1.34.4", sysextSpec(""), sysextSpec("https://b.example/ext"), true, "in place"},
		// A merge patch merges nested objects: a baseURL cleared beside a field kept is set to null.
		{"mirror cleared, kubectl kept", "v1.34.4", "v1.34.4", withKubectl(binariesSpec("https://a.example/r")), withKubectl(binariesSpec("")), true, "in place"},
		{"mirror set, kubectl kept", "v1.33.13", "v1.34.4", withKubectl(binariesSpec("")), withKubectl(binariesSpec("https://b.example/r")), true, "in place"},
		{"butane", "v1.33.13", "v1.34.4", sysextSpec("https://b.example/ext"), butane, false, "spec.butane"},
		{"image source", "v1.33.13", "v1.34.4", &cabpiv1.IgnitionConfigSpec{}, &cabpiv1.IgnitionConfigSpec{}, false, "image"},
		{"newer than the control plane", "v1.34.4", "v1.35.0", sysextSpec(""), sysextSpec(""), false, "newer than the control plane"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := canUpdateRequest(t, tt.current, tt.desired, tt.currentSpec, tt.desSpec)
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

// A bootstrap config template that is not cabpi's is not cabpi's to update, whether or not its
// workload cluster can be reached.
func TestCanUpdateMachineSetOtherBootstrap(t *testing.T) {
	req := &runtimehooksv1.CanUpdateMachineSetRequest{}
	req.Current.MachineSet, req.Desired.MachineSet = machineSet("v1.33.13"), machineSet("v1.34.4")
	other := []byte(`{"apiVersion":"bootstrap.cluster.x-k8s.io/v1beta2","kind":"KubeadmConfigTemplate","metadata":{"name":"x"},"spec":{"template":{"spec":{}}}}`)
	req.Current.BootstrapConfigTemplate, req.Desired.BootstrapConfigTemplate = runtime.RawExtension{Raw: other}, runtime.RawExtension{Raw: other}
	resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
	canUpdateMachineSet(req, resp, func() (string, error) { return "", errors.New("not connected") })
	assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.Status)
	assert.False(t, resp.MachineSetPatch.IsDefined())
	assert.Contains(t, resp.Message, "not an IgnitionConfig")
}

// A MachineDeployment of control-plane Machines (Cluster API's label on its template) is
// declined: cabpi renders a control-plane join for them, and the node side updates workers.
func TestCanUpdateMachineSetDeclinesControlPlaneMachines(t *testing.T) {
	req := &runtimehooksv1.CanUpdateMachineSetRequest{}
	req.Current.MachineSet, req.Desired.MachineSet = machineSet("v1.33.13"), machineSet("v1.34.4")
	for _, ms := range []*clusterv1.MachineSet{&req.Current.MachineSet, &req.Desired.MachineSet} {
		ms.Spec.Template.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
	}
	req.Current.BootstrapConfigTemplate, req.Desired.BootstrapConfigTemplate = templateRaw(t, sysextSpec("")), templateRaw(t, sysextSpec(""))
	resp := &runtimehooksv1.CanUpdateMachineSetResponse{}
	canUpdateMachineSet(req, resp, func() (string, error) { return "v1.34.4", nil })
	assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.Status)
	assert.False(t, resp.MachineSetPatch.IsDefined(), "the version is not taken")
	assert.Contains(t, resp.Message, "control-plane nodes are not updated in place")
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
			req := canUpdateRequest(t, tt.current, tt.desired, tt.currentSpec, tt.desSpec)
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
	assert.LessOrEqual(t, len(jobName("0b9a3c4e-8f2d-4d6e-9a1b-2c3d4e5f6a7b", strings.Repeat("9", 200))), 63)
	assert.NotEqual(t, jobName("uid-a", "v1.34.4"), jobName("uid-b", "v1.34.4"), "one Job per Machine")
	assert.NotEqual(t, jobName("uid-a", "v1.34.4"), jobName("uid-a", "v1.34.5"), "one Job per update")
	mine := strings.Repeat("c", 64)
	args, err := updateNodeArgs(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
		Binaries: &cabpiv1.BinariesSource{BaseURL: "https://mirror.example/release", Kubectl: true}}, "v1.34.4",
		nodelayout.Digests{"v1.34.4/bin/linux/amd64/kubelet": mine})
	require.NoError(t, err)
	assert.Equal(t, []string{"update-node",
		`--update={"version":"v1.34.4","kubernetes":{"source":"binaries","binaries":{"baseURL":"https://mirror.example/release","kubectl":true}},` +
			`"digests":{"v1.34.4/bin/linux/amd64/kubeadm":"b967f1fa0e36621c402d38bb560eb4a943954d5cf5a00e5150842f6f5da73455",` +
			`"v1.34.4/bin/linux/amd64/kubectl":"d50c359d95e0841eaad08ddc27c7be37cba8fdccfba5c8e2ded65e121ff112db",` +
			`"v1.34.4/bin/linux/amd64/kubelet":"` + mine + `"}}`}, args,
		"the update as data, each download pinned: the user's digest over the catalogue's")
	_, err = updateNodeArgs(cabpiv1.KubernetesSpec{}, "v1.34.4", nil)
	assert.Error(t, err, "the image source cannot be updated in place")
	_, err = updateNodeArgs(cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext}, "v1.34.4", nil)
	assert.ErrorIs(t, err, ignition.ErrKubernetesDigestUnknown, "an image with no digest known is not swapped in")

	job := updateJob("uid-a", "node-1", "v1.34.4", "example.invalid/cabpi:v1", args)
	pod := job.Spec.Template.Spec
	assert.Equal(t, "uid-a", job.Labels[MachineUIDLabel])
	assert.Equal(t, int32(24*60*60), *job.Spec.TTLSecondsAfterFinished, "a finished Job does not stay forever")
	assert.Greater(t, time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second, nodeupdate.Bound,
		"the Job's deadline is above the node side's bound: it never ends while the node updates")

	m := &clusterv1.Machine{}
	m.UID = "uid-a"
	assert.Empty(t, notOurs(job, m, "node-1"))
	assert.Contains(t, notOurs(job, m, "node-2"), "not pinned to Node node-2")
	m.UID = "uid-b"
	assert.Contains(t, notOurs(job, m, "node-1"), MachineUIDLabel, "another Machine's Job")
	planted := job.DeepCopy()
	delete(planted.Labels, "app.kubernetes.io/managed-by")
	m.UID = "uid-a"
	assert.Contains(t, notOurs(planted, m, "node-1"), "app.kubernetes.io/managed-by")
	assert.Equal(t, "node-1", pod.NodeName)
	assert.True(t, pod.HostNetwork)
	assert.Equal(t, int64(0), *pod.SecurityContext.RunAsUser)
	c := pod.Containers[0]
	assert.Equal(t, []corev1.Capability{"ALL"}, c.SecurityContext.Capabilities.Drop, "no capability")
	assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
	assert.False(t, c.Resources.Requests.Cpu().IsZero(), "requests what it uses")
	var hostPaths []string
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			hostPaths = append(hostPaths, v.HostPath.Path)
		}
	}
	assert.ElementsMatch(t, []string{"/run/systemd/private", "/var/lib/cabpi-update"}, hostPaths, "the systemd socket and the state directory, nothing more of the host")
	assert.Equal(t, "v1.34.4", job.Annotations[VersionAnnotation])
	require.Len(t, job.Spec.PodFailurePolicy.Rules, 1)
	assert.Equal(t, []int32{1}, job.Spec.PodFailurePolicy.Rules[0].OnExitCodes.Values)
}

// The bound of the skew is the lowest version among the control-plane Machines: during a
// control-plane rollout, the older API servers.
func TestLowestVersion(t *testing.T) {
	machine := func(name, version string, deleting bool) clusterv1.Machine {
		m := clusterv1.Machine{}
		m.Name, m.Spec.Version = name, version
		if deleting {
			now := metav1.Now()
			m.DeletionTimestamp = &now
		}
		return m
	}
	tests := []struct {
		name     string
		machines []clusterv1.Machine
		want     string
		wantErr  bool
	}{
		{name: "none", want: ""},
		{name: "one", machines: []clusterv1.Machine{machine("a", "v1.34.4", false)}, want: "v1.34.4"},
		{name: "a rollout", machines: []clusterv1.Machine{machine("a", "v1.35.0", false), machine("b", "v1.34.4", false), machine("c", "v1.34.10", false)}, want: "v1.34.4"},
		{name: "by semantic version, not as strings", machines: []clusterv1.Machine{machine("a", "v1.34.10", false), machine("b", "v1.34.9", false)}, want: "v1.34.9"},
		{name: "a Machine being deleted is not the bound", machines: []clusterv1.Machine{machine("a", "v1.33.1", true), machine("b", "v1.34.4", false)}, want: "v1.34.4"},
		{name: "not a version", machines: []clusterv1.Machine{machine("a", "latest", false)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lowestVersion(tt.machines)
			if tt.wantErr {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

// Only the node side's own result reads as a failed, rolled-back update; any other end of a
// Job (its deadline, its Pods lost, a Pod killed) is not the node's result.
func TestJobFailure(t *testing.T) {
	terminated := func(code int32, message string, at time.Time) corev1.Pod {
		p := corev1.Pod{}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, Message: message, FinishedAt: metav1.NewTime(at)}}}}
		return p
	}
	deadline := &batchv1.Job{Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{
		Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "DeadlineExceeded", Message: "Job was active longer than specified deadline"}}}}
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	tests := []struct {
		name           string
		pods           []corev1.Pod
		wantWhy        string
		wantRolledBack bool
	}{
		{"the node side failed the update", []corev1.Pod{terminated(1, "failed: kubernetes.raw does not match its SHA-256\n", t0)}, "failed: kubernetes.raw does not match its SHA-256", true},
		{"the last Pod's result counts", []corev1.Pod{terminated(137, "", t0), terminated(1, "failed: kubeadm upgrade node", t0.Add(time.Minute))}, "failed: kubeadm upgrade node", true},
		{"killed at the deadline", []corev1.Pod{terminated(137, "", t0)}, "the Job failed (DeadlineExceeded: Job was active longer than specified deadline)", false},
		{"no Pod left", nil, "the Job failed (DeadlineExceeded: Job was active longer than specified deadline)", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			why, rolledBack := jobFailure(deadline, tt.pods)
			assert.Equal(t, tt.wantRolledBack, rolledBack)
			assert.Equal(t, tt.wantWhy, why)
		})
	}
}
