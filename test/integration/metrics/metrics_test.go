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
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	eventually = time.Minute
	tick       = 100 * time.Millisecond
)

// A worker Machine gets its bootstrap data, another config waits on a ConfigMap it references:
// scraped with a metrics-reader token, the endpoint shows one worker join rendered (duration and
// size), one data Secret created, one join token created and the failure, by its reason. Without
// a token, or with one the metrics-reader role is not bound to, the endpoint refuses.
func TestWorkerFlowMovesCounters(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "metrics").Name
	token, err := env.ServiceAccountToken(ctx, ns, "prometheus")
	require.NoError(t, err)
	require.NoError(t, env.BindClusterRole(ctx, "metrics-reader", ns, "prometheus", "/metrics"))

	var before map[string]*dto.MetricFamily
	require.EventuallyWithT(t, func(c *assert.CollectT) { // the endpoint starts with the manager
		before = scrape(ctx, c, token)
	}, eventually, tick)

	f := fx.CreateCluster(t, ns, "c1", fixtures.ClusterSetup{})

	f.AddMachine(t, "w-0", false, cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFlatcar})
	f.AddMachine(t, "w-missing", false, cabpiv1.IgnitionConfigSpec{
		Variant: cabpiv1.VariantFlatcar,
		Butane: cabpiv1.ButaneSpec{ContentFrom: &cabpiv1.ButaneSource{
			ConfigMap: &cabpiv1.KeyReference{Name: "not-there", Key: "config.bu"},
		}},
	})
	fx.WaitForCondition(t, ns, "w-0", cabpiv1.DataSecretAvailableCondition, metav1.ConditionTrue, cabpiv1.DataSecretAvailableReason)
	fx.WaitForCondition(t, ns, "w-missing", cabpiv1.DataSecretAvailableCondition, metav1.ConditionFalse, cabpiv1.ReferenceNotFoundReason)

	worker := map[string]string{"role": "worker-join", "variant": "flatcar"}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		after := scrape(ctx, c, token)
		if after == nil {
			return
		}
		// Nothing else in this process renders: each moved by exactly what the worker did.
		moved := func(name string, labels map[string]string, field func(*dto.Metric) float64) float64 {
			return sample(after, name, labels, field) - sample(before, name, labels, field)
		}
		assert.Equal(c, 1.0, moved("cabpi_render_duration_seconds", worker, histogramCount), "renders observed")
		assert.Greater(c, moved("cabpi_render_duration_seconds", worker, histogramSum), 0.0, "render time")
		assert.Equal(c, 1.0, moved("cabpi_rendered_bytes", worker, histogramCount), "sizes observed")
		assert.Greater(c, moved("cabpi_rendered_bytes", worker, histogramSum), 1000.0, "bytes rendered")
		assert.Equal(c, 1.0, moved("cabpi_data_secrets_written_total", map[string]string{"operation": "create"}, counter), "data Secrets created")
		assert.Equal(c, 0.0, moved("cabpi_data_secrets_written_total", map[string]string{"operation": "update"}, counter), "data Secrets updated")
		assert.Equal(c, 1.0, moved("cabpi_join_tokens_total", map[string]string{"operation": "create"}, counter), "join tokens created")
		assert.GreaterOrEqual(c, moved("cabpi_failures_total", map[string]string{"reason": cabpiv1.ReferenceNotFoundReason}, counter), 1.0,
			"failures (the config waiting on its ConfigMap is looked at again)")
	}, eventually, tick)

	// Fixed before its Machine provisions (the generic infrastructure never does): rendered again
	// in place, counted as a re-render and a data Secret update.
	mid := scrapeOK(ctx, t, token)
	cfg := &cabpiv1.IgnitionConfig{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "w-0"}, cfg))
	cfg.Spec.PreKubeadmCommands = []string{"echo fixed"}
	require.NoError(t, env.Client.Update(ctx, cfg))
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		after := scrape(ctx, c, token)
		if after == nil {
			return
		}
		assert.Equal(c, 1.0, sample(after, "cabpi_rerenders_total", map[string]string{}, counter)-
			sample(mid, "cabpi_rerenders_total", map[string]string{}, counter), "re-renders")
		assert.Equal(c, 1.0, sample(after, "cabpi_data_secrets_written_total", map[string]string{"operation": "update"}, counter)-
			sample(mid, "cabpi_data_secrets_written_total", map[string]string{"operation": "update"}, counter), "data Secret updated in place")
	}, eventually, tick)

	// Refused: no token (not authenticated), a token of a ServiceAccount without the role.
	status, body, err := testenv.ScrapeMetrics(ctx, metricsAddress, "")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnauthorized, status, body)
	assert.NotContains(t, body, "cabpi_")
	stranger, err := env.ServiceAccountToken(ctx, ns, "stranger")
	require.NoError(t, err)
	status, body, err = testenv.ScrapeMetrics(ctx, metricsAddress, stranger)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, status, body)
	assert.NotContains(t, body, "cabpi_")
}

// scrapeOK scrapes until the endpoint answers.
func scrapeOK(ctx context.Context, t *testing.T, token string) map[string]*dto.MetricFamily {
	t.Helper()
	var families map[string]*dto.MetricFamily
	require.EventuallyWithT(t, func(c *assert.CollectT) { families = scrape(ctx, c, token) }, eventually, tick)
	return families
}

// scrape gets the metrics with token and parses them; nil (and c failed) when it cannot.
func scrape(ctx context.Context, c *assert.CollectT, token string) map[string]*dto.MetricFamily {
	status, body, err := testenv.ScrapeMetrics(ctx, metricsAddress, token)
	if !assert.NoError(c, err) || !assert.Equal(c, http.StatusOK, status, body) {
		return nil
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if !assert.NoError(c, err) {
		return nil
	}
	return families
}

// sample is field of the series of metric name with labels; 0 when there is none yet.
func sample(families map[string]*dto.MetricFamily, name string, labels map[string]string, field func(*dto.Metric) float64) float64 {
	f := families[name]
	if f == nil {
		return 0
	}
	for _, m := range f.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		match := len(got) == len(labels)
		for k, v := range labels {
			match = match && got[k] == v
		}
		if match {
			return field(m)
		}
	}
	return 0
}

func counter(m *dto.Metric) float64        { return m.GetCounter().GetValue() }
func histogramCount(m *dto.Metric) float64 { return float64(m.GetHistogram().GetSampleCount()) }
func histogramSum(m *dto.Metric) float64   { return m.GetHistogram().GetSampleSum() }
