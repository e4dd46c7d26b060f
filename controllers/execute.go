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
	"errors"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// execute carries out what decide chose and returns its outcome. It is where a reconcile
// writes: the data Secret, join tokens and certificates in the clusters, the init lock, and this
// manager's memory; the config's status and events are the outcome's, applied by Reconcile.
func (r *Reconciler) execute(ctx context.Context, s *scope, a action) outcome {
	var o outcome
	switch a.kind {
	case actKeep:
		o = outcome{requeue: a.requeue}
	case actWait:
		o = waiting(a.reason, a.message, a.requeue)
	case actFail, actTokenLost:
		o = failed(a.reason, a.message, a.requeue)
	case actForgetDataSecret:
		o = waiting(a.reason, a.message, a.requeue)
		o.forgetDelivered = true
	case actAdopt:
		o = r.adopt(ctx, s)
	case actInit:
		o = r.initialize(ctx, s)
		o = replacedUnowned(s, o)
	case actControlPlaneJoin, actWorkerJoin:
		o = r.join(ctx, s, a.role)
		o = replacedUnowned(s, o)
	case actRerender:
		var why *notStored
		o, why = r.rerender(ctx, s, *a.rerender, a.requeue)
		a.delivered.rerenderFailed = why
	case actRefreshToken:
		o = r.refreshToken(ctx, s, a.token)
	case actRotatePoolToken:
		o = r.rotatePoolToken(ctx, s, a.currentTokenUsable)
	case actInPlaceUpdate:
		return outcome{leaveStatus: true}
	}

	key := client.ObjectKeyFromObject(s.config)
	if a.delivered.forgetToken {
		r.memory.forgetToken(key) // left to expire: nothing to look after
	}
	if a.delivered.noteSpecChange {
		r.memory.firstNote(key, s.config.Generation)
	}
	var before *metav1.Condition // a copy: Get points into the conditions apply changes
	if c := conditions.Get(s.config, cabpiv1.DataSecretAvailableCondition); c != nil {
		before = c.DeepCopy()
	}
	return deliveredOutcome(o, a.delivered, before, s.kind(), dataSecretName(s.config))
}

// firstRender renders and stores the data of a config that has none from what building its
// input gave (b, err), with the config's next join token where it needs one.
func (r *Reconciler) firstRender(ctx context.Context, s *scope, b built, err error) outcome {
	var o outcome
	var unusable *certificatesUnusable
	switch {
	case errors.As(err, &unusable):
		o = retrying(cabpiv1.DataSecretInternalErrorReason, err)
	case err != nil:
		o = outcome{err: err}
	case b.notBuilt != nil:
		o = notStoredOutcome(b.notBuilt)
	default:
		res := r.renderAndStore(ctx, s, b.input, r.nextToken)
		switch {
		case res.err != nil:
			o = retrying(res.reason, res.err)
		case res.notStored != nil:
			o = notStoredOutcome(res.notStored)
		default:
			o = r.storedAs(s, b.input, res)
			countTokenMade(res, false)
		}
	}
	o.certificatesAvailable = b.certificates
	return o
}

// replacedUnowned adds to a first render that stored its data over an ownerless Secret the
// status did not record (decide) the event that says so.
func replacedUnowned(s *scope, o outcome) outcome {
	if s.dataSecretUnowned && o.stored != nil {
		o.events = append(o.events, event{eventType: corev1.EventTypeWarning, reason: cabpiv1.DataSecretReplacedEventReason,
			note: "Secret " + s.dataSecret.Name + " had no owner and was not recorded as this config's data, and the " +
				s.kind() + " had not started provisioning: it was replaced with this config's rendered data"})
	}
	return o
}
