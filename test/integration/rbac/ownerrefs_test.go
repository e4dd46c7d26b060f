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
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// With OwnerReferencesPermissionEnforcement on, the manager's writes of owner references need
// permissions no plain RBAC check asks for. For each, the write the controller does succeeds as
// the manager's ServiceAccount (generated role) and is refused by the plugin as a ServiceAccount
// bound to the generated role minus that one permission, while the same write without what the
// plugin checks (the control) goes through: the plugin is on, and the permission is what it needs.
func TestOwnerReferencesPermissionEnforcement(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "ownerrefs").Name
	cluster, err := env.CreateCluster(ctx, ns, "c1")
	require.NoError(t, err)
	config := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cfg"}}
	require.NoError(t, env.Client.Create(ctx, config))

	clusterRef := func(block bool) metav1.OwnerReference {
		ref := *metav1.NewControllerRef(cluster, clusterv1.GroupVersion.WithKind("Cluster")) // as util/secret's caller passes it
		ref.BlockOwnerDeletion = ptr.To(block)
		return ref
	}
	configRef := func(block bool) metav1.OwnerReference {
		ref := *metav1.NewControllerRef(config, cabpiv1.GroupVersion.WithKind("IgnitionConfig")) // as the data Secret's
		ref.BlockOwnerDeletion = ptr.To(block)
		return ref
	}
	createOwned := func(ref metav1.OwnerReference) func(context.Context, client.Client, string) error {
		return func(ctx context.Context, c client.Client, name string) error {
			return c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{ref},
			}})
		}
	}
	// createThenPatch creates a Secret without owner, then patches it as mutate says (what
	// adopting a restored data Secret does).
	createThenPatch := func(mutate func(*corev1.Secret)) func(context.Context, client.Client, string) error {
		return func(ctx context.Context, c client.Client, name string) error {
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
			if err := c.Create(ctx, s); err != nil {
				return err
			}
			before := s.DeepCopy()
			mutate(s)
			return c.Patch(ctx, s, client.MergeFrom(before))
		}
	}

	cases := []struct {
		name    string
		without permission
		// write is what the controller does; control the same without what the plugin checks.
		write, control func(ctx context.Context, c client.Client, name string) error
		refusal        string
	}{{
		name:    "certificate Secrets owned by the Cluster",
		without: permission{"cluster.x-k8s.io", "clusters/finalizers", "update"},
		write:   createOwned(clusterRef(true)),
		control: createOwned(clusterRef(false)),
		refusal: "cannot set blockOwnerDeletion",
	}, {
		name:    "data Secret owned by its IgnitionConfig",
		without: permission{"bootstrap.cluster.x-k8s.io", "ignitionconfigs/finalizers", "update"},
		write:   createOwned(configRef(true)),
		control: createOwned(configRef(false)),
		refusal: "cannot set blockOwnerDeletion",
	}, {
		name:    "data Secret adopted",
		without: permission{"", "secrets", "delete"},
		write:   createThenPatch(func(s *corev1.Secret) { s.OwnerReferences = []metav1.OwnerReference{configRef(true)} }),
		control: createThenPatch(func(s *corev1.Secret) { s.Labels = map[string]string{clusterv1.ClusterNameLabel: cluster.Name} }),
		refusal: "cannot set an ownerRef on a resource you can't delete",
	}}
	asManager := impersonatedClient(t, cabpiUser(t))
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			prefix := string(rune('a'+i)) + "-"
			require.NoError(t, tc.write(ctx, asManager, prefix+"manager"), "as the manager, with the generated role")

			c := bindRoleWithout(t, ns, tc.without)
			require.NoError(t, tc.control(ctx, c, prefix+"control"), "control: allowed without %s", tc.without)
			err := tc.write(ctx, c, prefix+"refused")
			require.Error(t, err, "without %s", tc.without)
			assert.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
			assert.Contains(t, err.Error(), tc.refusal)
		})
	}
}

// cabpiUser is the user name of the ServiceAccount in config/rbac/service_account.yaml.
func cabpiUser(t *testing.T) string {
	t.Helper()
	sa, err := readObject[*corev1.ServiceAccount]("service_account.yaml")
	require.NoError(t, err)
	return serviceAccountUser(managerNamespace, sa.Name)
}

func impersonatedClient(t *testing.T, user string) client.Client {
	t.Helper()
	c, err := client.New(env.ImpersonatedConfig(user), client.Options{Scheme: env.Scheme})
	require.NoError(t, err)
	return c
}

// bindRoleWithout binds a copy of the generated ClusterRole minus p to a new ServiceAccount in ns
// and returns a client acting as it, once the API server authorizes all the rest.
func bindRoleWithout(t *testing.T, ns string, p permission) client.Client {
	t.Helper()
	ctx := t.Context()
	role, err := readObject[*rbacv1.ClusterRole]("role.yaml")
	require.NoError(t, err)
	perms, _ := expand(role.Rules)
	require.Contains(t, perms, p, "the generated role does not grant %s: nothing to take away", p)

	name := "without-" + strings.NewReplacer("/", "-", ".", "-").Replace(p.Verb+"-"+p.Group+"-"+p.Resource)
	require.NoError(t, env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
	// Cluster-scoped names must be unique across runs (-count) sharing the API server.
	crName := ns + "-" + name
	require.NoError(t, env.Client.Create(ctx, &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: crName},
		Rules:      rulesWithout(role.Rules, p),
	}))
	require.NoError(t, env.Client.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: crName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: crName},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}))
	user := serviceAccountUser(ns, name)
	var others []permission
	for _, q := range perms {
		if q != p {
			others = append(others, q)
		}
	}
	require.NoError(t, waitAllowed(ctx, user, ns, others))
	return impersonatedClient(t, user)
}
