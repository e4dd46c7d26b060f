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

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/inplace"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodeupdate"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/provider"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nodeimage"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/nspawn"
)

// In-place updates (docs/adr/035): cabpi's update extension, registered with the suite's Cluster
// API (InPlaceUpdates on) by an ExtensionConfig that selects inPlaceNamespace alone, so that
// every other test's rollouts replace Machines as they do without an extension. The namespace's
// Cluster is the suite's workload control plane once more, at kubernetesVersion.
const (
	inPlaceNamespace = "e2e-inplace"
	// inPlaceLabel on a namespace lets the extension's hooks be called for its Machines.
	inPlaceLabel = "e2e.cabpi.dev/in-place"
	// updatedWithin is how long an in-place update of a MachineDeployment's nodes may take here
	// (two nodes one after the other: download, kubeadm upgrade node, the kubelet's restart).
	updatedWithin = 6 * time.Minute
)

var (
	inPlaceOnce    sync.Once
	inPlaceErr     error
	sandboxImageMu sync.Mutex
	sandboxImage   string
)

// inPlaceCluster makes the in-place namespace and its Cluster, once.
func inPlaceCluster(t *testing.T) {
	t.Helper()
	inPlaceOnce.Do(func() {
		ctx := context.Background()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inPlaceNamespace, Labels: map[string]string{inPlaceLabel: "true"}}}
		if err := mgmt.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			inPlaceErr = err
			return
		}
		_, inPlaceErr = createExternalCluster(ctx, mgmt.Client, inPlaceNamespace, clusterName, workloadCP)
	})
	require.NoError(t, inPlaceErr, "the in-place namespace's Cluster")
}

// inPlaceDeployment creates a MachineDeployment of replicas workers of f at
// previousKubernetesVersion in the in-place namespace, with Kubernetes from k, and waits for them
// to join.
func inPlaceDeployment(t *testing.T, f flavor, md string, replicas int32, k cabpiv1.KubernetesSpec) (*clusterv1.MachineDeployment, []clusterv1.Machine) {
	t.Helper()
	return inPlaceDeploymentIn(t, inPlaceNamespace, f, md, replicas, k)
}

// inPlaceDeploymentIn is inPlaceDeployment in the namespace ns (whose Cluster is clusterName).
func inPlaceDeploymentIn(t *testing.T, ns string, f flavor, md string, replicas int32, k cabpiv1.KubernetesSpec) (*clusterv1.MachineDeployment, []clusterv1.Machine) {
	t.Helper()
	bootstrap := ignitionTemplate(f, md, "p")
	bootstrap.Namespace = ns
	bootstrap.Spec.Template.Spec.Kubernetes = k
	infra := infraTemplate(f, md)
	infra.Namespace = ns
	deployment := clusterMachineDeployment(clusterName, md, replicas, md, md)
	deployment.Namespace = ns
	deployment.Spec.Template.Spec.Version = previousKubernetesVersion
	// One Machine at a time may be unavailable, none added: with maxUnavailable 0 Cluster API
	// creates one Machine more to keep the replicas available while it updates in place
	// (reconcileInPlaceUpdateIntent), and then replaces one Machine as a rollout does.
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	deployment.Spec.Rollout.Strategy.RollingUpdate = clusterv1.MachineDeploymentRolloutStrategyRollingUpdate{MaxSurge: &zero, MaxUnavailable: &one}
	createIn(t, mgmt.Client, bootstrap, infra, deployment)
	t.Cleanup(func() { deleteAndWait(t, deployment, 5*time.Minute) })
	machines := waitDeploymentIn(t, mgmt.Client, ns, md, int(replicas), nil, joinWithin)
	for i := range machines {
		recordTiming(t, f, &machines[i])
		assertWorkerJoined(t, &machines[i], "p")
	}
	return deployment, machines
}

// nodeBefore is what must survive an in-place update of a node, and the Pod pinned to it.
type nodeBefore struct {
	machine    string
	providerID string
	nodeUID    types.UID
	// pod is pinned to the node (nodeName, no controller): a minor upgrade drains it.
	pod *corev1.Pod
}

// prepareNode imports cabpi's image into the node's containerd (what a registry would serve it:
// the update Job runs it) and starts a Pod pinned to it, with no controller.
func prepareNode(t *testing.T, m *clusterv1.Machine) nodeBefore {
	t.Helper()
	ctx := t.Context()
	inst := instanceOf(t, m)
	require.NotNil(t, inst)
	archive := filepath.Join(os.Getenv("CABPI_RELEASE_DIR"), "cabpi-image-"+cabpiVersion+".oci.tar")
	file, err := os.Open(archive)
	require.NoError(t, err)
	out, err := inst.ExecInput(ctx, file, "ctr", "--namespace", "k8s.io", "images", "import", "--all-platforms", "-")
	_ = file.Close()
	require.NoError(t, err, "importing cabpi's image into %s: %s", m.Name, out)

	node, err := workloadC.CoreV1().Nodes().Get(ctx, m.Status.NodeRef.Name, metav1.GetOptions{})
	require.NoError(t, err)
	pod, err := workloadC.CoreV1().Pods(metav1.NamespaceDefault).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pinned-" + m.Name},
		Spec:       pauseSpec(t, func(s *corev1.PodSpec) { s.NodeName = node.Name }),
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = workloadC.CoreV1().Pods(metav1.NamespaceDefault).Delete(context.Background(), pod.Name, metav1.DeleteOptions{})
	})
	require.Eventually(t, func() bool {
		p, err := workloadC.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	}, 2*time.Minute, time.Second, "Pod %s runs on %s", pod.Name, node.Name)
	return nodeBefore{machine: m.Name, providerID: m.Spec.ProviderID, nodeUID: node.UID, pod: pod}
}

// pauseSpec is a Pod that runs the pause image every node carries, on the host network (the
// nodes have no CNI), and stops within a second.
func pauseSpec(t *testing.T, mutate func(*corev1.PodSpec)) corev1.PodSpec {
	t.Helper()
	s := corev1.PodSpec{
		HostNetwork:                   true,
		Containers:                    []corev1.Container{{Name: "pause", Image: podSandboxImage(t), ImagePullPolicy: corev1.PullNever}},
		TerminationGracePeriodSeconds: ptr.To[int64](1),
	}
	mutate(&s)
	return s
}

// podSandboxImage is the pause image every node image carries.
func podSandboxImage(t *testing.T) string {
	t.Helper()
	sandboxImageMu.Lock()
	defer sandboxImageMu.Unlock()
	if sandboxImage == "" {
		ref, err := nodeimage.SandboxImage(t.Context(), filepath.Join(os.Getenv("CABPI_KUBE_BIN"), "kubeadm"), kubernetesVersion)
		require.NoError(t, err)
		sandboxImage = ref
	}
	return sandboxImage
}

// setDeploymentVersion changes the MachineDeployment's version alone, in the suite's management
// cluster.
func setDeploymentVersion(t *testing.T, d *clusterv1.MachineDeployment, version string, bootstrap string) {
	t.Helper()
	setDeploymentVersionIn(t, mgmt.Client, d, version, bootstrap)
}

// waitUpdatedInPlace waits until Cluster API reports the MachineDeployment up to date at version
// with the same Machines, done updating, and every Node's kubelet at version.
func waitUpdatedInPlace(t *testing.T, d *clusterv1.MachineDeployment, version string, want []string) []clusterv1.Machine {
	t.Helper()
	return waitUpdatedInPlaceIn(t, mgmt.Client, d, version, want)
}

// waitUpdatedInPlaceIn is waitUpdatedInPlace in the management cluster of c.
func waitUpdatedInPlaceIn(t *testing.T, c client.Client, d *clusterv1.MachineDeployment, version string, want []string) []clusterv1.Machine {
	t.Helper()
	ctx := t.Context()
	var machines []clusterv1.Machine
	var last string
	ok := assert.Eventually(t, func() bool {
		var err error
		machines, err = deploymentMachinesIn(ctx, c, d.Namespace, d.Name)
		if err != nil {
			return false
		}
		cur := &clusterv1.MachineDeployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), cur); err != nil {
			return false
		}
		var states []string
		done := len(machines) == len(want) && ptr.Deref(cur.Status.UpToDateReplicas, 0) == int32(len(want)) &&
			conditions.IsTrue(cur, clusterv1.MachineDeploymentMachinesUpToDateCondition)
		for i := range machines {
			m := &machines[i]
			_, updating := m.Annotations[clusterv1.UpdateInProgressAnnotation]
			kubelet := ""
			if m.Status.NodeRef.IsDefined() {
				if n, err := workloadC.CoreV1().Nodes().Get(ctx, m.Status.NodeRef.Name, metav1.GetOptions{}); err == nil {
					kubelet = n.Status.NodeInfo.KubeletVersion
				}
			}
			updatingCond := conditions.Get(m, clusterv1.MachineUpdatingCondition)
			msg := ""
			if updatingCond != nil {
				msg = updatingCond.Reason + ": " + updatingCond.Message
			}
			states = append(states, fmt.Sprintf("%s: spec.version %s, kubelet %s, updating %v (%s)", m.Name, m.Spec.Version, kubelet, updating, msg))
			done = done && m.Spec.Version == version && !updating && kubelet == version && machineJoined(m)
		}
		last = strings.Join(states, "; ")
		return done
	}, updatedWithin, 2*time.Second)
	if !ok {
		dumpState(t, c, machines)
		dumpRollout(t, c, machines)
		dumpUpdateJobs(t)
		t.Fatalf("MachineDeployment %s not updated in place to %s: %s", d.Name, version, last)
	}
	return machines
}

// dumpRollout logs how Cluster API rolled the Machines' MachineDeployment out: its MachineSets
// (replicas, the move annotations of an in-place rollout) and the MachineDeployment's conditions
// (the rollout planner's notes), and the events of the MachineSets' namespace: why a Machine was
// replaced rather than moved.
func dumpRollout(t *testing.T, c client.Client, machines []clusterv1.Machine) {
	t.Helper()
	if len(machines) == 0 {
		return
	}
	ns, md := machines[0].Namespace, machines[0].Labels[clusterv1.MachineDeploymentNameLabel]
	d := &clusterv1.MachineDeployment{}
	if err := c.Get(t.Context(), types.NamespacedName{Namespace: ns, Name: md}, d); err == nil {
		t.Logf("MachineDeployment %s: %+v", md, d.Status.Conditions)
	}
	sets := &clusterv1.MachineSetList{}
	if err := c.List(t.Context(), sets, client.InNamespace(ns), client.MatchingLabels{clusterv1.MachineDeploymentNameLabel: md}); err == nil {
		for _, ms := range sets.Items {
			t.Logf("MachineSet %s: replicas %d (status %d), annotations %v", ms.Name, ptr.Deref(ms.Spec.Replicas, 0), ptr.Deref(ms.Status.Replicas, 0), ms.Annotations)
		}
	}
	events := &corev1.EventList{}
	if err := c.List(t.Context(), events, client.InNamespace(ns)); err == nil {
		for _, e := range events.Items {
			t.Logf("event %s %s/%s: %s: %s", e.LastTimestamp.Format(time.RFC3339), e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message)
		}
	}
}

// dumpUpdateJobs logs the update Jobs of the workload cluster and their Pods' ends.
func dumpUpdateJobs(t *testing.T) {
	t.Helper()
	jobs, err := workloadC.BatchV1().Jobs(inplace.UpdateNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=cabpi-update"})
	if err != nil {
		t.Logf("listing the update Jobs: %v", err)
		return
	}
	for _, j := range jobs.Items {
		t.Logf("update Job %s (%s): %+v", j.Name, j.Annotations[inplace.VersionAnnotation], j.Status.Conditions)
	}
	pods, err := workloadC.CoreV1().Pods(inplace.UpdateNamespace).List(t.Context(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=cabpi-update"})
	if err == nil {
		for _, p := range pods.Items {
			t.Logf("update Pod %s on %s: %s %+v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.ContainerStatuses)
		}
	}
}

// assertKept: the update kept the Machines, their nodes and Node objects.
func assertKept(t *testing.T, before []nodeBefore, after []clusterv1.Machine) {
	t.Helper()
	assertKeptIn(t, mgmt.Client, before, after)
}

// assertKeptIn is assertKept for Machines of the management cluster of c.
func assertKeptIn(t *testing.T, c client.Client, before []nodeBefore, after []clusterv1.Machine) {
	t.Helper()
	ctx := t.Context()
	for _, b := range before {
		i := slices.IndexFunc(after, func(m clusterv1.Machine) bool { return m.Name == b.machine })
		if !assert.GreaterOrEqual(t, i, 0, "Machine %s is kept (no new Machine)", b.machine) {
			dumpRollout(t, c, after)
			continue
		}
		m := &after[i]
		assert.Equal(t, b.providerID, m.Spec.ProviderID, "Machine %s keeps its providerID", m.Name)
		node, err := workloadC.CoreV1().Nodes().Get(ctx, m.Status.NodeRef.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, b.nodeUID, node.UID, "Node %s is the same object", node.Name)
		assert.Equal(t, m.Spec.Version, node.Status.NodeInfo.KubeletVersion, "Node %s reports the new kubelet version", node.Name)
		assert.False(t, node.Spec.Unschedulable, "Node %s is uncordoned", node.Name)
		assert.NotContains(t, node.Annotations, inplace.DrainStartedAnnotation, "Node %s: the drain is over", node.Name)
	}
	jobs, err := workloadC.BatchV1().Jobs(inplace.UpdateNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=cabpi-update"})
	require.NoError(t, err)
	for _, j := range jobs.Items {
		assert.NotContains(t, names(after), j.Annotations[inplace.NodeAnnotation], "the update Job %s of a done update is removed", j.Name)
	}
}

// assertDrained: a minor upgrade evicted the Pod pinned to each node before it updated the
// node (Kubernetes' version skew policy: no in-place minor kubelet upgrade with Pods on it).
func assertDrained(t *testing.T, before []nodeBefore) {
	t.Helper()
	for _, b := range before {
		pod, err := workloadC.CoreV1().Pods(b.pod.Namespace).Get(t.Context(), b.pod.Name, metav1.GetOptions{})
		if err == nil {
			assert.NotNil(t, pod.DeletionTimestamp, "Pod %s pinned to the node of %s is evicted", b.pod.Name, b.machine)
			continue
		}
		assert.True(t, apierrors.IsNotFound(err), "Pod %s: %v", b.pod.Name, err)
	}
}

// spreadWorkload is a Deployment with one Pod on each of some nodes (anti-affinity), under a
// PodDisruptionBudget of minAvailable 1, and a watch of its Pods that keeps, from every event,
// the fewest Pods Ready at any moment.
type spreadWorkload struct {
	name  string
	mu    sync.Mutex
	pods  map[types.UID]*corev1.Pod
	first map[types.UID]string // the Pods before the update, by UID: their nodes
	// fewestReady is the fewest Ready Pods (not being deleted) seen at once since the watch began.
	fewestReady int
}

// startSpreadWorkload runs the workload on nodes and starts watching it once each node runs its Pod.
func startSpreadWorkload(t *testing.T, name string, nodes []string) *spreadWorkload {
	t.Helper()
	ctx := t.Context()
	labels := map[string]string{"app": name}
	selector := &metav1.LabelSelector{MatchLabels: labels}
	deployment := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(len(nodes))), Selector: selector,
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pauseSpec(t, func(s *corev1.PodSpec) {
				s.Affinity = &corev1.Affinity{
					NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
						NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{
							Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: nodes}}}}}},
					PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
						LabelSelector: selector, TopologyKey: corev1.LabelHostname}}},
				}
			})},
		},
	}
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: selector},
	}
	_, err := workloadC.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = workloadC.PolicyV1().PodDisruptionBudgets(metav1.NamespaceDefault).Create(ctx, pdb, metav1.CreateOptions{})
	require.NoError(t, err)
	w := &spreadWorkload{name: name, pods: map[types.UID]*corev1.Pod{}, first: map[types.UID]string{}}
	t.Cleanup(w.remove)

	listOpts := metav1.ListOptions{LabelSelector: "app=" + name}
	var list *corev1.PodList
	require.Eventually(t, func() bool {
		list, err = workloadC.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, listOpts)
		on := map[string]bool{}
		for i := range list.Items {
			if podReady(&list.Items[i]) {
				on[list.Items[i].Spec.NodeName] = true
			}
		}
		return err == nil && len(on) == len(nodes)
	}, 2*time.Minute, time.Second, "Deployment %s runs a Pod on each of %v", name, nodes)
	for i := range list.Items {
		p := &list.Items[i]
		w.pods[p.UID], w.first[p.UID] = p, p.Spec.NodeName
	}
	w.fewestReady = w.ready()
	// Every event from the list on, through a watcher that resumes where it was when the API
	// server ends a watch.
	watcher, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, options metav1.ListOptions) (watch.Interface, error) {
			options.LabelSelector = listOpts.LabelSelector
			return workloadC.CoreV1().Pods(metav1.NamespaceDefault).Watch(ctx, options)
		},
	})
	require.NoError(t, err)
	t.Cleanup(watcher.Stop)
	go func() {
		for ev := range watcher.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			if ev.Type == watch.Deleted {
				delete(w.pods, p.UID)
			} else {
				w.pods[p.UID] = p
			}
			w.fewestReady = min(w.fewestReady, w.ready())
			w.mu.Unlock()
		}
	}()
	return w
}

// ready counts the Pods Ready and not being deleted (w.mu held, or before the watch).
func (w *spreadWorkload) ready() int {
	n := 0
	for _, p := range w.pods {
		if podReady(p) && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// assertBudgetKept: the Pod of every node was evicted, never two at once (the budget held at
// every event), and each node runs one of the Deployment's Pods again.
func (w *spreadWorkload) assertBudgetKept(t *testing.T, nodes []string) {
	t.Helper()
	assert.Eventually(t, func() bool {
		w.mu.Lock()
		defer w.mu.Unlock()
		on := map[string]bool{}
		for uid, p := range w.pods {
			if _, old := w.first[uid]; !old && podReady(p) && p.DeletionTimestamp == nil {
				on[p.Spec.NodeName] = true
			}
		}
		return len(on) == len(nodes)
	}, 2*time.Minute, time.Second, "each node runs a new Pod of %s", w.name)
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid, node := range w.first {
		p, there := w.pods[uid]
		assert.True(t, !there || p.DeletionTimestamp != nil, "the Pod of %s on %s was evicted before its node's minor upgrade", w.name, node)
	}
	assert.GreaterOrEqual(t, w.fewestReady, 1, "the PodDisruptionBudget (minAvailable 1) of %s held throughout: the nodes were drained one at a time", w.name)
}

// remove deletes the Deployment and its budget (a later rollout that replaces the nodes must
// not wait on them).
func (w *spreadWorkload) remove() {
	ctx := context.Background()
	_ = workloadC.AppsV1().Deployments(metav1.NamespaceDefault).Delete(ctx, w.name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)})
	_ = workloadC.PolicyV1().PodDisruptionBudgets(metav1.NamespaceDefault).Delete(ctx, w.name, metav1.DeleteOptions{})
}

// assertKubernetesOnNode: kubeadm and the kubelet on the node say version.
func assertKubernetesOnNode(t *testing.T, inst *provider.Instance, version string) {
	t.Helper()
	// The node's PATH: the release binaries are in /opt/bin, the extension's in /usr/bin.
	path := "PATH=/opt/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	kubeadm, err := onNode(t, inst, "env", path, "kubeadm", "version", "-o", "short")
	require.NoError(t, err)
	assert.Equal(t, version, strings.TrimSpace(kubeadm), "kubeadm on %s", inst.Name)
	kubelet, err := onNode(t, inst, "env", path, "kubelet", "--version")
	require.NoError(t, err)
	assert.Equal(t, "Kubernetes "+version, strings.TrimSpace(kubelet), "the kubelet on %s", inst.Name)
}

// A MachineDeployment of two workers at the previous minor, in a cluster whose control plane runs
// the newer one: changing its version alone updates both nodes in place (the Kubernetes system
// extension swapped on the flatcar-like nodes, the release binaries on the fcos-like ones). The
// Machines, providerIDs and Node objects are kept; the MachineDeployment is up to date. Each node
// is drained first, as a minor upgrade must be: a Pod pinned to it is evicted, and a Deployment
// with a Pod on each node under a PodDisruptionBudget of minAvailable 1 never has both down. A node rebooted after its update comes back on the new version without kubeadm: on the
// flatcar-like nodes, whose config turns systemd-sysupdate on, after a run of it too (the layout
// publishes a later patch of the old minor, which the node must not take). On the flatcar-like
// nodes, a Butane change afterwards is declined and rolled out by replacement.
func TestInPlaceUpdate(t *testing.T) {
	t.Parallel()
	inPlaceCluster(t)
	for _, tc := range []struct {
		f          flavor
		kubernetes cabpiv1.KubernetesSpec
		installed  func(t *testing.T, inst *provider.Instance, version string)
		butane     bool
	}{
		{stockFlatcar, cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{BaseURL: releases.SysextURL(), Sysupdate: true}},
			assertSysextMerged, true},
		{stockFCOS, cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: releases.BinariesURL()}},
			assertBinariesInstalled, false},
	} {
		t.Run(string(tc.f.name), func(t *testing.T) {
			t.Parallel()
			md := string(tc.f.name) + "-inplace"
			deployment, machines := inPlaceDeployment(t, tc.f, md, 2, tc.kubernetes)
			var before []nodeBefore
			for i := range machines {
				before = append(before, prepareNode(t, &machines[i]))
			}

			var updated []clusterv1.Machine
			ok := t.Run("version updated in place", func(t *testing.T) {
				var nodeNames []string
				for _, m := range machines {
					nodeNames = append(nodeNames, m.Status.NodeRef.Name)
				}
				web := startSpreadWorkload(t, md+"-web", nodeNames)
				setDeploymentVersion(t, deployment, kubernetesVersion, "")
				updated = waitUpdatedInPlace(t, deployment, kubernetesVersion, names(machines))
				assertKept(t, before, updated)
				assertDrained(t, before)
				web.assertBudgetKept(t, nodeNames)
				web.remove()
				for i := range updated {
					inst := instanceOf(t, &updated[i])
					tc.installed(t, inst, kubernetesVersion)
					assertKubernetesOnNode(t, inst, kubernetesVersion)
					assert.Equal(t, 1, kubeadmStarts(t, inst), "kubeadm.service ran once, at first boot")
				}
			})
			require.True(t, ok, "the in-place update failed: the rest cannot run")

			t.Run("reboot after the update", func(t *testing.T) {
				m := &updated[0]
				if tc.kubernetes.Sysext != nil && tc.kubernetes.Sysext.Sysupdate {
					runSysupdate(t, instanceOf(t, m))
				}
				testReboot(t, m)
				inst := instanceOf(t, m)
				tc.installed(t, inst, kubernetesVersion)
				assertKubernetesOnNode(t, inst, kubernetesVersion)
				node, err := workloadC.CoreV1().Nodes().Get(t.Context(), m.Status.NodeRef.Name, metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, kubernetesVersion, node.Status.NodeInfo.KubeletVersion)
			})

			if !tc.butane {
				return
			}
			t.Run("butane change replaces the machines", func(t *testing.T) {
				next := ignitionTemplate(tc.f, md+"-q", "q")
				next.Namespace = inPlaceNamespace
				next.Spec.Template.Spec.Kubernetes = tc.kubernetes
				createIn(t, mgmt.Client, next)
				setDeploymentVersion(t, deployment, kubernetesVersion, next.Name)
				rolled := waitDeploymentIn(t, mgmt.Client, inPlaceNamespace, md, 2, names(updated), joinWithin+3*time.Minute)
				for i := range rolled {
					assertWorkerJoined(t, &rolled[i], "q")
					assert.NotContains(t, rolled[i].Annotations, clusterv1.UpdateInProgressAnnotation)
				}
				assertRemoved(t, updated, names(rolled))
			})
		})
	}
}

// runSysupdate runs the node's systemd-sysupdate for the Kubernetes component, as
// systemd-sysupdate.service does before its own run (the config's drop-in; the service and its
// timer are skipped in a container, ConditionVirtualization=!container, docs/nodes-in-tests.md):
// after a minor upgrade in place, the transfer file is the new minor's alone, so the run keeps
// the node on the new version, though the layout publishes a later patch of the old minor
// (laterPreviousPatch), which the old transfer file would take.
func runSysupdate(t *testing.T, inst *provider.Instance) {
	t.Helper()
	transfers, err := onNode(t, inst, "ls", "/etc/sysupdate.kubernetes.d")
	require.NoError(t, err)
	minor := kubernetesVersion[:strings.LastIndex(kubernetesVersion, ".")]
	assert.Equal(t, "kubernetes-"+minor+".conf", transfers, "the transfer file followed the update")
	out, err := onNode(t, inst, "bash", "/etc/cabpi/sysupdate-kubernetes.sh")
	t.Logf("systemd-sysupdate on %s (%v):\n%s", inst.Name, err, out)
	require.NoError(t, err)
	assertSysextMerged(t, inst, kubernetesVersion)
	assert.False(t, exists(t, inst, "/opt/extensions/kubernetes/kubernetes-"+laterPreviousPatch+"-x86-64.raw"),
		"sysupdate took no image of the old minor")
}

// An update whose system extension image does not match the digest the layout publishes: the
// MachineDeployment's version and mirror change together (both in place), the node refuses the
// image before anything runs it, stays on the old version and Ready, the Machine's events say
// why, and nothing is deleted.
func TestInPlaceUpdateRefusesATamperedImage(t *testing.T) {
	t.Parallel()
	inPlaceCluster(t)
	f := stockFlatcar
	md := "tampered-inplace"
	deployment, machines := inPlaceDeployment(t, f, md, 1, cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceSysext,
		Sysext: &cabpiv1.SysextSource{BaseURL: releases.SysextURL()}})
	prepareNode(t, &machines[0])
	tampered := ignitionTemplate(f, md+"-tampered", "p")
	tampered.Namespace = inPlaceNamespace
	tampered.Spec.Template.Spec.Kubernetes = cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceSysext,
		Sysext: &cabpiv1.SysextSource{BaseURL: releases.TamperedSysextURL()}}
	createIn(t, mgmt.Client, tampered)
	setDeploymentVersion(t, deployment, kubernetesVersion, tampered.Name)

	ctx := t.Context()
	m := machines[0]
	kube, err := kubernetes.NewForConfig(mgmt.Config)
	require.NoError(t, err)
	var reason string
	ok := assert.Eventually(t, func() bool {
		events, err := kube.EventsV1().Events(inPlaceNamespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, e := range events.Items {
			if e.Regarding.Kind == "Machine" && e.Regarding.Name == m.Name && e.Reason == "InPlaceUpdateFailed" {
				reason = e.Note
				return true
			}
		}
		return false
	}, updatedWithin, 2*time.Second, "the Machine's events say the update failed")
	if !ok {
		cur, _ := deploymentMachinesIn(ctx, mgmt.Client, inPlaceNamespace, md)
		dumpState(t, mgmt.Client, cur)
		dumpUpdateJobs(t)
		t.FailNow()
	}
	assert.Contains(t, reason, "does not match its pinned SHA-256", "the event names the check that failed")
	assert.Contains(t, reason, "kubernetes-"+kubernetesVersion+"-x86-64.raw", "and the image")

	cur := &clusterv1.Machine{}
	require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(&m), cur))
	assert.Nil(t, cur.DeletionTimestamp, "the Machine is not deleted")
	assert.Equal(t, clusterv1.MachineInPlaceUpdateFailedReason, conditions.GetReason(cur, clusterv1.MachineUpdatingCondition),
		"the Machine's Updating condition says the in-place update failed")
	all, err := deploymentMachinesIn(ctx, mgmt.Client, inPlaceNamespace, md)
	require.NoError(t, err)
	assert.Equal(t, []string{m.Name}, names(all), "no Machine was created or removed")

	node, err := workloadC.CoreV1().Nodes().Get(ctx, m.Status.NodeRef.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, previousKubernetesVersion, node.Status.NodeInfo.KubeletVersion, "the node stays on the old version")
	_, ready := nodeReady(node)
	assert.True(t, ready, "and Ready")
	assert.False(t, node.Spec.Unschedulable, "and takes Pods again")
	inst := instanceOf(t, &m)
	assertSysextMerged(t, inst, previousKubernetesVersion)
	assertKubernetesOnNode(t, inst, previousKubernetesVersion)
	assert.False(t, exists(t, inst, "/opt/extensions/kubernetes/kubernetes-"+kubernetesVersion+"-x86-64.raw"),
		"the tampered image is not kept where the link could point")
	job, err := workloadC.BatchV1().Jobs(inplace.UpdateNamespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=cabpi-update"})
	require.NoError(t, err)
	var failed *batchv1.Job
	for i := range job.Items {
		if job.Items[i].Annotations[inplace.NodeAnnotation] == node.Name {
			failed = &job.Items[i]
		}
	}
	require.NotNil(t, failed, "the failed update Job is kept as the record")
	unit, _ := onNode(t, inst, "journalctl", "--no-pager", "-u", nodeupdate.Unit, "-o", "cat")
	assert.Contains(t, unit, "does not match its pinned SHA-256", "the node's journal says why")
}

// A worker's in-place update loses its power twice: during the swap (the link renamed,
// systemd-sysext refreshing, in the update's unit), and, on the boot after, during `kubeadm
// upgrade node` run by the resume unit before the kubelet starts. On the boot after that, the
// resume unit finishes the file steps before the kubelet starts and the finish unit the rest:
// the Machine ends updated in place, and the node runs what the Machine says, with nothing of
// the update left on it (docs/adr/043).
func TestInPlaceUpdateThroughPowerCuts(t *testing.T) {
	t.Parallel()
	w := startOneWorkerUpdate(t, "powercut-inplace")
	inst := w.inst

	cutDuringUpdate(t, inst, nodeupdate.Unit, "systemd-sysext", "refresh")
	require.NoError(t, inst.Boot(t.Context()))
	cutDuringUpdate(t, inst, nodeupdate.ResumeUnit, "kubeadm", "upgrade")
	require.NoError(t, inst.Boot(t.Context()))

	inst = w.assertUpdated(t)
	resume, _ := onNode(t, inst, "journalctl", "--no-pager", "-u", nodeupdate.ResumeUnit, "-o", "cat")
	assert.Contains(t, resume, "going on with the update to "+kubernetesVersion, "the resume unit went on with the update at boot")
	finish, _ := onNode(t, inst, "journalctl", "--no-pager", "--boot=0", "-u", nodeupdate.FinishUnit, "-o", "cat")
	assert.Contains(t, finish, "ok "+kubernetesVersion, "the finish unit ended it after the kubelet started")
	for _, unit := range []string{nodeupdate.ResumeUnit, nodeupdate.FinishUnit} {
		assert.False(t, exists(t, inst, "/etc/systemd/system/"+unit), "%s is gone with the update", unit)
	}
	assert.False(t, exists(t, inst, nodeupdate.StateDir+"/"+nodeupdate.JournalName), "the journal is gone")
}

// A worker shuts down while its in-place update runs `kubeadm upgrade node`: systemd's SIGTERM
// pauses the update (no result, its journal kept) rather than failing it, the node powers off,
// and after the reboot the boot units finish it: the Machine ends updated in place.
func TestInPlaceUpdatePausedByAShutdown(t *testing.T) {
	t.Parallel()
	w := startOneWorkerUpdate(t, "shutdown-inplace")
	inst := w.inst

	// kubeadm held, so that the shutdown comes in the middle of the update; systemd sends the
	// unit's processes SIGCONT with SIGTERM.
	holdDuringUpdate(t, inst, nodeupdate.Unit, "kubeadm", "upgrade")
	require.NoError(t, inst.PowerOff(2*time.Minute), "a clean shutdown of %s during its update", inst.Name)
	unit, err := inst.JournalOffline(t.Context(), nodeupdate.Unit)
	require.NoError(t, err)
	assert.Contains(t, string(unit), nodeupdate.ErrPaused.Error(), "SIGTERM paused the update")
	assert.NotContains(t, string(unit), "rolling back", "a pause is not a failure")
	require.NoError(t, inst.Boot(t.Context()))

	w.assertUpdated(t)
}

// oneWorkerUpdate is a flatcar-stock worker of the in-place namespace (sysext from the suite's
// mirror) whose MachineDeployment's version has just changed to kubernetesVersion.
type oneWorkerUpdate struct {
	deployment *clusterv1.MachineDeployment
	machines   []clusterv1.Machine
	before     nodeBefore
	inst       *provider.Instance
}

func startOneWorkerUpdate(t *testing.T, md string) *oneWorkerUpdate {
	t.Helper()
	inPlaceCluster(t)
	deployment, machines := inPlaceDeployment(t, stockFlatcar, md, 1, cabpiv1.KubernetesSpec{
		DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{BaseURL: releases.SysextURL()}})
	w := &oneWorkerUpdate{deployment: deployment, machines: machines, before: prepareNode(t, &machines[0]), inst: instanceOf(t, &machines[0])}
	setDeploymentVersion(t, deployment, kubernetesVersion, "")
	return w
}

// assertUpdated waits until the worker's Machine is updated in place and checks the node runs
// kubernetesVersion; it returns the node.
func (w *oneWorkerUpdate) assertUpdated(t *testing.T) *provider.Instance {
	t.Helper()
	updated := waitUpdatedInPlace(t, w.deployment, kubernetesVersion, names(w.machines))
	assertKept(t, []nodeBefore{w.before}, updated)
	inst := instanceOf(t, &updated[0])
	assertSysextMerged(t, inst, kubernetesVersion)
	assertKubernetesOnNode(t, inst, kubernetesVersion)
	return inst
}

// cutDuringUpdate waits until a unit of the update runs command with its first argument arg,
// holds it (SIGSTOP), freezes the node and cuts its power.
func cutDuringUpdate(t *testing.T, inst *provider.Instance, unit, command, arg string) {
	t.Helper()
	holdDuringUpdate(t, inst, unit, command, arg)
	require.NoError(t, inst.Freeze())
	require.NoError(t, inst.Kill(), "cutting the power of %s during %s %s", inst.Name, command, arg)
	t.Logf("%s: power cut during %s's %s %s", inst.Name, unit, command, arg)
}

// holdDuringUpdate waits until a unit of the update runs command with its first argument arg,
// and holds it there (SIGSTOP).
func holdDuringUpdate(t *testing.T, inst *provider.Instance, unit, command, arg string) {
	t.Helper()
	deadline := time.Now().Add(updatedWithin)
	for {
		procs, err := inst.UnitProcesses(unit)
		require.NoError(t, err)
		i := slices.IndexFunc(procs, func(p nspawn.Process) bool {
			return p.Command == command && len(p.Args) > 1 && p.Args[1] == arg
		})
		if i >= 0 {
			require.NoError(t, syscall.Kill(procs[i].PID, syscall.SIGSTOP))
			break
		}
		if time.Now().After(deadline) {
			out, _ := onNode(t, inst, "journalctl", "--no-pager", "-u", unit, "-o", "cat")
			dumpUpdateJobs(t)
			t.Fatalf("%s on %s never ran %s %s within %s; its journal:\n%s", unit, inst.Name, command, arg, updatedWithin, out)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
