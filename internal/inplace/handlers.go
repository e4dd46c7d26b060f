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
	"encoding/json"
	"fmt"

	"github.com/blang/semver/v4"
	jsonpatch "github.com/evanphx/json-patch/v5"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	runtimehooksv1 "sigs.k8s.io/cluster-api/api/runtime/hooks/v1alpha1"
	"sigs.k8s.io/cluster-api/controllers/clustercache"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// Handlers serve the in-place update hooks of Cluster API's Runtime SDK.
type Handlers struct {
	// Client reads the management cluster: Machines, Clusters and their control planes.
	Client client.Client
	// APIReader reads the management cluster past any cache: what UpdateMachine acts on is
	// read at the moment of the call (gather.go). Client when nil.
	APIReader client.Reader
	// ClusterCache reaches the workload clusters, where the update runs.
	ClusterCache clustercache.ClusterCache
	// Recorder tells a Machine's events why its update failed.
	Recorder events.EventRecorder
	// Image is cabpi's image, which the update Job runs on the node: read when an update starts.
	Image func(context.Context) (string, error)
	// ImagePullSecrets name the Secrets of the workload cluster's kube-system the Job pulls it with.
	ImagePullSecrets []string
}

// DoCanUpdateMachineSet implements the CanUpdateMachineSet hook: a MachineDeployment's new
// MachineSet against its old one.
func (h *Handlers) DoCanUpdateMachineSet(ctx context.Context, req *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse) {
	ms := &req.Desired.MachineSet
	canUpdateMachineSet(req, resp, func() (string, error) { return h.controlPlaneVersion(ctx, ms.Namespace, ms.Spec.ClusterName) })
	ctrl.LoggerFrom(ctx).WithValues("MachineSet", client.ObjectKeyFromObject(ms)).Info("CanUpdateMachineSet",
		"machineSetPatch", resp.MachineSetPatch.IsDefined(), "bootstrapConfigTemplatePatch", resp.BootstrapConfigTemplatePatch.IsDefined(),
		"message", resp.Message)
}

// canUpdateMachineSet answers CanUpdateMachineSet; controlPlaneVersion reads the version of the
// workload cluster's API server, when the decision needs it.
func canUpdateMachineSet(req *runtimehooksv1.CanUpdateMachineSetRequest, resp *runtimehooksv1.CanUpdateMachineSetResponse, controlPlaneVersion func() (string, error)) {
	current, err := templateSide(req.Current.MachineSet.Spec.Template.Spec.Version, req.Current.BootstrapConfigTemplate)
	if err != nil {
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusFailure, err.Error()
		return
	}
	desired, err := templateSide(req.Desired.MachineSet.Spec.Template.Spec.Version, req.Desired.BootstrapConfigTemplate)
	if err != nil {
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusFailure, err.Error()
		return
	}
	current.ControlPlane = isControlPlane(req.Current.MachineSet.Spec.Template.Labels)
	desired.ControlPlane = isControlPlane(req.Desired.MachineSet.Spec.Template.Labels)
	cp, err := controlPlaneVersionFor(current, desired, controlPlaneVersion)
	if err != nil {
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusFailure, err.Error()
		return
	}
	verdict := Decide(current, desired, cp)
	resp.Status, resp.Message = runtimehooksv1.ResponseStatusSuccess, verdict.Message()
	if verdict.Version {
		resp.MachineSetPatch = mergePatch(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"version": desired.Version}}}})
	}
	if verdict.BaseURL {
		spec, err := specPatch(*current.Config, *desired.Config)
		if err != nil {
			resp.Status, resp.Message, resp.MachineSetPatch = runtimehooksv1.ResponseStatusFailure, err.Error(), runtimehooksv1.Patch{}
			return
		}
		resp.BootstrapConfigTemplatePatch = mergePatch(map[string]any{"spec": map[string]any{"template": map[string]any{"spec": spec}}})
	}
}

// DoUpdateMachine implements the UpdateMachine hook: it moves the Machine's node to the version
// of the Machine as the API server has it (update.go), answering with a retry interval while the
// update runs. The request only names the Machine (gather.go). Cluster API's retry semantics:
// Failure is final for this attempt (it reports InPlaceUpdateFailed and backs off), so it is
// answered only for a request the extension refuses and for an update that the node side
// failed; a passing error (a read, a conflict, a workload cluster not connected yet) is answered
// Success with a retry interval.
func (h *Handlers) DoUpdateMachine(ctx context.Context, req *runtimehooksv1.UpdateMachineRequest, resp *runtimehooksv1.UpdateMachineResponse) {
	key := client.ObjectKeyFromObject(&req.Desired.Machine)
	log := ctrl.LoggerFrom(ctx).WithValues("Machine", key)
	p, err := h.updateMachine(ctx, key)
	switch {
	case isRefusal(err):
		log.Info("UpdateMachine refused", "reason", err.Error())
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusFailure, "cabpi refuses to update in place: "+err.Error()
	case err != nil:
		log.Error(err, "UpdateMachine: retrying", "retryAfterSeconds", retrySoon)
		resp.Status, resp.Message, resp.RetryAfterSeconds = runtimehooksv1.ResponseStatusSuccess, err.Error()+" (retrying)", retrySoon
	case p.failed:
		log.Info("UpdateMachine failed", "message", p.message)
		resp.Status, resp.Message = runtimehooksv1.ResponseStatusFailure, p.message
	default:
		log.Info("UpdateMachine", "retryAfterSeconds", p.retryAfter, "message", p.message)
		resp.Status, resp.Message, resp.RetryAfterSeconds = runtimehooksv1.ResponseStatusSuccess, p.message, p.retryAfter
	}
}

// updateMachine gathers what the update of the Machine key acts on, then runs it.
func (h *Handlers) updateMachine(ctx context.Context, key client.ObjectKey) (progress, error) {
	in, err := h.gatherUpdate(ctx, key)
	if err != nil {
		return progress{}, err
	}
	return h.update(ctx, in)
}

// controlPlaneVersion is the version a kubelet of the cluster may not be of a newer minor than:
// the lowest spec.version among the cluster's control-plane Machines, read from the API server
// (during a control-plane rollout the load balancer may send a read to either side, and the
// older servers are the bound). A cluster whose control plane has no Machines (a hosted one) is
// bounded by its API server's own version. Read from the Machines and the API server rather
// than the control-plane object's status.version, which would need RBAC on every control-plane
// provider's kinds (a wildcard).
func (h *Handlers) controlPlaneVersion(ctx context.Context, namespace, clusterName string) (string, error) {
	machines := &clusterv1.MachineList{}
	if err := h.apiReader().List(ctx, machines, client.InNamespace(namespace),
		client.MatchingLabels{clusterv1.ClusterNameLabel: clusterName}, client.HasLabels{clusterv1.MachineControlPlaneLabel}); err != nil {
		return "", fmt.Errorf("listing the control-plane Machines of cluster %s/%s: %w", namespace, clusterName, err)
	}
	if lowest, err := lowestVersion(machines.Items); err != nil || lowest != "" {
		return lowest, err
	}
	return h.apiServerVersion(ctx, namespace, clusterName)
}

// lowestVersion is the lowest spec.version among machines ("" for none); an error for one that
// is not a semantic version, which Cluster API's validation does not let through.
func lowestVersion(machines []clusterv1.Machine) (string, error) {
	var lowest string
	var lowestV semver.Version
	for i := range machines {
		m := &machines[i]
		if m.Spec.Version == "" || !m.DeletionTimestamp.IsZero() {
			continue
		}
		v, err := semver.ParseTolerant(m.Spec.Version)
		if err != nil {
			return "", fmt.Errorf("control-plane Machine %s has spec.version %q, not a semantic version: %w", m.Name, m.Spec.Version, err)
		}
		if lowest == "" || v.LT(lowestV) {
			lowest, lowestV = m.Spec.Version, v
		}
	}
	return lowest, nil
}

// apiServerVersion is the version of the workload cluster's API server.
func (h *Handlers) apiServerVersion(ctx context.Context, namespace, clusterName string) (string, error) {
	if h.ClusterCache == nil {
		return "", fmt.Errorf("the workload cluster %s/%s cannot be reached: no cluster cache", namespace, clusterName)
	}
	cfg, err := h.ClusterCache.GetRESTConfig(ctx, client.ObjectKey{Namespace: namespace, Name: clusterName})
	if err != nil {
		return "", fmt.Errorf("the workload cluster %s/%s cannot be reached yet to read its API server's version: %w", namespace, clusterName, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return "", fmt.Errorf("a discovery client for the workload cluster %s/%s: %w", namespace, clusterName, err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("reading the API server version of the workload cluster %s/%s: %w", namespace, clusterName, err)
	}
	return info.GitVersion, nil
}

// controlPlaneVersionFor reads the control plane's version when the decision over current and
// desired needs it (NeedsControlPlaneVersion), and "" when it does not. A CanUpdate hook whose
// inputs cannot be read answers Failure: Cluster API keeps a "cannot" answer for a day and
// replaces the Machines, an error it asks again.
func controlPlaneVersionFor(current, desired Side, read func() (string, error)) (string, error) {
	if !NeedsControlPlaneVersion(current, desired) {
		return "", nil
	}
	return read()
}

// isControlPlane: labels have Cluster API's control-plane label (its value is empty).
func isControlPlane(labels map[string]string) bool {
	_, ok := labels[clusterv1.MachineControlPlaneLabel]
	return ok
}

// ignitionGroupKinds are the bootstrap kinds this extension reads.
var (
	configKind   = cabpiv1.GroupVersion.WithKind("IgnitionConfig")
	templateKind = cabpiv1.GroupVersion.WithKind("IgnitionConfigTemplate")
)

// templateSide decodes a MachineSet's side of a request: its version and, when its bootstrap
// config template is an IgnitionConfigTemplate, that template's spec.
func templateSide(version string, raw runtime.RawExtension) (Side, error) {
	return decodeSide(version, raw, templateKind, func(t *cabpiv1.IgnitionConfigTemplate) *cabpiv1.IgnitionConfigSpec {
		return &t.Spec.Template.Spec
	})
}

// decodeSide decodes raw as a T when it is of kind want, and takes the spec spec gives of it.
func decodeSide[T any](version string, raw runtime.RawExtension, want schema.GroupVersionKind, spec func(*T) *cabpiv1.IgnitionConfigSpec) (Side, error) {
	side := Side{Version: version}
	data, gvk, err := rawObject(raw)
	if err != nil || gvk != want {
		return side, err
	}
	obj := new(T)
	if err := json.Unmarshal(data, obj); err != nil {
		return side, fmt.Errorf("decoding the %s of the request: %w", want.Kind, err)
	}
	side.Config = spec(obj)
	return side, nil
}

// rawObject is the JSON of a request's object and its kind; none for an absent object.
func rawObject(raw runtime.RawExtension) ([]byte, schema.GroupVersionKind, error) {
	data := raw.Raw
	if data == nil && raw.Object != nil {
		var err error
		if data, err = json.Marshal(raw.Object); err != nil {
			return nil, schema.GroupVersionKind{}, fmt.Errorf("encoding an object of the request: %w", err)
		}
	}
	if len(data) == 0 {
		return nil, schema.GroupVersionKind{}, nil
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(data); err != nil {
		return nil, schema.GroupVersionKind{}, fmt.Errorf("decoding an object of the request: %w", err)
	}
	return data, u.GroupVersionKind(), nil
}

// mergePatch is a JSON merge patch (RFC 7386) of the whole object.
func mergePatch(patch map[string]any) runtimehooksv1.Patch {
	data, err := json.Marshal(patch)
	if err != nil {
		// Maps of strings always marshal.
		panic(fmt.Sprintf("marshalling a merge patch: %v", err))
	}
	return runtimehooksv1.Patch{PatchType: runtimehooksv1.JSONMergePatchType, Patch: data}
}

// specPatch is the merge patch (RFC 7386) of a spec that takes current to what an in-place
// update makes of it (accept): derived from both, so that a field the update clears is set to
// null (a merge patch merges nested objects: one that only set desired's mirror would keep a
// baseURL desired no longer has, which Cluster API then sees as a difference and answers by
// replacing the Machine).
func specPatch(current, desired cabpiv1.IgnitionConfigSpec) (map[string]any, error) {
	curJSON, err := json.Marshal(current)
	if err != nil {
		return nil, fmt.Errorf("encoding the current spec: %w", err)
	}
	takenJSON, err := json.Marshal(accept(current, desired))
	if err != nil {
		return nil, fmt.Errorf("encoding the spec the update takes: %w", err)
	}
	data, err := jsonpatch.CreateMergePatch(curJSON, takenJSON)
	if err != nil {
		return nil, fmt.Errorf("the merge patch of the spec: %w", err)
	}
	patch := map[string]any{}
	if err := json.Unmarshal(data, &patch); err != nil {
		return nil, fmt.Errorf("decoding the merge patch of the spec: %w", err)
	}
	return patch, nil
}

// nodeReady reports the Node's Ready condition.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
