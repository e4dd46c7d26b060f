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
	"fmt"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// rotatePoolToken gives a MachinePool a fresh join token and rewrites its data Secret in place
// (actRotatePoolToken): the pool keeps creating instances from that Secret long after the first
// nodes joined. The old token is left to expire, so instances booting from the previous data
// still join.
//
// A rotation that cannot happen keeps the current data. While its token is still valid
// (currentUsable) DataSecretAvailable stays as it is: the Secret is there and new instances still
// join with it; the failure is logged (one the user fixes is also an event) and retried. Once
// the token is expired or gone, the data no longer joins anything and the condition says why.
func (r *Reconciler) rotatePoolToken(ctx context.Context, s *scope, currentUsable bool) outcome {
	log := ctrl.LoggerFrom(ctx).WithValues("tokenID", s.currentTokenID())
	log.Info("Rotating the MachinePool's join token")
	b, err := r.buildInput(ctx, s, ignition.RoleWorkerJoin, lookUpCertificates)
	why, reason := b.notBuilt, ""
	if unusable := (*certificatesUnusable)(nil); errors.As(err, &unusable) {
		reason = cabpiv1.DataSecretInternalErrorReason
	}
	if err == nil && why == nil {
		res := r.renderAndStore(ctx, s, b.input, r.nextToken)
		if res.ok() {
			countTokenMade(res, true)
			return r.storedAs(s, b.input, res)
		}
		why, err, reason = res.notStored, res.err, res.reason
	}

	if why != nil {
		log.Info("Cannot rotate the MachinePool's join token", "currentTokenUsable", currentUsable, "reason", why.reason, "message", why.message)
	}
	return rotationFailed(currentUsable, why, err, reason, r.policy().tokenCheckInterval())
}

// rotationFailed is the outcome of a pool rotation that stored nothing: why (the input's fault,
// or waiting), or err (retried with backoff; reason, if any, is what DataSecretAvailable says
// meanwhile). While the current token is usable the data and its condition stay.
func rotationFailed(currentUsable bool, why *notStored, err error, reason string, tokenCheck time.Duration) outcome {
	const expired = "The MachinePool's join token expired and cannot be replaced: "
	switch {
	case !currentUsable && err != nil:
		o := outcome{err: fmt.Errorf("replacing the MachinePool's expired join token: %w", err)}
		if reason != "" {
			o.dataSecretAvailable = dataSecretFalse(reason, expired+err.Error())
		}
		return o
	case !currentUsable:
		return notStoredOutcome(&notStored{reason: why.reason, message: expired + why.message, requeue: why.requeue, userError: why.userError})
	case err != nil:
		return outcome{err: fmt.Errorf("rotating the MachinePool's join token: %w", err)}
	}
	// Look again no later than the next token check, so an expiry is reported when it happens.
	o := outcome{requeue: min(why.requeue, tokenCheck)}
	if why.userError {
		// A failure the user can fix, though the condition keeps saying the data is available.
		o.events = append(o.events, warningFailure(why.reason, "MachinePool join token not rotated: "+why.message))
	}
	return o
}
