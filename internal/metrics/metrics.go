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

// Package metrics holds cabpi's own Prometheus metrics, registered on controller-runtime's
// registry (sigs.k8s.io/controller-runtime/pkg/metrics), which the manager serves on its
// diagnostics endpoint next to controller-runtime's and client-go's (docs/adr/014-metrics.md).
//
// Every label value comes from a small fixed set (roles, variants, operations, condition
// reasons), never from an object's name or namespace: the number of series does not grow with
// the number of clusters, configs or machines.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// RoleLabel is the value of the "role" label of the render metrics: what the rendered data makes
// of its node (ignition.Role), with a MachinePool's join told apart from a worker Machine's (its
// data is rewritten at every token rotation, a Machine's is not). It is a label value, not a
// role of its own: the controller derives it from the rendered input's ignition.Role and its
// owner's kind.
type RoleLabel string

// The role label's values (ADR 014).
const (
	RoleLabelInit             RoleLabel = "init"
	RoleLabelControlPlaneJoin RoleLabel = "control-plane-join"
	RoleLabelWorkerJoin       RoleLabel = "worker-join"
	RoleLabelMachinePool      RoleLabel = "machinepool"
)

// SecretOperation is how a data Secret was written (label "operation").
type SecretOperation string

// The data Secret writes.
const (
	SecretCreate SecretOperation = "create"
	SecretUpdate SecretOperation = "update"
)

// TokenOperation is what happened to a join token in a workload cluster (label "operation").
type TokenOperation string

// The join token operations.
const (
	// TokenCreate: a token created for a config's data (first render, or a Machine's token lost
	// before it was provisioned).
	TokenCreate TokenOperation = "create"
	// TokenRefresh: a Machine's token given a new expiration until its node joins.
	TokenRefresh TokenOperation = "refresh"
	// TokenRotate: a MachinePool's token replaced by a new one, its data rewritten.
	TokenRotate TokenOperation = "rotate"
)

// InPlaceResult is what became of an in-place update (label "result").
type InPlaceResult string

// The in-place update results (docs/guide/metrics.md).
const (
	// InPlaceStarted: an update Job was created for a node.
	InPlaceStarted InPlaceResult = "started"
	// InPlaceSucceeded: the node reports the new version, Ready.
	InPlaceSucceeded InPlaceResult = "succeeded"
	// InPlaceRolledBack: the node side failed the update and put the node back on the old
	// version.
	InPlaceRolledBack InPlaceResult = "rolled_back"
	// InPlaceFailed: the update Job failed without the node side's result (its deadline, its
	// Pods lost).
	InPlaceFailed InPlaceResult = "failed"
)

const namespace = "cabpi"

var (
	renderDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "render_duration_seconds",
		Help:      "Time to render a config's bootstrap data that was then stored, by role and variant (join tokens excluded).",
		// 1 ms to about 4 s: a render takes milliseconds, a large Butane snippet more.
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 13),
	}, []string{"role", "variant"})

	renderedBytes = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "rendered_bytes",
		Help:      "Size of the bootstrap data stored in a data Secret, by role and variant.",
		// 4 KiB to 1 MiB, the most a Secret holds.
		Buckets: prometheus.ExponentialBuckets(4096, 2, 9),
	}, []string{"role", "variant"})

	dataSecretsWritten = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "data_secrets_written_total",
		Help:      "Data Secrets written, by operation (create, update).",
	}, []string{"operation"})

	joinTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "join_tokens_total",
		Help:      "Join tokens created, refreshed or rotated in workload clusters and delivered in bootstrap data, by operation.",
	}, []string{"operation"})

	failures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "failures_total",
		Help:      "Reconciles that ended with a failure a user can fix, by the DataSecretAvailable condition's reason.",
	}, []string{"reason"})

	inPlaceUpdates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "inplace_updates_total",
		Help:      "In-place updates of nodes by the update extension, by result (started, succeeded, rolled_back, failed).",
	}, []string{"result"})

	inPlaceUpdateDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Name:      "inplace_update_duration_seconds",
		Help:      "Time from an in-place update's Job to the node reporting the new version, Ready, for the updates that succeeded.",
		// 15 s to about 2 h: a download, kubeadm upgrade node and a kubelet restart.
		Buckets: prometheus.ExponentialBuckets(15, 2, 10),
	}, nil)

	// A vector without labels: one series, as a plain counter's, that can be reset with the
	// others (reset).
	rerenders = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Name:      "rerenders_total",
		Help:      "Bootstrap data rendered again, in place, before the machine first booted from it.",
	}, nil)
)

// vectors are every metric of cabpi's: registered once, reset together.
var vectors = []interface {
	prometheus.Collector
	Reset()
}{renderDuration, renderedBytes, dataSecretsWritten, joinTokens, failures, rerenders, inPlaceUpdates, inPlaceUpdateDuration}

func init() {
	for _, v := range vectors {
		crmetrics.Registry.MustRegister(v)
	}
	startSeries()
}

// startSeries makes the series that exist from the start, at zero: a rate over the operations
// is defined before the first write, and an alert on "no creates" can tell a quiet manager from
// a missing series.
func startSeries() {
	for _, op := range []SecretOperation{SecretCreate, SecretUpdate} {
		dataSecretsWritten.WithLabelValues(string(op))
	}
	for _, op := range []TokenOperation{TokenCreate, TokenRefresh, TokenRotate} {
		joinTokens.WithLabelValues(string(op))
	}
	rerenders.WithLabelValues()
	for _, r := range []InPlaceResult{InPlaceStarted, InPlaceSucceeded, InPlaceRolledBack, InPlaceFailed} {
		inPlaceUpdates.WithLabelValues(string(r))
	}
}

// reset brings every series back to its start (tests count from zero, under go test -count
// too, as a new process does).
func reset() {
	for _, v := range vectors {
		v.Reset()
	}
	startSeries()
}

// ObserveRender records a render whose data was stored: how long it took and how large the
// data is. variant is the config's (flatcar, fcos).
func ObserveRender(role RoleLabel, variant string, took time.Duration, bytes int) {
	renderDuration.WithLabelValues(string(role), variant).Observe(took.Seconds())
	renderedBytes.WithLabelValues(string(role), variant).Observe(float64(bytes))
}

// DataSecretWritten counts a data Secret created or updated.
func DataSecretWritten(op SecretOperation) {
	dataSecretsWritten.WithLabelValues(string(op)).Inc()
}

// JoinToken counts a join token created, refreshed or rotated.
func JoinToken(op TokenOperation) {
	joinTokens.WithLabelValues(string(op)).Inc()
}

// Failure counts a reconcile that ended with a user-actionable failure; reason is the
// DataSecretAvailable condition's (one of apis/v1alpha1's constants).
func Failure(reason string) {
	failures.WithLabelValues(reason).Inc()
}

// Rerender counts bootstrap data rendered again before its machine first booted.
func Rerender() {
	rerenders.WithLabelValues().Inc()
}

// InPlaceUpdate counts an in-place update's start or end.
func InPlaceUpdate(result InPlaceResult) {
	inPlaceUpdates.WithLabelValues(string(result)).Inc()
}

// InPlaceUpdateSucceeded counts an in-place update that succeeded and records how long it took.
func InPlaceUpdateSucceeded(took time.Duration) {
	InPlaceUpdate(InPlaceSucceeded)
	inPlaceUpdateDuration.WithLabelValues().Observe(took.Seconds())
}
