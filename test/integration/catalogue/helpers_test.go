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

package catalogue_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	eventually = 30 * time.Second
	tick       = 100 * time.Millisecond
)

// waitForRefusal waits until the config's DataSecretAvailable condition is False with reason and
// returns the config as it was then (Ready is computed in the same status write). A True
// condition ends the wait at once with a failure: the bad input was rendered into data. It
// returns nil when the refusal was not seen.
func waitForRefusal(t *testing.T, ns, name, reason string) *cabpiv1.IgnitionConfig {
	t.Helper()
	var last *metav1.Condition
	for deadline := time.Now().Add(eventually); time.Now().Before(deadline); time.Sleep(tick) {
		cfg := &cabpiv1.IgnitionConfig{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cfg); err != nil {
			continue
		}
		last = conditions.Get(cfg, cabpiv1.DataSecretAvailableCondition)
		switch {
		case last == nil:
		case last.Status == metav1.ConditionTrue:
			t.Errorf("the bad input was rendered: %s is True (%s), want False with reason %s", last.Type, last.Reason, reason)
			return nil
		case last.Status == metav1.ConditionFalse && last.Reason == reason:
			return cfg
		}
	}
	if last == nil {
		t.Errorf("no %s condition within %s, want False with reason %s", cabpiv1.DataSecretAvailableCondition, eventually, reason)
	} else {
		t.Errorf("%s is %s with reason %s (%s) after %s, want False with reason %s", last.Type, last.Status, last.Reason, last.Message, eventually, reason)
	}
	return nil
}

// panics sums controller-runtime's panic counters: reconcilers of every controller in the
// manager (cabpi's and CAPI's) and admission webhooks. A recovered panic leaves the manager
// running but counts here.
func panics(t require.TestingT) float64 {
	families, err := crmetrics.Registry.Gather()
	require.NoError(t, err)
	counters := map[string]bool{"controller_runtime_reconcile_panics_total": false, "controller_runtime_webhook_panics_total": false}
	total := 0.0
	for _, mf := range families {
		if _, ok := counters[mf.GetName()]; ok {
			counters[mf.GetName()] = true
			total += sumCounters(mf.GetMetric())
		}
	}
	for name, found := range counters {
		require.True(t, found, "controller-runtime metric %s not registered: the panic check would see nothing", name)
	}
	return total
}

func sumCounters(ms []*dto.Metric) float64 {
	total := 0.0
	for _, m := range ms {
		total += m.GetCounter().GetValue()
	}
	return total
}

// cause is an admission error cause a case expects: the field path and part of the message.
type cause = testenv.Cause

var notDNS = regexp.MustCompile(`[^a-z0-9]+`)

// objectName is a DNS-1123 name for case i: its index and as much of its name as fits, so a
// failing object is easy to find.
func objectName(i int, caseName string) string {
	slug := strings.Trim(notDNS.ReplaceAllString(strings.ToLower(caseName), "-"), "-")
	if len(slug) > 48 {
		slug = strings.TrimRight(slug[:48], "-")
	}
	return fmt.Sprintf("c%03d-%s", i, slug)
}
