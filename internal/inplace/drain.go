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
	"fmt"
	"strings"
	"time"

	"github.com/blang/semver/v4"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine/drain"
)

// The drain before a minor upgrade (docs/adr/039). Kubernetes' version skew policy: "Before
// performing a minor version kubelet upgrade, drain pods from that node. In-place minor version
// kubelet upgrades are not supported." Cluster API does not drain before UpdateMachine, so the
// extension does, with Cluster API's own drain (core/reconcilers/machine/drain, what it drains a
// deleted Machine's node with): the eviction API, so every PodDisruptionBudget holds; DaemonSet
// and mirror Pods left; the Machine's MachineDrainRules and the cluster.x-k8s.io/drain label
// honoured. The hook is called again and again, so one call evicts what it can and answers
// "retry": it never waits on a Pod's end. A patch upgrade, which the policy allows in place,
// keeps the node's Pods.

// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machinedrainrules,verbs=list;watch

// DrainStartedAnnotation on a Node is when the extension began draining it for an update (RFC
// 3339): the Machine's nodeDrainTimeout counts from it, across calls and extension restarts.
const DrainStartedAnnotation = "ignition.bootstrap.cluster.x-k8s.io/drain-started"

// drainCallTimeout bounds the evictions of one call.
const drainCallTimeout = 5 * time.Second

// drainNeeded: the kubelet moves to another minor version, which the policy does not allow with
// Pods on the node.
func drainNeeded(kubelet, target string) bool {
	from, errFrom := semver.ParseTolerant(kubelet)
	to, errTo := semver.ParseTolerant(target)
	if errFrom != nil || errTo != nil {
		return true // versionDeclined refuses these before anything is drained; drain if ever asked
	}
	return from.Major != to.Major || from.Minor != to.Minor
}

// drainTimedOut: the Machine's nodeDrainTimeout (spec.deletion.nodeDrainTimeoutSeconds, which
// Cluster API applies to its own drain) has passed since the drain started. Unset or 0 waits
// as long as it takes, as Cluster API's drain does.
func drainTimedOut(machine *clusterv1.Machine, started, now time.Time) bool {
	timeout := machine.Spec.Deletion.NodeDrainTimeoutSeconds
	if timeout == nil || *timeout <= 0 || started.IsZero() {
		return false
	}
	return now.Sub(started) > time.Duration(*timeout)*time.Second
}

// drainStarted reads when the drain of the node began (zero when it has not, or the annotation
// is not a time: then the timeout counts from the next call that sets it).
func drainStarted(node *corev1.Node) time.Time {
	t, err := time.Parse(time.RFC3339, node.Annotations[DrainStartedAnnotation])
	if err != nil {
		return time.Time{}
	}
	return t
}

// drain drains the node of the update before a minor upgrade: nil once no Pod that must go is
// left; else the answer of this call. The first call notes the start on the Node and says so
// on the Machine; a drain still blocked after the Machine's nodeDrainTimeout gives up, naming
// the Pods that block it: the node is uncordoned, nothing on it was changed, and Cluster API is
// told Failure, after whose backoff it asks again.
func (h *Handlers) drain(ctx context.Context, machine *clusterv1.Machine, u nodeUpdate) (*progress, error) {
	now := time.Now()
	started := drainStarted(u.node)
	if started.IsZero() {
		started = now
		if err := u.markDrainStarted(ctx, started); err != nil {
			return nil, err
		}
		h.event(machine, corev1.EventTypeNormal, "InPlaceUpdateDraining", "draining Node %s before its minor upgrade from %s to %s",
			u.node.Name, u.node.Status.NodeInfo.KubeletVersion, u.version)
	}
	cluster := &clusterv1.Cluster{}
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: machine.Namespace, Name: machine.Spec.ClusterName}, cluster); err != nil {
		return nil, fmt.Errorf("reading Cluster %s: %w", machine.Spec.ClusterName, err)
	}
	// Evictions within one call, well inside the timeout UpdateMachine's handler asks of Cluster
	// API (server.go): what is not evicted now is in the next call.
	ctx, cancel := context.WithTimeout(ctx, drainCallTimeout)
	defer cancel()
	helper := &drain.Helper{Client: h.Client, RemoteClient: u.workload,
		// Each Pod's own terminationGracePeriodSeconds.
		GracePeriodSeconds: -1}
	pods, err := helper.GetPodsForEviction(ctx, cluster, machine, u.node.Name)
	if err != nil {
		return nil, fmt.Errorf("draining Node %s: %w", u.node.Name, err)
	}
	result := helper.EvictPods(ctx, pods)
	switch {
	case result.DrainCompleted():
		return nil, nil
	case drainTimedOut(machine, started, now):
		if err := u.uncordon(ctx); err != nil {
			return nil, err
		}
		message := fmt.Sprintf("draining Node %s before its minor upgrade to %s gave up after the Machine's nodeDrainTimeout (%ds): %s. "+
			"Nothing on the node was changed and it takes Pods again; Cluster API asks again after its backoff",
			u.node.Name, u.version, *machine.Spec.Deletion.NodeDrainTimeoutSeconds, drainLeft(result, started))
		h.event(machine, corev1.EventTypeWarning, "InPlaceUpdateDrainTimedOut", "%s", message)
		return &progress{failed: true, message: message}, nil
	}
	return &progress{retryAfter: retrySoon, message: fmt.Sprintf("draining Node %s before its minor upgrade to %s: %s",
		u.node.Name, u.version, drainLeft(result, started))}, nil
}

// markDrainStarted notes on the Node when its drain began.
func (u nodeUpdate) markDrainStarted(ctx context.Context, at time.Time) error {
	before := u.node.DeepCopy()
	metav1.SetMetaDataAnnotation(&u.node.ObjectMeta, DrainStartedAnnotation, at.UTC().Format(time.RFC3339))
	if err := u.workload.Patch(ctx, u.node, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("noting the drain of Node %s: %w", u.node.Name, err)
	}
	return nil
}

// drainLeft is Cluster API's own account of a drain not done (the one its Machines' Deleting
// condition shows): the Pods left and why each is, on one line.
func drainLeft(result drain.EvictionResult, started time.Time) string {
	return strings.ReplaceAll(result.ConditionMessage(metav1.NewTime(started)), "\n", " ")
}
