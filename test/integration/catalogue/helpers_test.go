package catalogue_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	eventually = 30 * time.Second
	tick       = 100 * time.Millisecond
)

// clusterFixture is a Cluster in its own namespace, wired the way a real management cluster is:
// infrastructure provisioned, control plane initialized, kubeconfig Secret pointing at the
// (envtest) workload cluster, and the cluster certificates.
type clusterFixture struct {
	ns      string
	cluster *clusterv1.Cluster
}

// clusterSetup says how a clusterFixture differs from a healthy cluster.
type clusterSetup struct {
	// ca is the data of the <cluster>-ca Secret instead of generated certificates; an empty
	// non-nil map creates no CA Secret at all.
	ca map[string][]byte
	// noEndpoint leaves spec.controlPlaneEndpoint unset.
	noEndpoint bool
}

// newCluster creates a Cluster "c1" in a new namespace. A healthy cluster gets every certificate
// of an initial control plane (CA, etcd, front-proxy, service account), so control-plane joins
// render too.
func newCluster(t *testing.T, s clusterSetup) *clusterFixture {
	t.Helper()
	ctx := t.Context()
	ns := env.CreateNamespace(t, "catalogue").Name
	cluster, err := env.CreateCluster(ctx, ns, "c1", func(c *clusterv1.Cluster) {
		if s.noEndpoint {
			c.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{}
		}
	})
	require.NoError(t, err)
	_, err = env.CreateWorkloadKubeconfigSecret(ctx, cluster)
	require.NoError(t, err)
	switch {
	case s.ca == nil:
		_, err := env.CreateClusterCertificates(ctx, cluster)
		require.NoError(t, err)
	case len(s.ca) > 0:
		require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: cluster.Name + "-ca",
				Labels: map[string]string{clusterv1.ClusterNameLabel: cluster.Name}},
			Data: s.ca,
		}))
	}
	require.NoError(t, env.MarkInfrastructureProvisioned(ctx, cluster))
	require.NoError(t, env.MarkControlPlaneInitialized(ctx, cluster))
	return &clusterFixture{ns: ns, cluster: cluster}
}

// newConfig is an IgnitionConfig of cluster named name with spec (not created).
func newConfig(f *clusterFixture, name string, spec cabpiv1.IgnitionConfigSpec) *cabpiv1.IgnitionConfig {
	return &cabpiv1.IgnitionConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
		Spec:       spec,
	}
}

// addMachine creates the infrastructure machine and the Machine that reference the config of
// the same name; CAPI's Machine controller then makes the Machine the config's controller, and
// cabpi reconciles it.
func (f *clusterFixture) addMachine(t *testing.T, name string, mutate func(*clusterv1.Machine)) *clusterv1.Machine {
	t.Helper()
	ctx := t.Context()
	require.NoError(t, env.Client.Create(ctx, testenv.NewGenericInfraMachine(f.ns, name)))
	m := testenv.NewMachine(f.cluster, name, false)
	if mutate != nil {
		mutate(m)
	}
	require.NoError(t, env.Client.Create(ctx, m))
	return m
}

// waitForCondition waits until the config's condition has status and reason, and returns it.
func waitForCondition(t *testing.T, ns, name, condType string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		cfg := &cabpiv1.IgnitionConfig{}
		if !assert.NoError(c, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, cfg)) {
			return
		}
		got = conditions.Get(cfg, condType)
		if assert.NotNil(c, got, "condition %s not set yet", condType) {
			assert.Equal(c, string(status)+"/"+reason, string(got.Status)+"/"+got.Reason, got.Message)
		}
	}, eventually, tick)
	return got
}

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

// dataSecret returns the Secret named like the config, if any.
func dataSecret(t require.TestingT, ns, name string) (*corev1.Secret, bool) {
	s := &corev1.Secret{}
	err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return s, true
}

// joinTokens lists the IDs of cabpi's join tokens, by config ("namespace/name").
func joinTokens(t require.TestingT) map[string][]string {
	all, err := testenv.JoinTokens(context.Background(), env.Client)
	require.NoError(t, err)
	out := map[string][]string{}
	for config, list := range all {
		for _, s := range list {
			out[config] = append(out[config], string(s.Data[bootstrapapi.BootstrapTokenIDKey]))
		}
	}
	return out
}

// tokensOf lists the IDs of the join tokens of one config.
func tokensOf(t require.TestingT, ns, name string) []string {
	return joinTokens(t)[ns+"/"+name]
}

// never fails t if cond becomes true within d, polling every interval in t's goroutine.
func never(t *testing.T, d, interval time.Duration, cond func() bool, msg string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(interval) {
		if cond() {
			require.Fail(t, msg)
		}
	}
}

// panics sums controller-runtime's panic counters: reconcilers of every controller in the
// manager (cabpi's and CAPI's) and admission webhooks. A recovered panic leaves the manager
// running but counts here.
func panics(t require.TestingT) float64 {
	families, err := metrics.Registry.Gather()
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

// cause is one expected entry of an admission error's causes: the exact field and a substring
// of the message.
// cause is an admission error cause a case expects: the field path and part of the message.
type cause struct{ field, msg string }

// asTestenvCauses converts causes for testenv.RequireRejected.
func asTestenvCauses(causes []cause) []testenv.Cause {
	out := make([]testenv.Cause, 0, len(causes))
	for _, c := range causes {
		out = append(out, testenv.Cause{Field: c.field, Msg: c.msg})
	}
	return out
}

// requireRejected asserts err is the API's error of reason (Invalid, Forbidden) with at least
// the causes in want.
func requireRejected(t *testing.T, err error, reason metav1.StatusReason, want ...cause) {
	t.Helper()
	testenv.RequireRejected(t, err, reason, asTestenvCauses(want)...)
}

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
