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
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodeupdate"
)

// The executor of UpdateMachine (docs/adr/035): a Job in the workload cluster, pinned to the
// Machine's Node, runs `cabpi update-node` from cabpi's own image; that hands the update to the
// node's systemd (package nodeupdate), so that it outlives the kubelet it restarts. The
// hook is called again and again until it answers done; every answer is decided from what the
// workload cluster shows (the Job, the Node), so an extension restarted mid-update picks up
// where it was.

const (
	// UpdateNamespace holds the update Jobs in the workload cluster.
	UpdateNamespace = metav1.NamespaceSystem
	// VersionAnnotation on an update Job is the version it moves its node to.
	VersionAnnotation = "ignition.bootstrap.cluster.x-k8s.io/update-version"
	// NodeAnnotation on an update Job is the node it runs on.
	NodeAnnotation = "ignition.bootstrap.cluster.x-k8s.io/update-node"
	// ReportedAnnotation on a failed update Job: its failure was counted and said (an event).
	ReportedAnnotation = "ignition.bootstrap.cluster.x-k8s.io/update-reported"
	// MachineUIDLabel on an update Job is the UID of the Machine it updates.
	MachineUIDLabel = "ignition.bootstrap.cluster.x-k8s.io/update-machine-uid"
	// CordonedAnnotation on a Node says the extension cordoned it for an update to that version
	// (a node cordoned by someone else is left cordoned afterwards).
	CordonedAnnotation = "ignition.bootstrap.cluster.x-k8s.io/cordoned-for-update"

	// updateDeadline bounds one update Job, above the node side's own bound (its way forward,
	// nodeupdate.Bound) and what may follow it (a rollback's restart and health wait, the
	// Pod's start): the Job never ends while the node still updates.
	updateDeadline = nodeupdate.Bound + 10*time.Minute
	// systemdPrivateSocket is the host's systemd's private socket, where cabpi update-node starts
	// the update's unit (go-systemd's NewSystemdConnectionContext): the one host file the Job's
	// Pod gets besides the state directory.
	systemdPrivateSocket = "/run/systemd/private"

	// finishedJobTTL: a finished update Job is removed by Kubernetes this long after it ended. A
	// completed one the extension removes itself once the node reports the version; a failed one
	// stays that long as the record, and the next UpdateMachine call after that starts the
	// update again.
	finishedJobTTL = 24 * time.Hour
	// updateRetries: a Pod lost with its node (a reboot mid-update) or that got no result is
	// started again this many times; the node side resumes from its journal. A failed update
	// (nodeupdate.FailedExitCode, rolled back) is never retried by the Job.
	updateRetries = 3
)

// Retry intervals of the hook's answers.
const (
	retryRunning = 10
	retrySoon    = 5
)

// progress is one answer of UpdateMachine.
type progress struct {
	retryAfter int32
	message    string
	failed     bool
}

// update moves the node of the Machine in to the Machine's version, with the source its
// IgnitionConfig names, both as the API server has them (gatherUpdate): it gathers the workload
// cluster's side, decides (decideUpdate) and carries the decision out.
func (h *Handlers) update(ctx context.Context, in updateInputs) (progress, error) {
	f, workload, err := h.gatherWorkload(ctx, in)
	if err != nil {
		return progress{}, err
	}
	return h.execute(ctx, f, workload, decideUpdate(f))
}

// gatherWorkload reads what the decision needs from the workload cluster: the Machine's Node,
// its update Jobs (the one of this update by name, the others by the Machine's label), why a
// failed Job failed, and the control plane's version when an update is to start.
func (h *Handlers) gatherWorkload(ctx context.Context, in updateInputs) (updateFacts, client.Client, error) {
	machine := in.machine
	f := updateFacts{machine: machine, version: machine.Spec.Version}
	f.args, f.argsErr = updateNodeArgs(in.config.Spec.Kubernetes, f.version, in.digests)
	if f.argsErr != nil || !machine.Status.NodeRef.IsDefined() {
		return f, nil, nil
	}
	workload, err := h.ClusterCache.GetUncachedClient(ctx, client.ObjectKey{Namespace: machine.Namespace, Name: machine.Spec.ClusterName})
	if err != nil {
		return f, nil, fmt.Errorf("reaching the workload cluster %s: %w", machine.Spec.ClusterName, err)
	}
	f.node = &corev1.Node{}
	if err := workload.Get(ctx, client.ObjectKey{Name: machine.Status.NodeRef.Name}, f.node); err != nil {
		return f, nil, fmt.Errorf("reading Node %s: %w", machine.Status.NodeRef.Name, err)
	}
	jobs := &batchv1.JobList{}
	if err := workload.List(ctx, jobs, client.InNamespace(UpdateNamespace), client.MatchingLabels{MachineUIDLabel: string(machine.UID)}); err != nil {
		return f, nil, fmt.Errorf("listing the update Jobs of Node %s: %w", f.node.Name, err)
	}
	name := jobName(machine.UID, f.version)
	for _, j := range jobs.Items {
		if j.Name != name {
			f.others = append(f.others, j)
		}
	}
	// Read by name as well: a Job planted at the name without cabpi's labels is not in the list,
	// and must be refused rather than taken for none.
	f.job = &batchv1.Job{}
	err = workload.Get(ctx, client.ObjectKey{Namespace: UpdateNamespace, Name: name}, f.job)
	switch {
	case apierrors.IsNotFound(err):
		f.job = nil
	case err != nil:
		return f, nil, fmt.Errorf("reading the update Job of Node %s: %w", f.node.Name, err)
	case jobFinished(f.job, batchv1.JobFailed):
		pods := &corev1.PodList{}
		if err := workload.List(ctx, pods, client.InNamespace(UpdateNamespace), client.MatchingLabels{batchv1.JobNameLabel: f.job.Name}); err != nil {
			return f, nil, fmt.Errorf("listing the Pods of the update Job %s/%s: %w", UpdateNamespace, f.job.Name, err)
		}
		f.jobEnd.why, f.jobEnd.rolledBack = jobFailure(f.job, pods.Items)
	}
	if needsControlPlaneVersion(f) {
		if f.controlPlane, err = h.controlPlaneVersion(ctx, machine.Namespace, machine.Spec.ClusterName); err != nil {
			return f, nil, err
		}
	}
	return f, workload, nil
}

// execute carries out the decision of one call.
func (h *Handlers) execute(ctx context.Context, f updateFacts, workload client.Client, a updateAction) (progress, error) {
	switch a.kind {
	case actRefuse:
		return progress{}, refuse("%s", a.reason)
	case actWaitForNode:
		return progress{retryAfter: retrySoon, message: "waiting for the Machine's Node"}, nil
	case actWaitForOtherJob:
		return progress{retryAfter: retryRunning, message: fmt.Sprintf("waiting for the update of Node %s to %s to end", f.node.Name, a.otherVersion)}, nil
	}
	u := nodeUpdate{workload: workload, node: f.node, version: f.version}
	for _, j := range a.removeJobs {
		if err := u.deleteJob(ctx, j); err != nil {
			return progress{}, err
		}
	}
	machine, node, version := f.machine, f.node, f.version
	switch a.kind {
	case actFinished:
		if err := u.uncordon(ctx); err != nil {
			return progress{}, err
		}
		return progress{message: fmt.Sprintf("Node %s runs %s", node.Name, version)}, nil
	case actStart:
		return h.start(ctx, f, u)
	case actWaitForKubelet:
		return progress{retryAfter: retrySoon, message: fmt.Sprintf("waiting for the kubelet of Node %s to report %s, Ready", node.Name, version)}, nil
	case actSucceeded:
		return h.succeeded(ctx, u, machine, f.job)
	case actJobEnded:
		job, why := f.job, f.jobEnd.why
		if err := h.reportOnce(ctx, u, machine, job, metrics.InPlaceFailed, corev1.EventTypeWarning, "InPlaceUpdateJobEnded",
			fmt.Sprintf("the update Job %s/%s of Node %s ended without the node side's result: %s", UpdateNamespace, job.Name, node.Name, why)); err != nil {
			return progress{}, err
		}
		return progress{retryAfter: retryRunning, message: fmt.Sprintf("the update Job %s/%s ended without the node side's result (%s); "+
			"waiting for Node %s to report %s (delete the Job to start one that reads the node's result)", UpdateNamespace, job.Name, why, node.Name, version)}, nil
	case actRolledBack:
		// The node side failed the update and rolled back: the node runs the old version, and
		// takes Pods again.
		if err := u.uncordon(ctx); err != nil {
			return progress{}, err
		}
		message := rolledBackMessage(f)
		if err := h.reportOnce(ctx, u, machine, f.job, metrics.InPlaceRolledBack, corev1.EventTypeWarning, "InPlaceUpdateFailed", message); err != nil {
			return progress{}, err
		}
		return progress{failed: true, message: message}, nil
	}
	return progress{retryAfter: retryRunning, message: fmt.Sprintf("updating Node %s to %s (Job %s/%s)", node.Name, version, UpdateNamespace, f.job.Name)}, nil
}

// start starts the update of the node: cordoned, drained before a minor upgrade (drain.go),
// then the Job, counted and said once (a Job that exists already was started by an earlier call).
func (h *Handlers) start(ctx context.Context, f updateFacts, u nodeUpdate) (progress, error) {
	// The image first: a manager that cannot name it leaves the node as it is.
	image, err := h.Image(ctx)
	if err != nil {
		return progress{}, fmt.Errorf("cabpi's image for the update Job: %w", err)
	}
	if err := u.cordon(ctx); err != nil {
		return progress{}, err
	}
	if drainNeeded(f.node.Status.NodeInfo.KubeletVersion, f.version) {
		if p, err := h.drain(ctx, f.machine, u); err != nil || p != nil {
			return ptr.Deref(p, progress{}), err
		}
	}
	name := jobName(f.machine.UID, f.version)
	job := updateJob(f.machine.UID, f.node.Name, f.version, image, f.args)
	for _, s := range h.ImagePullSecrets {
		job.Spec.Template.Spec.ImagePullSecrets = append(job.Spec.Template.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	err = u.workload.Create(ctx, job)
	switch {
	case apierrors.IsAlreadyExists(err):
	case err != nil:
		return progress{}, fmt.Errorf("creating the update Job of Node %s: %w", f.node.Name, err)
	default:
		metrics.InPlaceUpdate(metrics.InPlaceStarted)
		h.event(f.machine, corev1.EventTypeNormal, "InPlaceUpdateStarted", "updating Node %s from %s to %s in place (Job %s/%s)",
			f.node.Name, f.node.Status.NodeInfo.KubeletVersion, f.version, UpdateNamespace, name)
	}
	return progress{retryAfter: retryRunning, message: fmt.Sprintf("started updating Node %s to %s", f.node.Name, f.version)}, nil
}

// updateNodeArgs are the arguments of cabpi update-node: the update as data (the version, the
// stored config's Kubernetes source, and the pins of its downloads: ignition.KubernetesPins,
// first boot's rule, from cabpi's catalogue and the user's digests); an error for a source that
// cannot be updated in place or a download with no digest known.
func updateNodeArgs(k cabpiv1.KubernetesSpec, version string, digests nodelayout.Digests) ([]string, error) {
	if err := ignition.CheckInPlace(k, version); err != nil {
		return nil, fmt.Errorf("cannot update in place: %w", err)
	}
	pins, err := ignition.KubernetesPins(k, version, ignition.KubernetesDigests{User: digests})
	if err != nil {
		return nil, fmt.Errorf("cannot update in place: %w", err)
	}
	data, err := json.Marshal(nodeupdate.Update{Version: version, Kubernetes: k, Digests: pins})
	if err != nil {
		return nil, err
	}
	return []string{"update-node", "--update=" + string(data)}, nil
}

// jobName is the name of the update Job of the Machine (its UID) to version: a node that later
// reuses a name, or a Machine updated again, never finds an old Job under it (a Job name is at
// most 63 characters).
func jobName(machine types.UID, version string) string {
	sum := sha256.Sum256([]byte(string(machine) + "/" + version))
	return "cabpi-update-" + hex.EncodeToString(sum[:])[:16]
}

// jobLabels are the labels of the update Jobs of the Machine.
func jobLabels(machine types.UID) map[string]string {
	return map[string]string{"app.kubernetes.io/name": "cabpi-update", "app.kubernetes.io/managed-by": "cabpi", MachineUIDLabel: string(machine)}
}

// notOurs says why job is not an update Job cabpi made for machine's node ("" when it is): a
// Job is read as an update's result, or deleted, only then.
func notOurs(job *batchv1.Job, machine *clusterv1.Machine, node string) string {
	for k, v := range jobLabels(machine.UID) {
		if job.Labels[k] != v {
			return fmt.Sprintf("lacks the label %s=%s", k, v)
		}
	}
	if job.Annotations[NodeAnnotation] != node || job.Spec.Template.Spec.NodeName != node {
		return fmt.Sprintf("is not pinned to Node %s", node)
	}
	return ""
}

// updateJob is the Job that updates node to version: pinned to it, on the host network (no
// CNI needed), tolerating every taint, as root with the host's systemd private socket alone and
// the update's state directory. Least privilege: no capability at all (root owns the socket and
// the directory, and systemd admits a peer by its user ID), no privilege escalation, a
// read-only root file system, small requests. Its SELinux type is spc_t, because on Fedora
// CoreOS a container_t process may not talk to systemd (ignored where SELinux is off). The host
// path and the host network need the namespace's Pod Security level to be privileged
// (kube-system's is): docs/guide/upgrading-in-place.md.
func updateJob(machine types.UID, node, version, image string, args []string) *batchv1.Job {
	hostDir := func(name, path string, t corev1.HostPathType) corev1.Volume {
		return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path, Type: &t}}}
	}
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: UpdateNamespace, Name: jobName(machine, version),
			Labels:      jobLabels(machine),
			Annotations: map[string]string{VersionAnnotation: version, NodeAnnotation: node},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](updateRetries),
			TTLSecondsAfterFinished: ptr.To(int32(finishedJobTTL.Seconds())),
			ActiveDeadlineSeconds:   ptr.To(int64(updateDeadline.Seconds())),
			PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{nodeupdate.FailedExitCode},
				},
			}}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "cabpi-update"}},
				Spec: corev1.PodSpec{
					NodeName:          node,
					HostNetwork:       true,
					RestartPolicy:     corev1.RestartPolicyNever,
					PriorityClassName: "system-node-critical",
					Tolerations:       []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					SecurityContext: &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](0), RunAsGroup: ptr.To[int64](0),
						SELinuxOptions: &corev1.SELinuxOptions{Type: "spc_t"}},
					Containers: []corev1.Container{{
						Name: "update", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						Args:                     args,
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							ReadOnlyRootFilesystem:   ptr.To(true),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("10m"),
							corev1.ResourceMemory: resource.MustParse("32Mi"),
						}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "systemd", MountPath: systemdPrivateSocket},
							{Name: "state", MountPath: nodeupdate.StateDir},
						},
					}},
					Volumes: []corev1.Volume{
						hostDir("systemd", systemdPrivateSocket, corev1.HostPathSocket),
						hostDir("state", nodeupdate.StateDir, corev1.HostPathDirectoryOrCreate),
					},
				},
			},
		},
	}
}

func jobFinished(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func jobActive(job *batchv1.Job) bool {
	return !jobFinished(job, batchv1.JobComplete) && !jobFinished(job, batchv1.JobFailed)
}

// nodeUpdate is the workload cluster's side of one update.
type nodeUpdate struct {
	workload client.Client
	node     *corev1.Node
	version  string
}

// cordon marks the node unschedulable for the update, noting that the extension did it. The
// Pods that run stay for a patch upgrade (the kubelet's restart does not stop containers); a
// minor upgrade drains them first (drain.go).
func (u nodeUpdate) cordon(ctx context.Context) error {
	if u.node.Spec.Unschedulable {
		return nil
	}
	before := u.node.DeepCopy()
	u.node.Spec.Unschedulable = true
	metav1.SetMetaDataAnnotation(&u.node.ObjectMeta, CordonedAnnotation, u.version)
	if err := u.workload.Patch(ctx, u.node, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("cordoning Node %s: %w", u.node.Name, err)
	}
	return nil
}

// uncordon undoes cordon, and forgets a drain's start; a node the extension did not cordon is
// left unschedulable.
func (u nodeUpdate) uncordon(ctx context.Context) error {
	_, ours := u.node.Annotations[CordonedAnnotation]
	_, drained := u.node.Annotations[DrainStartedAnnotation]
	if !ours && !drained {
		return nil
	}
	before := u.node.DeepCopy()
	if ours {
		u.node.Spec.Unschedulable = false
	}
	delete(u.node.Annotations, CordonedAnnotation)
	delete(u.node.Annotations, DrainStartedAnnotation)
	if err := u.workload.Patch(ctx, u.node, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("uncordoning Node %s: %w", u.node.Name, err)
	}
	return nil
}

func (u nodeUpdate) deleteJob(ctx context.Context, job *batchv1.Job) error {
	err := u.workload.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the update Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// jobFailure is why a failed Job failed: the node side's result line (its last Pod's termination
// message), else the Job's own reason (deadline exceeded, Pods lost); rolledBack only when the
// node side itself ended the update (its exit code: the node is back on the old version, or
// was never swapped). Any other end of a Job is not the node's result.
func jobFailure(job *batchv1.Job, pods []corev1.Pod) (why string, rolledBack bool) {
	var latest *corev1.ContainerStateTerminated
	for i := range pods {
		for _, s := range pods[i].Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil && (latest == nil || t.FinishedAt.After(latest.FinishedAt.Time)) {
				latest = t
			}
		}
	}
	rolledBack = latest != nil && latest.ExitCode == nodeupdate.FailedExitCode
	if latest != nil && strings.TrimSpace(latest.Message) != "" {
		return strings.TrimSpace(latest.Message), rolledBack
	}
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
			return fmt.Sprintf("the Job failed (%s: %s)", c.Reason, c.Message), rolledBack
		}
	}
	return "the Job failed", rolledBack
}

// succeeded ends an update whose node reports the version, Ready: uncordoned, its Job removed,
// counted and said once (the calls that follow find no Job and the node done).
func (h *Handlers) succeeded(ctx context.Context, u nodeUpdate, machine *clusterv1.Machine, job *batchv1.Job) (progress, error) {
	if err := u.uncordon(ctx); err != nil {
		return progress{}, err
	}
	if err := u.deleteJob(ctx, job); err != nil {
		return progress{}, err
	}
	metrics.InPlaceUpdateSucceeded(time.Since(job.CreationTimestamp.Time))
	h.event(machine, corev1.EventTypeNormal, "InPlaceUpdateSucceeded", "Node %s runs %s", u.node.Name, u.version)
	return progress{message: fmt.Sprintf("Node %s runs %s", u.node.Name, u.version)}, nil
}

// reportOnce counts and says a failed Job's end the first time it is seen: Cluster API calls
// again (after its backoff, or the retry interval), and the Job stays as the record, so it is
// marked (ReportedAnnotation) for the answers that follow.
func (h *Handlers) reportOnce(ctx context.Context, u nodeUpdate, machine *clusterv1.Machine, job *batchv1.Job,
	result metrics.InPlaceResult, eventType, reason, message string) error {
	if _, reported := job.Annotations[ReportedAnnotation]; reported {
		return nil
	}
	if err := u.markReported(ctx, job); err != nil {
		return err
	}
	metrics.InPlaceUpdate(result)
	h.event(machine, eventType, reason, "%s", message)
	return nil
}

// markReported notes on a failed Job that its failure was counted and said.
func (u nodeUpdate) markReported(ctx context.Context, job *batchv1.Job) error {
	before := job.DeepCopy()
	metav1.SetMetaDataAnnotation(&job.ObjectMeta, ReportedAnnotation, "")
	if err := u.workload.Patch(ctx, job, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("marking the update Job %s/%s reported: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// event records an event on the Machine, when there is a recorder. Events carry node names and
// versions, never the node side's secrets: it has none.
func (h *Handlers) event(machine *clusterv1.Machine, eventType, reason, format string, args ...any) {
	if h.Recorder != nil {
		h.Recorder.Eventf(machine, nil, eventType, reason, "UpdateMachine", format, args...)
	}
}
