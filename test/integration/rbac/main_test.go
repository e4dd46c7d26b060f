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

// Package rbac_test holds cabpi's RBAC to what its code uses.
//
// The generated roles must equal an allowlist that gives a reason for every permission
// (allowlist_test.go). The real manager (setup.Run, wired as in production: leader election,
// its own ClusterCache, Secrets and ConfigMaps read uncached) runs as a ServiceAccount bound to
// exactly the roles of config/rbac, on an API server with the OwnerReferencesPermissionEnforcement
// admission plugin on, and takes a cluster from kubeadm init to a worker join without a single
// request refused (flow_test.go); a scrape of its metrics endpoint has it review the scraper's
// token and right with its own role (metrics_test.go). Direct API calls show that the permissions kept for that plugin
// are needed (ownerrefs_test.go).
//
// Only cabpi's manager is impersonated. Cluster API's own controllers and the test's client use
// the admin config, and so does every workload-cluster client: the manager reaches a workload
// cluster (here the same API server) with the credentials of its <cluster>-kubeconfig Secret,
// never with its own role, so creating join tokens in kube-system is no permission of the role.
package rbac_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	capiflags "sigs.k8s.io/cluster-api/util/flags"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/controllers"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/setup"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	// managerNamespace is where the manager runs (config/default puts it in cabpi-system): its
	// ServiceAccount, the leader election Role and the lease live there.
	managerNamespace = "cabpi-system"
	leaderElectionID = "cabpi-controller-leader-election"
)

var (
	env *testenv.Environment
	fx  = &fixtures.Kit{NamespacePrefix: "rbac", Eventually: eventually, Tick: tick}
	// cabpi is the manager running as the ServiceAccount of config/rbac.
	cabpi *cabpiManager
)

// TestMain runs the Environment with the admission plugin and Cluster API's Machine controller
// (as admin); once it runs, config/rbac is installed and the cabpi manager started as its
// ServiceAccount. After the tests: whatever test was running, the manager never lacked a
// permission.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{
			// Cluster API's Machine controller (admin) makes Machines own their configs; our
			// manager brings its own ClusterCache.
			MachineController: true,
			APIServerArgs: map[string][]string{
				// Added to the plugins the API server enables by default (envtest disables only
				// ServiceAccount), as on OpenShift and hardened clusters: setting
				// blockOwnerDeletion then needs update on the owner's finalizers, and changing an
				// object's ownerReferences needs delete on it.
				"enable-admission-plugins": {"OwnerReferencesPermissionEnforcement"},
			},
		},
		Keep: []**testenv.Environment{&env, &fx.Env},
		Started: func(e *testenv.Environment) (func() error, error) {
			user, err := installRBAC(e.Context())
			if err != nil {
				return nil, err
			}
			if cabpi, err = startCabpi(e.Context(), user); err != nil {
				return nil, err
			}
			return func() error {
				var errs []error
				if err := cabpi.stop(); err != nil {
					errs = append(errs, fmt.Errorf("cabpi manager: %w", err))
				}
				if denied := cabpi.denied(); len(denied) > 0 {
					errs = append(errs, fmt.Errorf("--- FAIL: the API server refused %d requests of the manager:\n  %s", len(denied), strings.Join(denied, "\n  ")))
				}
				return errors.Join(errs...)
			}, nil
		},
	}))
}

// installRBAC creates config/rbac's objects as kustomize would put them into managerNamespace
// and returns the user name of its ServiceAccount, once the API server authorizes every
// permission of its roles.
func installRBAC(ctx context.Context) (string, error) {
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: managerNamespace}}); err != nil {
		return "", err
	}
	objs, err := rbacManifests(managerNamespace)
	if err != nil {
		return "", err
	}
	var user string
	var clusterRules, namespaceRules []rbacv1.PolicyRule
	for _, obj := range objs {
		if err := env.Client.Create(ctx, obj); err != nil {
			return "", fmt.Errorf("creating %T %s: %w", obj, obj.GetName(), err)
		}
		switch o := obj.(type) {
		case *corev1.ServiceAccount:
			user = serviceAccountUser(o.Namespace, o.Name)
		case *rbacv1.ClusterRole:
			if o.Name == "manager-role" { // the aggregated role is Cluster API's, not bound to us
				clusterRules = o.Rules
			}
		case *rbacv1.Role:
			namespaceRules = append(namespaceRules, o.Rules...)
		}
	}
	if user == "" || clusterRules == nil || namespaceRules == nil {
		return "", errors.New("config/rbac lacks the ServiceAccount, the manager-role ClusterRole or the leader election Role")
	}
	perms, _ := expand(clusterRules)
	if err := waitAllowed(ctx, user, managerNamespace, perms); err != nil {
		return "", err
	}
	perms, _ = expand(namespaceRules)
	return user, waitAllowed(ctx, user, managerNamespace, perms)
}

func serviceAccountUser(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// waitAllowed waits until the API server authorizes user for every permission in namespace:
// RBAC objects take effect once the authorizer's informers have them, so a test must not act
// before (a refusal would then be RBAC's, not what the test means to show).
func waitAllowed(ctx context.Context, user, namespace string, perms []permission) error {
	var last permission
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, p := range perms {
			resource, subresource, _ := strings.Cut(p.Resource, "/")
			sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: user,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: namespace, Verb: p.Verb, Group: p.Group, Resource: resource, Subresource: subresource,
				},
			}}
			if err := env.Client.Create(ctx, sar); err != nil {
				return false, err
			}
			if !sar.Status.Allowed {
				last = p
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("%s is still not allowed to %s in %s: %w", user, last, namespace, err)
	}
	return nil
}

// cabpiManager is setup.Run, the production entry point, as the ServiceAccount.
type cabpiManager struct {
	cancel context.CancelFunc
	done   chan error
	// metricsAddress is where the manager serves its metrics (HTTPS, authenticated).
	metricsAddress string

	mu      sync.Mutex
	refused []string
}

// startCabpi runs the manager as user and returns once it leads (its controllers then start).
// Every request it makes is watched: a 403 from the API server (RBAC, or the admission plugin)
// is recorded.
func startCabpi(ctx context.Context, user string) (*cabpiManager, error) {
	m := &cabpiManager{done: make(chan error, 1)}
	var err error
	if m.metricsAddress, err = testenv.FreeLocalAddress(); err != nil {
		return nil, err
	}
	cfg := env.ImpersonatedConfig(user)
	// Copied into every client the manager builds from cfg (cache, client, events, leader election).
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &refusalRecorder{next: rt, m: m} })
	ctx, m.cancel = context.WithCancel(ctx)
	opts := setup.Options{
		LeaderElect:             true,
		LeaderElectionID:        leaderElectionID,
		LeaderElectionNamespace: managerNamespace,
		// Secure metrics, as deployed: scraping them makes the manager ask the API server
		// (TokenReview, SubjectAccessReview) as the ServiceAccount (metrics_test.go).
		Diagnostics:        capiflags.ManagerOptions{DiagnosticsAddress: m.metricsAddress},
		HealthProbeAddress: "0",
		WebhookPort:        0, // the webhooks read only Machines and MachinePools (get), as the controller does
		Concurrency:        5,
		ClusterConcurrency: 10,
		SyncPeriod:         10 * time.Minute,
		BootstrapTokenTTL:  controllers.DefaultTokenTTL,
	}
	go func() { m.done <- setup.Run(ctx, cfg, opts) }()

	lease := &coordinationv1.Lease{}
	key := client.ObjectKey{Namespace: managerNamespace, Name: leaderElectionID}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-m.done:
			m.done <- err
			return false, fmt.Errorf("manager exited: %w", err)
		default:
		}
		if err := env.Client.Get(ctx, key, lease); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return ptr.Deref(lease.Spec.HolderIdentity, "") != "", nil
	})
	if err != nil {
		m.cancel()
		return nil, fmt.Errorf("cabpi manager did not take the leader election lease: %w (refused: %v)", err, m.denied())
	}
	return m, nil
}

// stop stops the manager and returns its error, if any.
func (m *cabpiManager) stop() error {
	m.cancel()
	select {
	case err := <-m.done:
		return err
	case <-time.After(time.Minute):
		return errors.New("did not stop within 1m")
	}
}

// denied lists the manager's requests the API server refused (403), as "METHOD URI: why".
func (m *cabpiManager) denied() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.refused...)
}

// refusalRecorder records the requests answered 403 Forbidden.
type refusalRecorder struct {
	next http.RoundTripper
	m    *cabpiManager
}

func (r *refusalRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := r.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		return resp, err
	}
	// The body says why (RBAC, or which admission plugin); it is handed on unread.
	body, _ := io.ReadAll(resp.Body) // a short read only shortens the reason
	_ = resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	why := string(body)
	status := &metav1.Status{}
	if json.Unmarshal(body, status) == nil && status.Message != "" {
		why = status.Message
	}
	r.m.mu.Lock()
	r.m.refused = append(r.m.refused, req.Method+" "+req.URL.RequestURI()+": "+why)
	r.m.mu.Unlock()
	return resp, nil
}
