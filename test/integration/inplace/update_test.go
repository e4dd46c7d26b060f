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
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodeupdate"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// attackerURL is where a forged request's body would fetch Kubernetes from.
const attackerURL = "https://attacker.invalid/k8s"

// TestUpdateMachineTakesNothingFromTheRequest: UpdateMachine acts on the Machine and the
// IgnitionConfig as the API server has them, and only on an update Cluster API runs
// (docs/adr/038). Every request here claims a binaries source at the caller's URL and another
// version; the Machine's stored config says sysext.
func TestUpdateMachineTakesNothingFromTheRequest(t *testing.T) {
	apiServer := workloadAPIServerVersion(t)
	previousMinor := fmt.Sprintf("v%d.%d.0", apiServer.Major, apiServer.Minor-1)
	target := "v" + apiServer.String()

	for _, tc := range []struct {
		name string
		// marked: Cluster API's update-in-progress annotation and pending UpdateMachine hook on
		// the Machine, and the annotation on its IgnitionConfig.
		marked bool
		// controlPlane: the Machine has Cluster API's control-plane label.
		controlPlane bool
		// wantJob: an update Job is created, following the stored config.
		wantJob     bool
		wantStatus  runtimehooksv1.ResponseStatus
		wantMessage string
	}{
		{
			name: "a request Cluster API did not make", marked: false,
			wantStatus: runtimehooksv1.ResponseStatusFailure, wantMessage: "Cluster API is not updating Machine",
		},
		{
			name: "a control-plane Machine", marked: true, controlPlane: true,
			wantStatus: runtimehooksv1.ResponseStatusFailure, wantMessage: "control-plane nodes are not updated in place",
		},
		{
			name: "an update Cluster API runs", marked: true, wantJob: true,
			wantStatus: runtimehooksv1.ResponseStatusSuccess, wantMessage: "started updating Node",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			_, err := env.WaitForExtension(ctx, cabpiExtensionConfig, timeout)
			require.NoError(t, err)
			ns := env.CreateNamespace(t, "update").Name
			f := &fixtures.Cluster{Kit: &fixtures.Kit{Env: env}, Namespace: ns, Cluster: createCluster(t, ns, "c", true)}
			machine := f.AddMachine(t, "w", tc.controlPlane, sysextConfigSpec(), func(m *clusterv1.Machine) { m.Spec.Version = previousMinor })
			node := joined(t, machine)

			if tc.marked {
				markForUpdate(t, machine, target)
			}
			resp, err := callUpdateMachine(t, forgedRequest(t, machine))
			if tc.wantStatus == runtimehooksv1.ResponseStatusFailure {
				// Cluster API's runtime client (and the suite's) makes a Failure an error.
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantMessage)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.wantStatus, resp.GetStatus(), resp.GetMessage())
				assert.Contains(t, resp.GetMessage(), tc.wantMessage)
			}
			jobs := updateJobsOf(t, node.Name)
			t.Cleanup(func() {
				for i := range jobs {
					_ = env.Client.Delete(ctx, &jobs[i], client.PropagationPolicy(metav1.DeletePropagationBackground))
				}
			})
			if !tc.wantJob {
				assert.Empty(t, jobs, "no update Job for a refused request")
				assert.False(t, nodeOf(t, node.Name).Spec.Unschedulable, "a refused request leaves the Node schedulable")
				return
			}
			require.Len(t, jobs, 1)
			args := jobs[0].Spec.Template.Spec.Containers[0].Args
			require.Len(t, args, 2)
			asked, err := nodeupdate.ParseUpdate([]byte(strings.TrimPrefix(args[1], "--update=")))
			require.NoError(t, err, "the Job's update: %v", args)
			assert.Equal(t, cabpiv1.KubernetesSourceSysext, asked.Kubernetes.Source, "the source of the stored IgnitionConfig")
			assert.Equal(t, target, asked.Version, "the version of the stored Machine")
			assert.NotContains(t, strings.Join(args, " "), "attacker.invalid", "nothing of the request's body")
			pod := jobs[0].Spec.Template.Spec
			assert.Equal(t, updateImage, pod.Containers[0].Image, "the image the manager names")
			assert.Equal(t, []corev1.LocalObjectReference{{Name: updatePullSecret}}, pod.ImagePullSecrets, "pulled with --update-image-pull-secrets")
			assert.True(t, nodeOf(t, node.Name).Spec.Unschedulable, "the node is cordoned for its update")
			assert.EventuallyWithT(t, func(c *assert.CollectT) {
				events := &eventsv1.EventList{}
				require.NoError(c, env.Client.List(ctx, events, client.InNamespace(ns)))
				var reasons []string
				for _, e := range events.Items {
					if e.Regarding.Name == machine.Name && e.Regarding.Kind == "Machine" {
						reasons = append(reasons, e.Reason)
					}
				}
				assert.Contains(c, reasons, "InPlaceUpdateStarted", "a Normal event on the Machine says the update started")
			}, timeout, tick)
		})
	}
}

// TestUpdateMachineTrustsNoPlantedJob: a Job in the update namespace that names the Machine
// but was not made by cabpi (its labels) is neither read as the update's result nor deleted:
// the request is refused, and the Job stays for whoever planted it to answer for.
func TestUpdateMachineTrustsNoPlantedJob(t *testing.T) {
	apiServer := workloadAPIServerVersion(t)
	ctx := t.Context()
	_, err := env.WaitForExtension(ctx, cabpiExtensionConfig, timeout)
	require.NoError(t, err)
	ns := env.CreateNamespace(t, "update").Name
	f := &fixtures.Cluster{Kit: &fixtures.Kit{Env: env}, Namespace: ns, Cluster: createCluster(t, ns, "c", true)}
	machine := f.AddMachine(t, "w", false, sysextConfigSpec(), func(m *clusterv1.Machine) {
		m.Spec.Version = fmt.Sprintf("v%d.%d.0", apiServer.Major, apiServer.Minor-1)
	})
	node := joined(t, machine)
	markForUpdate(t, machine, "v"+apiServer.String())
	stored := &clusterv1.Machine{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(machine), stored))

	planted := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: inplace.UpdateNamespace, GenerateName: "planted-",
			Labels:      map[string]string{inplace.MachineUIDLabel: string(stored.UID)},
			Annotations: map[string]string{inplace.NodeAnnotation: node.Name, inplace.VersionAnnotation: "v1.0.0"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			NodeName: node.Name, RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "x", Image: "example.invalid/x"}},
		}}},
	}
	require.NoError(t, env.Client.Create(ctx, planted))
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, planted, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})

	_, err = callUpdateMachine(t, forgedRequest(t, machine))
	require.Error(t, err, "refused")
	assert.Contains(t, err.Error(), "neither trusts nor deletes it")
	jobs := updateJobsOf(t, node.Name)
	require.Len(t, jobs, 1, "no update Job beside the planted one")
	assert.Equal(t, planted.Name, jobs[0].Name, "the planted Job is not deleted")
}

// TestUpdateMachineRetriesPassingErrors: a workload cluster the extension cannot reach yet (the
// ClusterCache not connected, as right after cabpi starts) is a passing error: Success with a
// retry, which Cluster API calls again, never Failure, which it reports as InPlaceUpdateFailed.
func TestUpdateMachineRetriesPassingErrors(t *testing.T) {
	ctx := t.Context()
	_, err := env.WaitForExtension(ctx, cabpiExtensionConfig, timeout)
	require.NoError(t, err)
	ns := env.CreateNamespace(t, "update").Name
	f := &fixtures.Cluster{Kit: &fixtures.Kit{Env: env}, Namespace: ns, Cluster: createCluster(t, ns, "c", false)}
	machine := f.AddMachine(t, "w", false, sysextConfigSpec())
	// The node joined before the cluster became unreachable: the Machine's nodeRef is set.
	before := machine.DeepCopy()
	machine.Status.NodeRef = clusterv1.MachineNodeReference{Name: "unreachable-node"}
	require.NoError(t, env.Client.Status().Patch(ctx, machine, client.MergeFrom(before)))
	markForUpdate(t, machine, machine.Spec.Version)

	resp, err := callUpdateMachine(t, forgedRequest(t, machine))
	require.NoError(t, err, "a passing error is not a Failure")
	assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.GetStatus(), resp.GetMessage())
	assert.Positive(t, resp.GetRetryAfterSeconds(), resp.GetMessage())
	assert.Contains(t, resp.GetMessage(), "retrying")
}

// sysextConfigSpec is a worker's config with Kubernetes from the default sysext mirror.
func sysextConfigSpec() cabpiv1.IgnitionConfigSpec {
	return cabpiv1.IgnitionConfigSpec{Kubernetes: cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{},
		DigestsFrom: fixtures.Digests}}
}

// joined plays the machine's node joining and waits for the Machine's nodeRef.
func joined(t *testing.T, machine *clusterv1.Machine) *corev1.Node {
	t.Helper()
	node, err := env.MarkMachineNodeJoined(t.Context(), machine)
	require.NoError(t, err)
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), node) })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := &clusterv1.Machine{}
		require.NoError(c, env.Client.Get(t.Context(), client.ObjectKeyFromObject(machine), m))
		assert.True(c, m.Status.NodeRef.IsDefined())
	}, timeout, tick, "Cluster API sets the Machine's nodeRef")
	return node
}

// markForUpdate does what Cluster API does to a Machine it updates in place: the new version,
// the update-in-progress annotation and the pending UpdateMachine hook on the Machine, the
// annotation on its IgnitionConfig.
func markForUpdate(t *testing.T, machine *clusterv1.Machine, version string) {
	t.Helper()
	ctx := t.Context()
	cfg := &cabpiv1.IgnitionConfig{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: machine.Namespace, Name: machine.Spec.Bootstrap.ConfigRef.Name}, cfg))
	beforeCfg := cfg.DeepCopy()
	metav1.SetMetaDataAnnotation(&cfg.ObjectMeta, clusterv1.UpdateInProgressAnnotation, "")
	require.NoError(t, env.Client.Patch(ctx, cfg, client.MergeFrom(beforeCfg)))

	m := &clusterv1.Machine{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(machine), m))
	before := m.DeepCopy()
	m.Spec.Version = version
	metav1.SetMetaDataAnnotation(&m.ObjectMeta, clusterv1.UpdateInProgressAnnotation, "")
	metav1.SetMetaDataAnnotation(&m.ObjectMeta, runtimev1.PendingHooksAnnotation, "UpdateMachine")
	require.NoError(t, env.Client.Patch(ctx, m, client.MergeFrom(before)))
}

// forgedRequest is an UpdateMachine request for machine whose body asks for something else: a
// binaries source at the caller's URL, and another version.
func forgedRequest(t *testing.T, machine *clusterv1.Machine) *runtimehooksv1.UpdateMachineRequest {
	t.Helper()
	m := machine.DeepCopy()
	m.Spec.Version = "v1.99.0"
	cfg := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Spec.Bootstrap.ConfigRef.Name}}
	cfg.SetGroupVersionKind(cabpiv1.GroupVersion.WithKind("IgnitionConfig"))
	cfg.Spec.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: attackerURL}}
	return &runtimehooksv1.UpdateMachineRequest{Desired: runtimehooksv1.UpdateMachineRequestObjects{
		Machine:         *m,
		BootstrapConfig: runtime.RawExtension{Object: cfg},
	}}
}

// callUpdateMachine calls cabpi's UpdateMachine over HTTPS, as a client of the extension; a
// Failure answer is an error.
func callUpdateMachine(t *testing.T, req *runtimehooksv1.UpdateMachineRequest) (*runtimehooksv1.UpdateMachineResponse, error) {
	t.Helper()
	resp := &runtimehooksv1.UpdateMachineResponse{}
	err := env.RuntimeClient.CallExtension(t.Context(), runtimehooksv1.UpdateMachine, &req.Desired.Machine,
		inplace.UpdateMachineHandler+"."+cabpiExtensionConfig, req, resp)
	return resp, err
}

// updateJobsOf lists the update Jobs of the node (the workload cluster is the envtest server).
func updateJobsOf(t *testing.T, node string) []batchv1.Job {
	t.Helper()
	jobs := &batchv1.JobList{}
	require.NoError(t, env.Client.List(t.Context(), jobs, client.InNamespace(inplace.UpdateNamespace)))
	var out []batchv1.Job
	for _, j := range jobs.Items {
		if j.Annotations[inplace.NodeAnnotation] == node {
			out = append(out, j)
		}
	}
	return out
}

func nodeOf(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: name}, n))
	return n
}
