package controllers_test

import (
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	ignconfig "github.com/coreos/ignition/v2/config"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	eventually = 30 * time.Second
	tick       = 100 * time.Millisecond
)

// clusterFixture is a Cluster in its own namespace, wired the way a real management cluster is:
// infrastructure provisioned, kubeconfig Secret pointing at the (envtest) workload cluster, CA.
type clusterFixture struct {
	ns      string
	cluster *clusterv1.Cluster
}

type clusterSetup struct {
	noInfra, noControlPlaneInit, noCA, noEndpoint bool
	paused                                        bool
}

func newCluster(t *testing.T, s clusterSetup) *clusterFixture {
	t.Helper()
	ctx := t.Context()
	ns := env.CreateNamespace(t, "cabpi").Name
	cluster, err := env.CreateCluster(ctx, ns, "c1", func(c *clusterv1.Cluster) {
		if s.noEndpoint {
			c.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{}
		}
		c.Spec.Paused = &s.paused
	})
	require.NoError(t, err)
	_, err = env.CreateWorkloadKubeconfigSecret(ctx, cluster)
	require.NoError(t, err)
	if !s.noCA {
		_, err := env.CreateClusterCA(ctx, cluster)
		require.NoError(t, err)
	}
	if !s.noInfra {
		require.NoError(t, env.MarkInfrastructureProvisioned(ctx, cluster))
	}
	if !s.noControlPlaneInit {
		require.NoError(t, env.MarkControlPlaneInitialized(ctx, cluster))
	}
	return &clusterFixture{ns: ns, cluster: cluster}
}

// addConfig creates an IgnitionConfig of the cluster; its owner (Machine or MachinePool) comes next.
func (f *clusterFixture) addConfig(t *testing.T, name string, spec cabpiv1.IgnitionConfigSpec) {
	t.Helper()
	cfg := &cabpiv1.IgnitionConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: name, Labels: map[string]string{clusterv1.ClusterNameLabel: f.cluster.Name}},
		Spec:       spec,
	}
	require.NoError(t, env.Client.Create(t.Context(), cfg))
}

// addMachine creates an IgnitionConfig with spec, its infrastructure machine and a Machine
// referencing both; CAPI's Machine controller then owns the config.
func (f *clusterFixture) addMachine(t *testing.T, name string, controlPlane bool, spec cabpiv1.IgnitionConfigSpec, mutate ...func(*clusterv1.Machine)) *clusterv1.Machine {
	t.Helper()
	ctx := t.Context()
	f.addConfig(t, name, spec)
	require.NoError(t, env.Client.Create(ctx, testenv.NewGenericInfraMachine(f.ns, name)))
	m := testenv.NewMachine(f.cluster, name, controlPlane)
	for _, fn := range mutate {
		fn(m)
	}
	require.NoError(t, env.Client.Create(ctx, m))
	return m
}

func getConfig(t *testing.T, ns, name string) *cabpiv1.IgnitionConfig {
	t.Helper()
	cfg := &cabpiv1.IgnitionConfig{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, cfg))
	return cfg
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

// never fails the test if cond becomes true within d, polling every interval. It polls in the
// test's goroutine, unlike assert.Never, whose last condition call may run after the test (and
// its context) ended.
func never(t *testing.T, d, interval time.Duration, cond func() bool, msg string) {
	t.Helper()
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(interval) {
		if cond() {
			require.Fail(t, msg)
		}
	}
}

func dataSecret(t *testing.T, ns, name string) (*corev1.Secret, bool) {
	t.Helper()
	s := &corev1.Secret{}
	err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, s)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return s, true
}

// tokensOf returns the join tokens of the config namespace/name, by ID.
func tokensOf(t *testing.T, namespace, name string) map[string]corev1.Secret {
	t.Helper()
	all, err := testenv.JoinTokens(t.Context(), env.Client)
	require.NoError(t, err)
	out := map[string]corev1.Secret{}
	for _, s := range all[namespace+"/"+name] {
		out[string(s.Data[bootstrapapi.BootstrapTokenIDKey])] = s
	}
	return out
}

// tokenIDs are the IDs of tokens, sorted: what an assertion prints instead of the token Secrets.
func tokenIDs(tokens map[string]corev1.Secret) []string {
	return slices.Sorted(maps.Keys(tokens))
}

func tokenSecret(t *testing.T, id string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}, s))
	return s
}

func tokenExpiration(t *testing.T, id string) time.Time {
	t.Helper()
	exp, err := time.Parse(time.RFC3339, string(tokenSecret(t, id).Data[bootstrapapi.BootstrapTokenExpirationKey]))
	require.NoError(t, err)
	return exp
}

// fileIn returns the decoded content of path in rendered Ignition data (which parses), gzipped
// or wrapped as it may be.
func fileIn(t *testing.T, data []byte, path string) string {
	t.Helper()
	_, rpt, err := ignconfig.Parse(data)
	require.NoError(t, err, rpt.String())
	files, err := ignition.ReadFiles(data)
	require.NoError(t, err)
	content, ok := files[path]
	if !ok {
		t.Fatalf("%s is not in the config", path)
	}
	return string(content)
}

// joinNode plays the machine's node joining: the Node exists and CAPI has set the Machine's
// nodeRef.
func joinNode(t *testing.T, machine *clusterv1.Machine) {
	t.Helper()
	_, err := env.MarkMachineNodeJoined(t.Context(), machine)
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		m := &clusterv1.Machine{}
		assert.NoError(c, env.Client.Get(t.Context(), client.ObjectKeyFromObject(machine), m))
		assert.True(c, m.Status.NodeRef.IsDefined())
	}, eventually, tick)
}

// eventsFor are the events regarding the config ns/name with reason.
func eventsFor(c assert.TestingT, ns, name, reason string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	if !assert.NoError(c, env.Client.List(context.Background(), list, client.InNamespace(ns))) {
		return nil
	}
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}
