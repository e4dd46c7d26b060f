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
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// patchStatus writes what this reconcile changed in the config's status (after, against before
// as the reconcile read it) in one request, or none when nothing changed.
//
// Cluster API's patch helper (util/patch) sends the conditions and the rest of the status as two
// patches. For a config just rendered that is two requests where one does, and between them
// the config is seen with DataSecretAvailable True but no data Secret recorded: the reconcile
// that sees it takes the data Secret for one the status lost (adopt) and reads the config past
// the cache to find it is not (bench/results.md counted 2 PATCHes and 0.6 GETs of the config per
// worker). Here both go in one patch, with the helper's rules for each part:
//   - conditions: this reconcile's changes (conditions.NewPatch) applied to the latest copy the
//     cache has, every condition type this controller owns (ownedConditions) being its own;
//   - the other status fields: those this reconcile changed take its value, the others keep the
//     latest copy's;
//   - the patch carries the latest copy's resourceVersion (optimistic lock): a copy the API
//     server has moved past is a conflict, retried on the cache's newer copy, as the helper does
//     for conditions.
func (r *Reconciler) patchStatus(ctx context.Context, before, after *cabpiv1.IgnitionConfig, succeeded bool) error {
	if err := setReady(after); err != nil {
		return err
	}
	if succeeded {
		after.Status.ObservedGeneration = after.Generation
	}
	if equality.Semantic.DeepEqual(before.Status, after.Status) {
		return nil // a patch that changes nothing is not sent
	}
	conditionsChange, err := conditions.NewPatch(before, after)
	if err != nil {
		return fmt.Errorf("computing the condition changes of %s: %w", klog.KObj(after), err)
	}
	key := client.ObjectKeyFromObject(after)
	backoff := wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Jitter: 1.0} // the patch helper's
	var lastConflict error
	err = wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		latest := &cabpiv1.IgnitionConfig{}
		if err := r.Client.Get(ctx, key, latest); err != nil {
			return false, err
		}
		base := latest.DeepCopy()
		if err := conditionsChange.Apply(latest, conditions.OwnedConditionTypes(ownedConditions)); err != nil {
			return false, err
		}
		changedStatusFields(&before.Status, &after.Status, &latest.Status)
		err := r.Client.Status().Patch(ctx, latest, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
		if apierrors.IsConflict(err) {
			lastConflict = err
			return false, nil
		}
		if err != nil {
			return false, err
		}
		return true, nil
	})
	if wait.Interrupted(err) && lastConflict != nil {
		err = lastConflict
	}
	if err != nil {
		return fmt.Errorf("patching the status of %s: %w", klog.KObj(after), err)
	}
	return nil
}

// changedStatusFields sets on latest each status field but the conditions that differs between
// before and after, to after's value.
func changedStatusFields(before, after, latest *cabpiv1.IgnitionConfigStatus) {
	b, a, l := reflect.ValueOf(before).Elem(), reflect.ValueOf(after).Elem(), reflect.ValueOf(latest).Elem()
	for i := range a.NumField() {
		if a.Type().Field(i).Name == "Conditions" {
			continue
		}
		if !equality.Semantic.DeepEqual(b.Field(i).Interface(), a.Field(i).Interface()) {
			l.Field(i).Set(reflect.ValueOf(a.Field(i).Interface()))
		}
	}
}
