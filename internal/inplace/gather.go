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

package inplace

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimecatalog "sigs.k8s.io/cluster-api/api/runtime/catalog"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	runtimev1 "sigs.k8s.io/cluster-api/api/runtime/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// The trust model of UpdateMachine (docs/adr/038-update-extension-trust.md): a request is a
// trigger, never an instruction. It names a Machine and nothing else is taken from it. What the
// update acts on is read from the management cluster's API server at the moment of the call, and
// only an update that Cluster API itself is running is acted on: the Machine carries Cluster
// API's update-in-progress annotation and its pending UpdateMachine hook, and so does the
// IgnitionConfig it references.

// refusal is an UpdateMachine request that the extension does not act on: answered Failure,
// nothing written anywhere. Every other error is passing (a read that failed, a cluster not
// connected yet, a conflict) and is answered with a retry.
type refusal struct{ reason string }

func (r *refusal) Error() string { return r.reason }

func refuse(format string, args ...any) error { return &refusal{reason: fmt.Sprintf(format, args...)} }

// isRefusal reports whether err (or what it wraps) is a refusal.
func isRefusal(err error) bool {
	var r *refusal
	return errors.As(err, &r)
}

// updateInputs are what one UpdateMachine call acts on, as the API server has them.
type updateInputs struct {
	machine *clusterv1.Machine
	config  *cabpiv1.IgnitionConfig
	// digests are the user's of the config's spec.kubernetes.digestsFrom, nil without one.
	digests nodelayout.Digests
}

// gatherUpdate reads the Machine that key names, and its IgnitionConfig, from the API server
// (never a cache: the annotations must be the ones of this moment), and refuses a Machine that
// Cluster API is not updating in place.
func (h *Handlers) gatherUpdate(ctx context.Context, key client.ObjectKey) (updateInputs, error) {
	machine := &clusterv1.Machine{}
	if err := h.apiReader().Get(ctx, key, machine); err != nil {
		if apierrors.IsNotFound(err) {
			return updateInputs{}, refuse("Machine %s does not exist", key)
		}
		return updateInputs{}, fmt.Errorf("reading Machine %s: %w", key, err)
	}
	if !machine.DeletionTimestamp.IsZero() {
		return updateInputs{}, refuse("Machine %s is being deleted", key)
	}
	if !updateRequested(machine) {
		return updateInputs{}, refuse("Cluster API is not updating Machine %s in place (it lacks the %s annotation or a pending %s hook)",
			key, clusterv1.UpdateInProgressAnnotation, updateMachineHook)
	}
	if isControlPlane(machine.Labels) {
		return updateInputs{}, refuse("Machine %s is a control-plane Machine (%s): control-plane nodes are not updated in place", key, clusterv1.MachineControlPlaneLabel)
	}
	ref := machine.Spec.Bootstrap.ConfigRef
	if ref.APIGroup != cabpiv1.GroupVersion.Group || ref.Kind != configKind.Kind || ref.Name == "" {
		return updateInputs{}, refuse("the bootstrap config of Machine %s is a %s.%s, not an IgnitionConfig: cabpi updates only its own", key, ref.Kind, ref.APIGroup)
	}
	config := &cabpiv1.IgnitionConfig{}
	configKey := client.ObjectKey{Namespace: machine.Namespace, Name: ref.Name}
	if err := h.apiReader().Get(ctx, configKey, config); err != nil {
		if apierrors.IsNotFound(err) {
			return updateInputs{}, refuse("the IgnitionConfig %s of Machine %s does not exist", configKey, key)
		}
		return updateInputs{}, fmt.Errorf("reading IgnitionConfig %s: %w", configKey, err)
	}
	if _, marked := config.Annotations[clusterv1.UpdateInProgressAnnotation]; !marked {
		return updateInputs{}, refuse("Cluster API has not marked IgnitionConfig %s for the update (no %s annotation)", configKey, clusterv1.UpdateInProgressAnnotation)
	}
	digests, err := h.kubernetesDigests(ctx, machine.Namespace, config.Spec.Kubernetes.DigestsFrom)
	if err != nil {
		return updateInputs{}, err
	}
	return updateInputs{machine: machine, config: config, digests: digests}, nil
}

// kubernetesDigests reads the digest list spec.kubernetes.digestsFrom names, from the API server
// at the moment of the call, as the config's render reads it: the update checks what it swaps
// in against the same pins as first boot (ignition.KubernetesPins). A list that is missing or
// does not parse is an error answered with a retry: the user can create or fix it.
func (h *Handlers) kubernetesDigests(ctx context.Context, namespace string, from *cabpiv1.DigestsSource) (nodelayout.Digests, error) {
	if from == nil {
		return nil, nil
	}
	var data []byte
	var what string
	switch {
	case from.Secret != nil:
		what = fmt.Sprintf("Secret %s/%s key %s (spec.kubernetes.digestsFrom)", namespace, from.Secret.Name, from.Secret.Key)
		secret := &corev1.Secret{}
		if err := h.apiReader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: from.Secret.Name}, secret); err != nil {
			return nil, fmt.Errorf("reading %s: %w", what, err)
		}
		d, ok := secret.Data[from.Secret.Key]
		if !ok {
			return nil, fmt.Errorf("%s: no such key", what)
		}
		data = d
	case from.ConfigMap != nil:
		what = fmt.Sprintf("ConfigMap %s/%s key %s (spec.kubernetes.digestsFrom)", namespace, from.ConfigMap.Name, from.ConfigMap.Key)
		cm := &corev1.ConfigMap{}
		if err := h.apiReader().Get(ctx, client.ObjectKey{Namespace: namespace, Name: from.ConfigMap.Name}, cm); err != nil {
			return nil, fmt.Errorf("reading %s: %w", what, err)
		}
		d, ok := cm.Data[from.ConfigMap.Key]
		if !ok {
			return nil, fmt.Errorf("%s: no such key", what)
		}
		data = []byte(d)
	default:
		return nil, nil
	}
	digests, err := nodelayout.ParseDigests(data)
	if err != nil {
		return nil, fmt.Errorf("%s is not a digest list: %w", what, err)
	}
	return digests, nil
}

// updateMachineHook is the hook's name in Cluster API's pending-hooks annotation.
var updateMachineHook = runtimecatalog.HookName(runtimehooksv1.UpdateMachine)

// updateRequested: Cluster API marked the Machine for an in-place update and has its
// UpdateMachine hook pending, the two things its Machine controller checks before it calls the
// hook.
func updateRequested(m *clusterv1.Machine) bool {
	if _, inProgress := m.Annotations[clusterv1.UpdateInProgressAnnotation]; !inProgress {
		return false
	}
	pending := strings.Split(m.Annotations[runtimev1.PendingHooksAnnotation], ",")
	for i := range pending {
		pending[i] = strings.TrimSpace(pending[i])
	}
	return slices.Contains(pending, updateMachineHook)
}

// apiReader reads past any cache: APIReader when set, else Client.
func (h *Handlers) apiReader() client.Reader {
	if h.APIReader != nil {
		return h.APIReader
	}
	return h.Client
}
