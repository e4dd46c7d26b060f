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

package rbac_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// The manager's metrics endpoint scraped as a Prometheus would: with the token of a
// ServiceAccount bound to config/rbac's metrics-reader ClusterRole it serves the metrics. To
// decide, the manager reviews the token and the scraper's right with its own ServiceAccount
// (tokenreviews and subjectaccessreviews create), and the API server refuses none of that. A
// ServiceAccount without the binding is refused.
func TestMetricsScrapedWithMetricsReader(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "monitoring").Name
	token, err := env.ServiceAccountToken(ctx, ns, "prometheus")
	require.NoError(t, err)
	require.NoError(t, env.BindClusterRole(ctx, "metrics-reader", ns, "prometheus", "/metrics"))

	// The endpoint starts with the manager, not necessarily before this test.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		status, body, err := testenv.ScrapeMetrics(ctx, cabpi.metricsAddress, token)
		if assert.NoError(c, err) {
			assert.Equal(c, http.StatusOK, status, body)
			assert.Contains(c, body, "\ncabpi_data_secrets_written_total{")
		}
	}, eventually, tick)
	assert.Empty(t, cabpi.denied(), "requests of the manager the API server refused")

	stranger, err := env.ServiceAccountToken(ctx, ns, "stranger")
	require.NoError(t, err)
	status, body, err := testenv.ScrapeMetrics(ctx, cabpi.metricsAddress, stranger)
	require.NoError(t, err)
	assert.Equal(t, http.StatusForbidden, status, body)
}
