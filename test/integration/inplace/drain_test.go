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
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
)

// The drain before a minor upgrade (docs/adr/039), against the API server's own eviction API
// and its PodDisruptionBudget checks. No kube-controller-manager runs here, so the test writes a
// budget's status as its disruption controller would; and no kubelet runs, so the test reports
// each Pod running and ends an evicted Pod's grace period as the kubelet would, by deleting it
// at once.

// drainCase is a worker Machine with its Node joined, marked for an update to target, with a
// Pod of each kind on the node.
type drainCase struct {
	ns      string
	machine *clusterv1.Machine
	node    *corev1.Node
}

func newDrainCase(t *testing.T, from, target string, mutate func(*clusterv1.Machine)) drainCase {
	t.Helper()
	ctx := t.Context()
	_, err := env.WaitForExtension(ctx, cabpiExtensionConfig, timeout)
	require.NoError(t, err)
	ns := env.CreateNamespace(t, "drain").Name
	f := &fixtures.Cluster{Kit: &fixtures.Kit{Env: env}, Namespace: ns, Cluster: createCluster(t, ns, "c", true)}
	machine := f.AddMachine(t, "w", false, sysextConfigSpec(), func(m *clusterv1.Machine) {
		m.Spec.Version = from
		if mutate != nil {
			mutate(m)
		}
	})
	node := joined(t, machine)
	markForUpdate(t, machine, target)
	t.Cleanup(func() {
		jobs := &batchv1.JobList{}
		_ = env.Client.List(context.Background(), jobs, client.InNamespace(inplace.UpdateNamespace))
		for _, j := range jobs.Items {
			if j.Annotations[inplace.NodeAnnotation] == node.Name {
				_ = env.Client.Delete(context.Background(), &j, client.PropagationPolicy(metav1.DeletePropagationBackground))
			}
		}
	})
	return drainCase{ns: ns, machine: machine, node: node}
}

// pod creates a Pod on the case's node; mutate makes it a DaemonSet's, a mirror Pod, a budget's.
func (c drainCase) pod(t *testing.T, name string, mutate func(*corev1.Pod)) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: name},
		Spec:       corev1.PodSpec{NodeName: c.node.Name, Containers: []corev1.Container{{Name: "c", Image: "example.invalid/pause"}}},
	}
	if mutate != nil {
		mutate(p)
	}
	require.NoError(t, env.Client.Create(t.Context(), p))
	// Running and Ready, as its kubelet reports it: the eviction API lets a Pending Pod go
	// whatever its budget says.
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	require.NoError(t, env.Client.Status().Update(t.Context(), p))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
	return p
}

// budget puts the Pods labelled app under a PodDisruptionBudget of minAvailable 1.
func (c drainCase) budget(t *testing.T, app string) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}
	require.NoError(t, env.Client.Create(t.Context(), pdb))
	// Its status as the disruption controller computes it for one healthy Pod of one desired:
	// no disruption allowed.
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation,
		DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	require.NoError(t, env.Client.Status().Update(t.Context(), pdb))
	return pdb
}

// podState is a Pod as the API server has it now: gone, terminating (evicted), or running.
func podState(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	cur := &corev1.Pod{}
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(p), cur)
	switch {
	case apierrors.IsNotFound(err):
		return "gone"
	case err != nil:
		require.NoError(t, err)
	case cur.DeletionTimestamp != nil:
		return "terminating"
	}
	return "running"
}

// kubeletEnds ends an evicted Pod's grace period, as the node's kubelet would.
func kubeletEnds(t *testing.T, p *corev1.Pod) {
	t.Helper()
	require.Equal(t, "terminating", podState(t, p), "Pod %s was evicted", p.Name)
	require.NoError(t, env.Client.Delete(t.Context(), p, client.GracePeriodSeconds(0)))
}

// TestUpdateMachineDrainsBeforeAMinorUpgrade: a minor upgrade evicts the node's Pods through
// the eviction API before the update Job starts, leaving DaemonSet and mirror Pods, and waits
// for a Pod whose budget refuses its eviction; the Job starts only once no Pod is left.
func TestUpdateMachineDrainsBeforeAMinorUpgrade(t *testing.T) {
	apiServer := workloadAPIServerVersion(t)
	c := newDrainCase(t, fmt.Sprintf("v%d.%d.0", apiServer.Major, apiServer.Minor-1), "v"+apiServer.String(), nil)
	ctx := t.Context()

	plain := c.pod(t, "plain", nil)
	withEmptyDir := c.pod(t, "scratch", func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	})
	guarded := c.pod(t, "guarded", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "guarded"} })
	pdb := c.budget(t, "guarded")
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/agent"}}}}},
	}
	require.NoError(t, env.Client.Create(ctx, ds))
	daemon := c.pod(t, "agent-x", func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "agent"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: ds.Name, UID: ds.UID, Controller: ptr.To(true)}}
	})
	mirror := c.pod(t, "static-x", func(p *corev1.Pod) {
		p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	})

	resp, err := callUpdateMachine(t, forgedRequest(t, c.machine))
	require.NoError(t, err)
	assert.Equal(t, runtimehooksv1.ResponseStatusSuccess, resp.GetStatus())
	assert.Positive(t, resp.GetRetryAfterSeconds(), "the drain is not done: Cluster API calls again")
	assert.Contains(t, resp.GetMessage(), "draining Node "+c.node.Name)
	assert.Contains(t, resp.GetMessage(), "Pod "+c.ns+"/guarded: cannot evict pod as it would violate the pod's disruption budget. "+
		"The disruption budget guarded needs 1 healthy pods and has 1 currently", "the message names the Pod its budget keeps, and why")
	assert.Empty(t, updateJobsOf(t, c.node.Name), "no update Job while Pods are on the node")
	n := nodeOf(t, c.node.Name)
	assert.True(t, n.Spec.Unschedulable, "the node is cordoned first")
	assert.Contains(t, n.Annotations, inplace.DrainStartedAnnotation)
	assert.Equal(t, "terminating", podState(t, plain), "a Pod without a controller is evicted (as Cluster API drains)")
	assert.Equal(t, "terminating", podState(t, withEmptyDir), "a Pod with an emptyDir is evicted")
	assert.Equal(t, "running", podState(t, guarded), "a Pod whose budget allows no disruption stays")
	assert.Equal(t, "running", podState(t, daemon), "a DaemonSet's Pod stays")
	assert.Equal(t, "running", podState(t, mirror), "a mirror Pod stays")

	kubeletEnds(t, plain)
	kubeletEnds(t, withEmptyDir)
	resp, err = callUpdateMachine(t, forgedRequest(t, c.machine))
	require.NoError(t, err)
	assert.Contains(t, resp.GetMessage(), "Pod "+c.ns+"/guarded: cannot evict pod", "still kept by its budget")
	assert.Empty(t, updateJobsOf(t, c.node.Name))

	require.NoError(t, env.Client.Delete(ctx, pdb))
	resp, err = callUpdateMachine(t, forgedRequest(t, c.machine))
	require.NoError(t, err)
	assert.Contains(t, resp.GetMessage(), "Pod "+c.ns+"/guarded: deletionTimestamp set", "evicted once its budget is gone")
	kubeletEnds(t, guarded)

	resp, err = callUpdateMachine(t, forgedRequest(t, c.machine))
	require.NoError(t, err)
	assert.Contains(t, resp.GetMessage(), "started updating Node", "the Job starts once the node is drained")
	assert.Len(t, updateJobsOf(t, c.node.Name), 1)
	assert.Equal(t, "running", podState(t, daemon))
	assert.Equal(t, "running", podState(t, mirror))
}

// TestUpdateMachineDrainGivesUp: a drain still blocked after the Machine's nodeDrainTimeout
// gives up: Failure naming the Pod that blocks it, the node schedulable again, no Job, and the
// next attempt starts a drain of its own.
func TestUpdateMachineDrainGivesUp(t *testing.T) {
	apiServer := workloadAPIServerVersion(t)
	c := newDrainCase(t, fmt.Sprintf("v%d.%d.0", apiServer.Major, apiServer.Minor-1), "v"+apiServer.String(), func(m *clusterv1.Machine) {
		m.Spec.Deletion.NodeDrainTimeoutSeconds = ptr.To[int32](1)
	})
	c.pod(t, "guarded", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "guarded"} })
	c.budget(t, "guarded")

	resp, err := callUpdateMachine(t, forgedRequest(t, c.machine))
	require.NoError(t, err)
	assert.Positive(t, resp.GetRetryAfterSeconds(), resp.GetMessage())
	time.Sleep(2 * time.Second)
	_, err = callUpdateMachine(t, forgedRequest(t, c.machine))
	require.Error(t, err, "Failure after the timeout")
	assert.Contains(t, err.Error(), "gave up after the Machine's nodeDrainTimeout (1s)")
	assert.Contains(t, err.Error(), c.ns+"/guarded")
	n := nodeOf(t, c.node.Name)
	assert.False(t, n.Spec.Unschedulable, "the node takes Pods again")
	assert.NotContains(t, n.Annotations, inplace.DrainStartedAnnotation, "the next attempt's drain counts from its own start")
	assert.Empty(t, updateJobsOf(t, c.node.Name), "nothing on the node was changed")
}

// TestUpdateMachineKeepsPodsForAPatchUpgrade: a patch upgrade, which Kubernetes' version skew
// policy allows in place, evicts nothing.
func TestUpdateMachineKeepsPodsForAPatchUpgrade(t *testing.T) {
	apiServer := workloadAPIServerVersion(t)
	require.Positive(t, apiServer.Patch, "the workload API server's version has a patch to upgrade to")
	c := newDrainCase(t, fmt.Sprintf("v%d.%d.0", apiServer.Major, apiServer.Minor), "v"+apiServer.String(), nil)
	kept := c.pod(t, "kept", nil)

	resp, err := callUpdateMachine(t, forgedRequest(t, c.machine))
	require.NoError(t, err)
	assert.Contains(t, resp.GetMessage(), "started updating Node")
	assert.Len(t, updateJobsOf(t, c.node.Name), 1)
	assert.Equal(t, "running", podState(t, kept), "the Pod stays")
	assert.NotContains(t, nodeOf(t, c.node.Name).Annotations, inplace.DrainStartedAnnotation)
}
