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

package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// The functions move the series controller-runtime's registry serves, under the names and
// labels of ADR 014.
func TestFunctionsMoveRegisteredSeries(t *testing.T) {
	metrics.Reset() // the series are the process's: what an earlier run (go test -count) counted
	metrics.ObserveRender(metrics.RoleLabelMachinePool, "fcos", 3*time.Millisecond, 12345)
	metrics.DataSecretWritten(metrics.SecretUpdate)
	metrics.JoinToken(metrics.TokenRotate)
	metrics.JoinToken(metrics.TokenRotate)
	metrics.Failure("InvalidButane")
	metrics.Rerender()
	metrics.InPlaceUpdate(metrics.InPlaceStarted)
	metrics.InPlaceUpdate(metrics.InPlaceStarted)
	metrics.InPlaceUpdateSucceeded(90 * time.Second)
	metrics.InPlaceUpdate(metrics.InPlaceRolledBack)

	want := `
# HELP cabpi_rendered_bytes Size of the bootstrap data stored in a data Secret, by role and variant.
# TYPE cabpi_rendered_bytes histogram
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="4096"} 0
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="8192"} 0
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="16384"} 1
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="32768"} 1
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="65536"} 1
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="131072"} 1
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="262144"} 1
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="524288"} 1
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="1.048576e+06"} 1
cabpi_rendered_bytes_bucket{role="machinepool",variant="fcos",le="+Inf"} 1
cabpi_rendered_bytes_sum{role="machinepool",variant="fcos"} 12345
cabpi_rendered_bytes_count{role="machinepool",variant="fcos"} 1
# HELP cabpi_data_secrets_written_total Data Secrets written, by operation (create, update).
# TYPE cabpi_data_secrets_written_total counter
cabpi_data_secrets_written_total{operation="create"} 0
cabpi_data_secrets_written_total{operation="update"} 1
# HELP cabpi_join_tokens_total Join tokens created, refreshed or rotated in workload clusters and delivered in bootstrap data, by operation.
# TYPE cabpi_join_tokens_total counter
cabpi_join_tokens_total{operation="create"} 0
cabpi_join_tokens_total{operation="refresh"} 0
cabpi_join_tokens_total{operation="rotate"} 2
# HELP cabpi_failures_total Reconciles that ended with a failure a user can fix, by the DataSecretAvailable condition's reason.
# TYPE cabpi_failures_total counter
cabpi_failures_total{reason="InvalidButane"} 1
# HELP cabpi_rerenders_total Bootstrap data rendered again, in place, before the machine first booted from it.
# TYPE cabpi_rerenders_total counter
cabpi_rerenders_total 1
# HELP cabpi_inplace_updates_total In-place updates of nodes by the update extension, by result (started, succeeded, rolled_back, failed).
# TYPE cabpi_inplace_updates_total counter
cabpi_inplace_updates_total{result="failed"} 0
cabpi_inplace_updates_total{result="rolled_back"} 1
cabpi_inplace_updates_total{result="started"} 2
cabpi_inplace_updates_total{result="succeeded"} 1
# HELP cabpi_inplace_update_duration_seconds Time from an in-place update's Job to the node reporting the new version, Ready, for the updates that succeeded.
# TYPE cabpi_inplace_update_duration_seconds histogram
cabpi_inplace_update_duration_seconds_bucket{le="15"} 0
cabpi_inplace_update_duration_seconds_bucket{le="30"} 0
cabpi_inplace_update_duration_seconds_bucket{le="60"} 0
cabpi_inplace_update_duration_seconds_bucket{le="120"} 1
cabpi_inplace_update_duration_seconds_bucket{le="240"} 1
cabpi_inplace_update_duration_seconds_bucket{le="480"} 1
cabpi_inplace_update_duration_seconds_bucket{le="960"} 1
cabpi_inplace_update_duration_seconds_bucket{le="1920"} 1
cabpi_inplace_update_duration_seconds_bucket{le="3840"} 1
cabpi_inplace_update_duration_seconds_bucket{le="7680"} 1
cabpi_inplace_update_duration_seconds_bucket{le="+Inf"} 1
cabpi_inplace_update_duration_seconds_sum 90
cabpi_inplace_update_duration_seconds_count 1
`
	require.NoError(t, testutil.GatherAndCompare(crmetrics.Registry, strings.NewReader(want),
		"cabpi_rendered_bytes", "cabpi_data_secrets_written_total", "cabpi_join_tokens_total",
		"cabpi_failures_total", "cabpi_rerenders_total", "cabpi_inplace_updates_total", "cabpi_inplace_update_duration_seconds"))

	// The duration lands in the 4 ms bucket (3 ms), not the 2 ms one.
	families, err := crmetrics.Registry.Gather()
	require.NoError(t, err)
	var found bool
	for _, f := range families {
		if f.GetName() != "cabpi_render_duration_seconds" {
			continue
		}
		found = true
		require.Len(t, f.GetMetric(), 1)
		h := f.GetMetric()[0].GetHistogram()
		assert.EqualValues(t, 1, h.GetSampleCount())
		assert.InDelta(t, 0.003, h.GetSampleSum(), 1e-9)
		for _, b := range h.GetBucket() {
			switch b.GetUpperBound() {
			case 0.002:
				assert.EqualValues(t, 0, b.GetCumulativeCount(), "le=0.002")
			case 0.004:
				assert.EqualValues(t, 1, b.GetCumulativeCount(), "le=0.004")
			}
		}
	}
	assert.True(t, found, "cabpi_render_duration_seconds is registered")
}
