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

package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// referencesIndex indexes IgnitionConfigs by the objects their spec reads content from, as
// "<Kind>/<name>" (configinput.References).
const referencesIndex = "spec.references"

func referenceKey(kind, name string) string { return kind + "/" + name }

// indexReferences is the referencesIndex of an IgnitionConfig.
func indexReferences(o client.Object) []string {
	config, ok := o.(*cabpiv1.IgnitionConfig)
	if !ok {
		return nil
	}
	refs := configinput.References(&config.Spec)
	keys := make([]string, 0, len(refs))
	for _, ref := range refs {
		keys = append(keys, referenceKey(ref.Kind, ref.Name))
	}
	return keys
}

// watchReferences makes a change to a referenced Secret or ConfigMap reconcile the configs that
// reference it, so that data not yet booted from is rendered again (docs/adr/015). Only objects
// with the cluster-name label are watched: Secrets through the manager's one label-selected
// Secret cache (internal/secretcache), ConfigMaps through a label-selected metadata-only one, so
// that the Secrets and ConfigMaps of the management cluster cost no memory. Changes to an
// unlabelled reference are found by a periodic look instead (ReferenceRecheckInterval).
//
// The sources are raw: the --watch-filter predicate of the other watches would ask the
// referenced objects for the watch label; the configs found are filtered by it instead.
func (r *Reconciler) watchReferences(ctx context.Context, mgr ctrl.Manager, b *builder.Builder) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &cabpiv1.IgnitionConfig{}, referencesIndex, indexReferences); err != nil {
		return fmt.Errorf("indexing IgnitionConfigs by their references: %w", err)
	}
	// Resyncs repeat what was seen; only a new version of an object can change a config's inputs.
	changed := predicate.ResourceVersionChangedPredicate{}
	b.WatchesRawSource(source.Kind[client.Object](mgr.GetCache(), &corev1.Secret{},
		handler.EnqueueRequestsFromMapFunc(r.referencingConfigs(configinput.SecretKind)), changed))
	// Metadata only: the API server sends no ConfigMap data to this watch.
	configMaps := &metav1.PartialObjectMetadata{}
	configMaps.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	b.WatchesRawSource(source.Kind[client.Object](mgr.GetCache(), configMaps,
		handler.EnqueueRequestsFromMapFunc(r.referencingConfigs(configinput.ConfigMapKind)), changed))
	return nil
}

// referencingConfigs maps a Secret or ConfigMap to the configs of its namespace that read it.
func (r *Reconciler) referencingConfigs(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []ctrl.Request {
		opts := []client.ListOption{
			client.InNamespace(o.GetNamespace()),
			client.MatchingFields{referencesIndex: referenceKey(kind, o.GetName())},
		}
		if r.WatchFilterValue != "" {
			opts = append(opts, client.MatchingLabels{clusterv1.WatchLabel: r.WatchFilterValue})
		}
		configs := &cabpiv1.IgnitionConfigList{}
		if err := r.Client.List(ctx, configs, opts...); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Listing the IgnitionConfigs that reference an object", "kind", kind, "name", o.GetName())
			return nil
		}
		out := make([]ctrl.Request, 0, len(configs.Items))
		for i := range configs.Items {
			out = append(out, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(&configs.Items[i])})
		}
		return out
	}
}
