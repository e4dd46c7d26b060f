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
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// grant is an allowlist entry: a permission and why the manager needs it.
type grant struct {
	permission
	Why string
}

// managerRoleAllowlist is every permission of the generated ClusterRole (config/rbac/role.yaml,
// from the +kubebuilder:rbac markers in controllers/), and why. The role must grant exactly these.
//
// Read paths: the manager caches IgnitionConfigs, Machines, MachinePools and Clusters (informers:
// list/watch, cluster-wide) and reads Secrets and ConfigMaps live, by name (internal/setup
// disables the cache for both; the ClusterCache reads kubeconfig Secrets through the APIReader),
// so Secrets and ConfigMaps need get only, never list or watch. Join tokens are written to the
// workload cluster with the credentials of its kubeconfig Secret, not with this role.
var managerRoleAllowlist = []grant{
	{permission{"bootstrap.cluster.x-k8s.io", "ignitionconfigs", "get"}, "the reconciled kind, read from the cache"},
	{permission{"bootstrap.cluster.x-k8s.io", "ignitionconfigs", "list"}, "informer of the reconciled kind (For)"},
	{permission{"bootstrap.cluster.x-k8s.io", "ignitionconfigs", "watch"}, "informer of the reconciled kind (For)"},
	{permission{"bootstrap.cluster.x-k8s.io", "ignitionconfigs/status", "patch"}, "the patch helper writes status and conditions (it never touches spec or metadata)"},
	{permission{"bootstrap.cluster.x-k8s.io", "ignitionconfigs/finalizers", "update"}, "OwnerReferencesPermissionEnforcement: the data Secret's controller reference to its IgnitionConfig blocks owner deletion"},

	{permission{"cluster.x-k8s.io", "clusters", "get"}, "the config's Cluster, read from the cache (controller and ClusterCache)"},
	{permission{"cluster.x-k8s.io", "clusters", "list"}, "informer: the controller watches Clusters, the ClusterCache reconciles them"},
	{permission{"cluster.x-k8s.io", "clusters", "watch"}, "informer: the controller watches Clusters, the ClusterCache reconciles them"},
	{permission{"cluster.x-k8s.io", "clusters/finalizers", "update"}, "OwnerReferencesPermissionEnforcement: generated cluster certificates (util/secret LookupOrGenerate) have a controller reference to the Cluster that blocks owner deletion"},
	{permission{"cluster.x-k8s.io", "machines", "get"}, "the config's owner Machine (cache; the webhook reads it live)"},
	{permission{"cluster.x-k8s.io", "machines", "list"}, "informer: Machines are watched and listed by cluster-name label"},
	{permission{"cluster.x-k8s.io", "machines", "watch"}, "informer: Machines are watched and listed by cluster-name label"},
	{permission{"cluster.x-k8s.io", "machinepools", "get"}, "the config's owner MachinePool (MachinePool feature gate, on by default)"},
	{permission{"cluster.x-k8s.io", "machinepools", "list"}, "informer: MachinePools are watched and listed by cluster-name label"},
	{permission{"cluster.x-k8s.io", "machinepools", "watch"}, "informer: MachinePools are watched and listed by cluster-name label"},

	{permission{"cluster.x-k8s.io", "machinedrainrules", "list"}, "the update extension drains a node before a minor upgrade with Cluster API's drain, which honours the Machine's MachineDrainRules (ADR 039)"},
	{permission{"cluster.x-k8s.io", "machinedrainrules", "watch"}, "informer: the same MachineDrainRules, read from the cache as Cluster API's Machine controller reads them"},

	{permission{"infrastructure.cluster.x-k8s.io", "awsmachines", "get"}, "CAPA's spec.ignition says whether the data goes to S3 or the user data (limit, stub version), read before a render (ADR 028)"},
	{permission{"infrastructure.cluster.x-k8s.io", "awsmachinepools", "get"}, "the same for an AWS MachinePool (ADR 028)"},

	{permission{"", "secrets", "get"}, "by name: data Secret, cluster certificates, Secrets a config references, <cluster>-kubeconfig (ClusterCache)"},
	{permission{"", "secrets", "list"}, "informer: Secrets with the cluster-name label are cached (data Secrets, metadata only; cluster certificates), so delivered configs cost no API read (issue 12)"},
	{permission{"", "secrets", "watch"}, "informer: the same label-selected Secret cache, also watched for changes to Secrets a config references (ADR 015)"},
	{permission{"", "secrets", "create"}, "the data Secret, and the cluster certificates when no control-plane provider creates them"},
	{permission{"", "secrets", "update"}, "rewrites the data Secret in place (MachinePool token rotation, a create that lost a race)"},
	{permission{"", "secrets", "patch"}, "adopts a data Secret restored without controller (owner reference and cluster-name label)"},
	{permission{"", "secrets", "delete"}, "OwnerReferencesPermissionEnforcement: changing a Secret's ownerReferences (adoption) needs delete on it"},
	{permission{"", "configmaps", "get"}, "by name: the kubeadm init lock, ConfigMaps a config references"},
	{permission{"", "configmaps", "list"}, "informer: ConfigMaps with the cluster-name label (metadata only), watched so a change to one a config references renders its data again before provisioning (ADR 015)"},
	{permission{"", "configmaps", "watch"}, "informer: the same label-selected ConfigMap cache"},
	{permission{"", "configmaps", "create"}, "takes the kubeadm init lock (bootstrap/kubeadm/pkg/locking)"},
	{permission{"", "configmaps", "delete"}, "releases the kubeadm init lock"},

	{permission{"authentication.k8s.io", "tokenreviews", "create"}, "the diagnostics endpoint authenticates each scrape's bearer token (controller-runtime filters.WithAuthenticationAndAuthorization)"},
	{permission{"authorization.k8s.io", "subjectaccessreviews", "create"}, "the diagnostics endpoint asks whether the scraper may get /metrics (the same filter)"},

	{permission{"events.k8s.io", "events", "create"}, "warning events (client-go tools/events recorder, events.k8s.io/v1)"},
	{permission{"events.k8s.io", "events", "patch"}, "the same recorder patches an event series when a warning repeats"},
}

// leaderElectionRoleAllowlist is every permission of config/rbac/leader_election_role.yaml (a
// Role in the manager's namespace), and why.
var leaderElectionRoleAllowlist = []grant{
	{permission{"coordination.k8s.io", "leases", "get"}, "client-go LeaseLock reads the lease"},
	{permission{"coordination.k8s.io", "leases", "create"}, "client-go LeaseLock creates the lease the first time"},
	{permission{"coordination.k8s.io", "leases", "update"}, "client-go LeaseLock acquires and renews the lease"},
	{permission{"", "events", "create"}, "leader election events (controller-runtime gives it the core/v1 recorder)"},
	{permission{"", "events", "patch"}, "the core/v1 recorder patches a repeated event"},
}

// podReaderRoleAllowlist is every permission of the Role in config/rbac/pod_reader_role.yaml.
var podReaderRoleAllowlist = []grant{
	{permission{"", "pods", "get"}, "the manager reads its own Pod once, for the image of the in-place update Jobs (internal/setup updateImage)"},
}

func TestPodReaderRoleMatchesAllowlist(t *testing.T) {
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	objs, err := readObjects(filepath.Join(root, "config", "rbac", "pod_reader_role.yaml"))
	require.NoError(t, err)
	var role *rbacv1.Role
	for _, o := range objs {
		if r, ok := o.(*rbacv1.Role); ok {
			role = r
		}
	}
	require.NotNil(t, role, "config/rbac/pod_reader_role.yaml has the Role")
	checkAllowlist(t, "config/rbac/pod_reader_role.yaml", role.Rules, podReaderRoleAllowlist)
}

func TestManagerRoleMatchesAllowlist(t *testing.T) {
	role, err := readObject[*rbacv1.ClusterRole]("role.yaml")
	require.NoError(t, err)
	require.Equal(t, "manager-role", role.Name)
	checkAllowlist(t, "config/rbac/role.yaml (from the +kubebuilder:rbac markers)", role.Rules, managerRoleAllowlist)
}

func TestLeaderElectionRoleMatchesAllowlist(t *testing.T) {
	role, err := readObject[*rbacv1.Role]("leader_election_role.yaml")
	require.NoError(t, err)
	checkAllowlist(t, "config/rbac/leader_election_role.yaml", role.Rules, leaderElectionRoleAllowlist)
}

// The metrics-reader ClusterRole, bound by users to their scraper, lets it get /metrics and
// nothing else: not the pprof and log-level handlers the diagnostics endpoint also serves.
func TestMetricsReaderRoleGetsMetricsOnly(t *testing.T) {
	role, err := readObject[*rbacv1.ClusterRole]("metrics_reader_role.yaml")
	require.NoError(t, err)
	assert.Equal(t, "metrics-reader", role.Name)
	assert.Equal(t, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, role.Rules)
}

// The aggregated ClusterRole grants Cluster API's controllers our kinds (the contract gives its
// verbs): not ours to trim, but no wildcard either.
func TestAggregatedRoleHasNoWildcard(t *testing.T) {
	role, err := readObject[*rbacv1.ClusterRole]("aggregated_role.yaml")
	require.NoError(t, err)
	_, problems := expand(role.Rules)
	assert.Empty(t, problems)
}

// checkAllowlist fails on every wildcard, on every permission of rules not in allowlist (unused)
// and on every allowlist entry rules do not grant (missing).
func checkAllowlist(t *testing.T, what string, rules []rbacv1.PolicyRule, allowlist []grant) {
	t.Helper()
	want := map[permission]string{}
	for _, g := range allowlist {
		require.NotEmpty(t, g.Why, "allowlist entry %s has no reason", g.permission)
		_, dup := want[g.permission]
		require.False(t, dup, "allowlist entry %s is listed twice", g.permission)
		want[g.permission] = g.Why
	}
	perms, problems := expand(rules)
	for _, p := range problems {
		t.Errorf("%s: %s", what, p)
	}
	got := map[permission]bool{}
	for _, p := range perms {
		if got[p] {
			t.Errorf("%s: %s is granted more than once", what, p)
		}
		got[p] = true
		if _, ok := want[p]; !ok {
			t.Errorf("%s: unused permission %s: no code needs it (or add it to the allowlist with the reason)", what, p)
		}
	}
	for _, g := range allowlist {
		if !got[g.permission] {
			t.Errorf("%s: permission the code needs is missing: %s (%s)", what, g.permission, g.Why)
		}
	}
	if !t.Failed() {
		t.Logf("%s grants exactly the %d allowlisted permissions", what, len(allowlist))
	}
}
