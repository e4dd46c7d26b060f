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
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/core/reconcilers/machine/drain"
)

// A minor upgrade drains the node; a patch keeps its Pods (Kubernetes' version skew policy).
func TestDrainNeeded(t *testing.T) {
	for _, tc := range []struct {
		kubelet, target string
		want            bool
	}{
		{"v1.33.13", "v1.34.4", true},
		{"v1.34.0", "v1.34.4", false},
		{"v1.34.4", "v1.34.4", false},
		{"v1.34.4", "v2.34.4", true},
		{"v1.34.4-eks-1", "v1.34.5", false},
		{"not a version", "v1.34.4", true},
	} {
		assert.Equal(t, tc.want, drainNeeded(tc.kubelet, tc.target), "%s to %s", tc.kubelet, tc.target)
	}
}

// The Machine's nodeDrainTimeout bounds the drain from its noted start; unset or 0 waits.
func TestDrainTimedOut(t *testing.T) {
	start := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	machine := func(timeout *int32) *clusterv1.Machine {
		m := &clusterv1.Machine{}
		m.Spec.Deletion.NodeDrainTimeoutSeconds = timeout
		return m
	}
	for _, tc := range []struct {
		name    string
		timeout *int32
		started time.Time
		now     time.Time
		want    bool
	}{
		{"unset waits", nil, start, start.Add(24 * time.Hour), false},
		{"zero waits", ptr.To[int32](0), start, start.Add(24 * time.Hour), false},
		{"within", ptr.To[int32](60), start, start.Add(59 * time.Second), false},
		{"after", ptr.To[int32](60), start, start.Add(61 * time.Second), true},
		{"start unknown", ptr.To[int32](60), time.Time{}, start, false},
	} {
		assert.Equal(t, tc.want, drainTimedOut(machine(tc.timeout), tc.started, tc.now), tc.name)
	}
}

// The start is read from the Node; anything else there than a time is no start.
func TestDrainStarted(t *testing.T) {
	node := func(v string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{DrainStartedAnnotation: v}}}
	}
	assert.Equal(t, time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC), drainStarted(node("2026-12-06T12:00:00Z")).UTC())
	assert.True(t, drainStarted(node("yesterday")).IsZero())
	assert.True(t, drainStarted(&corev1.Node{}).IsZero())
}

// The message is Cluster API's account of a drain not done, on one line: the Pods its budget
// keeps with the API server's words, the Pods terminating.
func TestDrainLeft(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	}
	result := drain.EvictionResult{
		PodsFailedEviction: map[string][]*corev1.Pod{
			"Cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 1 healthy pods and has 1 currently": {pod("web-1")},
		},
		PodsDeletionTimestampSet: []*corev1.Pod{pod("job-x")},
	}
	got := drainLeft(result, time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC))
	assert.NotContains(t, got, "\n")
	assert.Contains(t, got, "(started at 2026-12-06T12:00:00Z)")
	assert.Contains(t, got, "Pod default/web-1: cannot evict pod as it would violate the pod's disruption budget. The disruption budget web needs 1 healthy pods")
	assert.Contains(t, got, "Pod default/job-x: deletionTimestamp set, but still not removed from the Node")
}
