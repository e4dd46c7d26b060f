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

// Package initlock_test proves that the kubeadm init lock survives a manager that dies in the
// middle of init: a second manager finishes the job and no second `kubeadm init` is ever
// rendered for the cluster.
package initlock_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

var (
	env *testenv.Environment
	fx  = &fixtures.Kit{NamespacePrefix: "initlock"} // waits here are the test's own
)

// TestMain runs the API server with Cluster API's Cluster and Machine controllers only: the
// test starts and kills cabpi managers itself.
func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, testenv.Suite{
		Options: testenv.Options{ClusterController: true, MachineController: true},
		Keep:    []**testenv.Environment{&env, &fx.Env},
	}))
}

// errKilled is what every call of a killed manager's client returns: a SIGKILLed process writes
// nothing more, not even the release of its lock.
var errKilled = errors.New("manager killed")

// cabpiManager is one run of the cabpi manager process against the envtest API server.
type cabpiManager struct {
	cancel context.CancelFunc
	done   chan error
}

// startManager starts a cabpi manager. killOnCreate, when set, decides which Create kills it:
// that Create and every later call fail, and the manager is stopped.
func startManager(t *testing.T, killOnCreate func(client.Object) bool) *cabpiManager {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var killed atomic.Bool
	kill := func() error { killed.Store(true); cancel(); return errKilled }
	dead := func() error {
		if killed.Load() {
			return errKilled
		}
		return nil
	}
	newClient := func(cfg *rest.Config, opts client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, opts)
		if err != nil || killOnCreate == nil {
			return c, err
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if err := dead(); err != nil {
					return err
				}
				if killOnCreate(obj) {
					return kill()
				}
				return c.Create(ctx, obj, opts...)
			},
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.Get(ctx, key, obj, opts...)
			},
			List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.List(ctx, list, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.Update(ctx, obj, opts...)
			},
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.Patch(ctx, obj, p, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.Delete(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.SubResource(sub).Patch(ctx, obj, p, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				if err := dead(); err != nil {
					return err
				}
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}), nil
	}
	opts := testenv.CabpiOptions()
	opts.Concurrency, opts.BootstrapTokenTTL = 3, 15*time.Minute
	mgr, err := testenv.NewCabpiManager(ctx, env.Config, opts, func(o *ctrl.Options) { o.NewClient = newClient })
	require.NoError(t, err)
	m := &cabpiManager{cancel: cancel, done: make(chan error, 1)}
	go func() { m.done <- mgr.Start(ctx) }()
	t.Cleanup(m.stop)
	return m
}

func (m *cabpiManager) stop() {
	m.cancel()
	<-m.done
	m.done <- nil // later stops return at once
}

// waitStopped waits until the manager has exited on its own (it was killed).
func (m *cabpiManager) waitStopped(t *testing.T) {
	t.Helper()
	select {
	case <-m.done:
		m.done <- nil
	case <-time.After(time.Minute):
		require.Fail(t, "the killed manager did not stop")
	}
}

func TestInitLockSurvivesManagerRestart(t *testing.T) {
	ctx := t.Context()
	f := fx.NewCluster(t, fixtures.BeforeInit())
	ns, cluster := f.Namespace, f.Cluster

	controlPlanes := []string{"cp-0", "cp-1", "cp-2"}
	machines := map[string]*clusterv1.Machine{}
	for _, name := range controlPlanes {
		machines[name] = f.AddMachine(t, name, true, cabpiv1.IgnitionConfigSpec{})
	}

	// Manager A takes the init lock and dies as it writes the init data.
	isDataSecret := func(obj client.Object) bool {
		s, ok := obj.(*corev1.Secret)
		return ok && s.Namespace == ns && s.Type == clusterv1.ClusterSecretType && strings.HasPrefix(s.Name, "cp-")
	}
	a := startManager(t, isDataSecret)
	a.waitStopped(t)

	lock := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster.Name + "-lock"}, lock),
		"the lock outlives the manager that took it")
	var holder struct{ MachineName string }
	require.NoError(t, json.Unmarshal([]byte(lock.Data["lock-information"]), &holder))
	require.Contains(t, controlPlanes, holder.MachineName)
	require.Empty(t, dataSecrets(t, ns), "the killed manager wrote no data")

	// Manager B: the lock holder renders init, the others keep waiting.
	startManager(t, nil)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		secrets := dataSecrets(t, ns)
		assert.Len(c, secrets, 1)
		assert.Contains(c, secrets, holder.MachineName)
	}, time.Minute, 200*time.Millisecond)
	for _, name := range controlPlanes {
		if name == holder.MachineName {
			continue
		}
		require.EventuallyWithT(t, func(c *assert.CollectT) {
			cfg := &cabpiv1.IgnitionConfig{}
			assert.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, cfg))
			cond := findCondition(cfg, cabpiv1.DataSecretAvailableCondition)
			if assert.NotNil(c, cond) {
				assert.Equal(c, cabpiv1.WaitingForInitLockReason, cond.Reason)
			}
		}, time.Minute, 200*time.Millisecond)
	}

	// The first node joins; the others render control-plane joins, never a second init.
	_, err := env.MarkMachineNodeJoined(ctx, machines[holder.MachineName])
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Len(c, dataSecrets(t, ns), len(controlPlanes))
	}, time.Minute, 200*time.Millisecond)
	for name, kubeadm := range dataSecrets(t, ns) {
		if name == holder.MachineName {
			assert.Contains(t, kubeadm, "kind: InitConfiguration", name)
			continue
		}
		assert.NotContains(t, kubeadm, "kind: InitConfiguration", name)
		assert.Contains(t, kubeadm, "kind: JoinConfiguration", name)
		assert.Contains(t, kubeadm, "controlPlane:", name)
	}
}

// dataSecrets returns the kubeadm configuration of every data Secret in ns, by name.
func dataSecrets(t *testing.T, ns string) map[string]string {
	t.Helper()
	list := &corev1.SecretList{}
	require.NoError(t, env.Client.List(t.Context(), list, client.InNamespace(ns)))
	out := map[string]string{}
	for _, s := range list.Items {
		if s.Type != clusterv1.ClusterSecretType || string(s.Data["format"]) != "ignition" {
			continue
		}
		files, err := ignition.ReadFiles(s.Data["value"])
		require.NoError(t, err, s.Name)
		if kubeadm, ok := files[ignition.KubeadmConfigPath]; ok {
			out[s.Name] = string(kubeadm)
		}
	}
	return out
}

func findCondition(cfg *cabpiv1.IgnitionConfig, condType string) *metav1.Condition {
	for i := range cfg.Status.Conditions {
		if cfg.Status.Conditions[i].Type == condType {
			return &cfg.Status.Conditions[i]
		}
	}
	return nil
}
