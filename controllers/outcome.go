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
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/metrics"
)

// outcome is what carrying out an action (execute.go) came to, as the config's status, its
// events and the controller's result say it. Reconcile applies it in one place (apply).
type outcome struct {
	// dataSecretAvailable and certificatesAvailable are the conditions to set; nil leaves one as
	// it is.
	dataSecretAvailable   *metav1.Condition
	certificatesAvailable *metav1.Condition
	// stored records data just written: the status names the data Secret and the digest of
	// the inputs it was rendered from.
	stored *storedData
	// recordHash records the digest of delivered data's inputs without rendering ("": none).
	recordHash string
	// recordSpecHash records status.dataSpecHash without rendering ("": none).
	recordSpecHash string
	// forgetDelivered: the status no longer records a data Secret.
	forgetDelivered bool
	// events go on the config; messages never carry secret material.
	events  []event
	requeue time.Duration
	// err is retried with backoff (the status is still patched, without observedGeneration).
	err error
	// stale: the config this reconcile read is older than the API server's (the cache has not
	// seen this controller's last status write). Nothing is written from it: its status,
	// Ready and Paused recomputed from the older copy would overwrite the newer conditions (and
	// cost a patch, its conflicts with the newer resourceVersion, and one more patch to put them
	// back); the watch brings the newer copy, reconciled again.
	stale bool
	// leaveStatus: nothing is written to the status, not even the generation observed (an
	// in-place update in progress: the reconcile after it records what it sees then).
	leaveStatus bool
}

type storedData struct {
	secretName string
	inputsHash string
	// specHash is the inplace.SpecHash of the spec the data was rendered from.
	specHash string
}

// event is one event on the config. failure counts it in cabpi_failures_total by reason.
type event struct {
	eventType string
	reason    string
	note      string
	failure   bool
}

// apply writes o to the config's status and events, and returns the controller's result.
func (r *Reconciler) apply(config *cabpiv1.IgnitionConfig, o outcome) (ctrl.Result, error) {
	if o.stored != nil {
		config.Status.DataSecretName = o.stored.secretName
		config.Status.Initialization.DataSecretCreated = ptr.To(true)
		config.Status.DataInputsHash = o.stored.inputsHash
		config.Status.DataSpecHash = o.stored.specHash
	}
	if o.recordHash != "" {
		config.Status.DataInputsHash = o.recordHash
	}
	if o.recordSpecHash != "" {
		config.Status.DataSpecHash = o.recordSpecHash
	}
	if o.forgetDelivered {
		config.Status.Initialization.DataSecretCreated = nil
		config.Status.DataSecretName = ""
	}
	for _, c := range []*metav1.Condition{o.dataSecretAvailable, o.certificatesAvailable} {
		if c != nil {
			c.Message = bounded(c.Message, maxConditionMessage)
			conditions.Set(config, *c)
		}
	}
	for _, e := range o.events {
		if r.Recorder != nil {
			r.Recorder.Eventf(config, nil, e.eventType, e.reason, "Render", "%s", bounded(e.note, maxEventNote))
		}
		if e.failure {
			metrics.Failure(e.reason)
		}
	}
	return ctrl.Result{RequeueAfter: o.requeue}, o.err
}

// The outcomes, by what happened. Each is pure: decide_test.go checks the reason and requeue
// of each.

// waiting: no data yet, for a reason outside the config.
func waiting(reason, message string, requeue time.Duration) outcome {
	return outcome{dataSecretAvailable: dataSecretFalse(reason, message), requeue: requeue}
}

// failed: no data, for a reason the user acts on: a warning event, counted.
func failed(reason, message string, requeue time.Duration) outcome {
	return outcome{dataSecretAvailable: dataSecretFalse(reason, message), requeue: requeue,
		events: []event{warningFailure(reason, message)}}
}

// notStoredOutcome says why a first render stored nothing.
func notStoredOutcome(why *notStored) outcome {
	if why.userError {
		return failed(why.reason, why.message, why.requeue)
	}
	return waiting(why.reason, why.message, why.requeue)
}

// retrying is an error retried with backoff; DataSecretAvailable says why meanwhile.
func retrying(reason string, err error) outcome {
	return outcome{dataSecretAvailable: dataSecretFalse(reason, err.Error()), err: err}
}

func warningFailure(reason, note string) event {
	return event{eventType: corev1.EventTypeWarning, reason: reason, note: note, failure: true}
}

func dataSecretFalse(reason, message string) *metav1.Condition {
	return &metav1.Condition{Type: cabpiv1.DataSecretAvailableCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message}
}

func dataSecretTrue() *metav1.Condition {
	return &metav1.Condition{Type: cabpiv1.DataSecretAvailableCondition, Status: metav1.ConditionTrue, Reason: cabpiv1.DataSecretAvailableReason}
}

func certificatesTrue() *metav1.Condition {
	return &metav1.Condition{Type: cabpiv1.CertificatesAvailableCondition, Status: metav1.ConditionTrue, Reason: cabpiv1.CertificatesAvailableReason}
}

func certificatesFalse(reason, message string) *metav1.Condition {
	return &metav1.Condition{Type: cabpiv1.CertificatesAvailableCondition, Status: metav1.ConditionFalse, Reason: reason, Message: message}
}

// renderFailure maps a renderer error to the condition reason a user acts on: the kind of its
// first finding, a variant mismatch being Butane's or the Container Linux Config's by the field
// it is reported on.
func renderFailure(err error) *notStored {
	reason := cabpiv1.InvalidConfigReason
	if rerr, ok := asRenderError(err); ok {
		switch rerr.Kind {
		case ignition.ErrInvalidContainerLinuxConfig:
			reason = cabpiv1.InvalidContainerLinuxConfigReason
		case ignition.ErrInvalidButane, ignition.ErrVariantMismatch:
			reason = cabpiv1.InvalidButaneReason
			if rerr.Place.Part == ignition.PartContainerLinuxConfig { // a Container Linux Config for fcos
				reason = cabpiv1.InvalidContainerLinuxConfigReason
			}
		case ignition.ErrOwnedPathConflict:
			reason = cabpiv1.OwnedPathConflictReason
		case ignition.ErrUnsupportedKubernetesVersion:
			reason = cabpiv1.UnsupportedKubernetesVersionReason
		case ignition.ErrUnsupportedIgnitionVersion:
			reason = cabpiv1.UnsupportedIgnitionVersionReason
		case ignition.ErrKubernetesDigestUnknown:
			reason = cabpiv1.KubernetesDigestUnknownReason
		}
	}
	return &notStored{reason: reason, message: fmt.Sprintf("Rendering failed: %v", err), requeue: renderErrorRetry,
		userError: true, neverRenders: true}
}

// tooLarge: the rendered data does not fit in a Secret.
func tooLarge(message string) *notStored {
	return &notStored{reason: cabpiv1.DataTooLargeReason, message: message, requeue: renderErrorRetry, userError: true, neverRenders: true}
}

// storedOutcome records data rendered and just stored: DataSecretAvailable True, with
// OverPlatformLimit and a warning event when the data is larger than the platform takes even
// compressed, or RenderedWithWarnings with the render's warnings.
func storedOutcome(stored storedData, out ignition.Output, platform cabpiv1.Platform, requeue time.Duration) outcome {
	o := outcome{stored: &stored, requeue: requeue, dataSecretAvailable: dataSecretTrue()}
	overLimit := configinput.OverPlatformLimit(out, platform)
	warnings := warningsMessage(out.Warnings)
	switch {
	case overLimit != "":
		o.dataSecretAvailable.Reason = cabpiv1.OverPlatformLimitReason
	case warnings != "":
		o.dataSecretAvailable.Reason = cabpiv1.RenderedWithWarningsReason
	default:
		return o
	}
	o.dataSecretAvailable.Message = strings.TrimSpace(overLimit + "\n" + warnings)
	if overLimit != "" {
		o.events = append(o.events, event{eventType: corev1.EventTypeWarning, reason: cabpiv1.OverPlatformLimitReason, note: overLimit})
	}
	if warnings != "" {
		o.events = append(o.events, event{eventType: corev1.EventTypeWarning, reason: cabpiv1.RenderedWithWarningsReason, note: warnings})
	}
	return o
}

// rerenderFailedCondition says, on DataSecretAvailable (kept True: the delivered data still
// boots), why changed inputs were not rendered.
func rerenderFailedCondition(why *notStored) *metav1.Condition {
	msg := bounded(fmt.Sprintf("The inputs changed, but the data cannot be rendered again from them (%s): %s. "+
		"The data Secret keeps the data rendered before", why.reason, why.message), maxConditionMessage)
	return &metav1.Condition{Type: cabpiv1.DataSecretAvailableCondition, Status: metav1.ConditionTrue,
		Reason: cabpiv1.RerenderFailedReason, Message: msg}
}

// deliveredOutcome is what the status of delivered data says (decideDelivered's notes), on top
// of o. A RerenderFailed warning is emitted when the condition's message changes, not at every
// reconcile; before is DataSecretAvailable as the config had it.
func deliveredOutcome(o outcome, notes deliveredNotes, before *metav1.Condition, kind string, dataSecretName string) outcome {
	if notes.certificates && o.certificatesAvailable == nil {
		o.certificatesAvailable = certificatesTrue()
	}
	if notes.recordHash != "" {
		o.recordHash = notes.recordHash
	}
	if notes.recordSpecHash != "" && o.stored == nil {
		o.recordSpecHash = notes.recordSpecHash
	}
	if o.dataSecretAvailable != nil {
		return o // the action's own word (stored again, token lost) wins
	}
	switch {
	case notes.rerenderFailed != nil:
		o.dataSecretAvailable = rerenderFailedCondition(notes.rerenderFailed)
		if notes.rerenderFailed.userError && (before == nil || before.Reason != cabpiv1.RerenderFailedReason || before.Message != o.dataSecretAvailable.Message) {
			o.events = append(o.events, warningFailure(cabpiv1.RerenderFailedReason, o.dataSecretAvailable.Message))
		}
	case notes.available:
		o.dataSecretAvailable = dataSecretTrue()
	}
	if notes.noteSpecChange {
		o.events = append(o.events, specChangeNotRendered(kind, dataSecretName))
	}
	return o
}

// specChangeNotRendered says that a spec changed after the owner started provisioning is not
// rendered (changes to referenced objects are not noted: their digest is not computed after
// the line).
func specChangeNotRendered(ownerKind, dataSecretName string) event {
	if ownerKind == "MachinePool" {
		return event{eventType: corev1.EventTypeNormal, reason: cabpiv1.NotRerenderedEventReason, note: fmt.Sprintf(
			"The spec changed after the MachinePool started provisioning: data Secret %s is rendered again from it at the next join-token rotation, for instances created after it",
			dataSecretName)}
	}
	return event{eventType: corev1.EventTypeWarning, reason: cabpiv1.NotRerenderedEventReason, note: fmt.Sprintf(
		"The spec changed after the Machine started provisioning: data Secret %s is not rendered again; change the MachineDeployment's template to roll out new data",
		dataSecretName)}
}

// warningsMessage lists a render's warnings for a condition message and an event, one per
// line; "" for none. Warnings name keys and places in the user's documents, never values.
func warningsMessage(warnings []ignition.Warning) string {
	if len(warnings) == 0 {
		return ""
	}
	lines := make([]string, 0, len(warnings)+1)
	lines = append(lines, fmt.Sprintf("Rendered with %d warning(s) (strict makes them errors):", len(warnings)))
	for _, w := range warnings {
		lines = append(lines, "spec."+w.String())
	}
	return strings.Join(lines, "\n")
}

// asRenderError is the renderer's error in err (its first finding), if it is one.
func asRenderError(err error) (*ignition.Error, bool) {
	var rerr *ignition.Error
	ok := errors.As(err, &rerr)
	return rerr, ok
}
