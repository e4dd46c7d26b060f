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
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/certs"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/secret"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// The BootstrapConfig contract as this provider follows it, with no API server: every branch of
// decide is a row below, with the action, the condition reason and the requeue it leads to; the
// outcomes of carrying an action out are rows of TestOutcomes. TestEveryReasonHasARow holds the
// two tables to every reason apis/v1alpha1/conditions.go declares.

var testPolicy = policy{tokenTTL: 15 * time.Minute, referenceRecheckInterval: time.Minute}

const tokenCheck = 5 * time.Minute // testPolicy.tokenCheckInterval()

var now = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// facts of a config whose Cluster is up, by what the row changes.
func worker(change ...func(*facts)) facts {
	f := facts{role: ignition.RoleWorkerJoin, infrastructureProvisioned: true, controlPlaneInitialized: true, now: now}
	for _, c := range change {
		c(&f)
	}
	return f
}

// deliveredWorker: a worker's data delivered with join token "abcdef", its condition True.
func deliveredWorker(change ...func(*facts)) facts {
	return worker(append([]func(*facts){func(f *facts) {
		f.delivered, f.dataSecret, f.tokenID, f.dataSecretAvailableTrue = true, true, "abcdef", true
		f.dataSecretAvailableReason = cabpiv1.DataSecretAvailableReason
		f.recordedHash, f.recordedSpecHash = "h1", "s1"
		f.token = tokenState{state: tokenFarFromExpiry}
	}}, change...)...)
}

// skewed: the Machine at machine, the other control-plane Machines between oldest and newest.
func skewed(machine, oldest, newest string) func(*facts) {
	return func(f *facts) {
		f.machineVersion, f.controlPlaneVersions = machine, controlPlaneVersions{oldest: oldest, newest: newest}
	}
}

func inputs(hash string) *currentInputs {
	return &currentInputs{input: nodeInput{Input: ignition.Input{Role: ignition.RoleWorkerJoin}, joinToken: true, hash: hash}}
}

func tokenExpiring(in time.Duration) tokenState {
	return tokenState{state: tokenPresent, expiration: now.Add(in), secret: &corev1.Secret{}}
}

var waitingForReference = &notStored{reason: cabpiv1.ReferenceNotFoundReason, message: "Secret s not found", requeue: waitRequeue, userError: true}

type decideRow struct {
	name    string
	facts   facts
	kind    actionKind
	reason  string // DataSecretAvailable's, as the action's outcome sets it ("" leaves it)
	requeue time.Duration
	check   func(t *testing.T, a action)
}

func decideRows() []decideRow {
	return []decideRow{
		// Cluster API updating the Machine in place: nothing is written, whatever else is due.
		{name: "in-place update in progress: no render, no token, no failure", kind: actInPlaceUpdate,
			facts: deliveredWorker(func(f *facts) {
				f.inPlaceUpdate = true
				f.inputs, f.token, f.conflict = inputs("h2"), tokenExpiring(10*time.Minute), "Secret ns/w0 is controlled by Foo x"
			}),
			check: func(t *testing.T, a action) { assert.Equal(t, deliveredNotes{}, a.delivered, "no status notes") }},
		{name: "in-place update of a config without data: not rendered until it is over", kind: actInPlaceUpdate,
			facts: worker(func(f *facts) { f.inPlaceUpdate = true })},

		// Data not delivered yet.
		{name: "a Secret of the data Secret's name is someone else's", kind: actFail, reason: cabpiv1.DataSecretConflictReason, requeue: waitRequeue,
			facts: worker(func(f *facts) { f.conflict = "Secret ns/w0 is controlled by Foo x" })},
		{name: "the Cluster's infrastructure is not provisioned", kind: actWait, reason: cabpiv1.WaitingForClusterInfrastructureReason,
			facts: worker(func(f *facts) { f.infrastructureProvisioned = false })},
		{name: "the first control-plane Machine renders kubeadm init", kind: actInit,
			facts: worker(func(f *facts) { f.role, f.controlPlane, f.controlPlaneInitialized = ignition.RoleInit, true, false })},
		{name: "a worker waits for the control plane", kind: actWait, reason: cabpiv1.WaitingForControlPlaneInitializedReason, requeue: waitRequeue,
			facts: worker(func(f *facts) { f.controlPlaneInitialized = false })},
		// The join skew guard: held to the control-plane Machines' versions (oldest, newest).
		{name: "a worker a minor ahead of the control plane waits for it", kind: actWait, reason: cabpiv1.WaitingForControlPlaneVersionReason, requeue: waitRequeue,
			facts: worker(skewed("v1.35.0", "v1.34.4", "v1.34.4")),
			check: func(t *testing.T, a action) {
				assert.Contains(t, a.message, "v1.35.0")
				assert.Contains(t, a.message, "v1.34.4")
			}},
		{name: "a worker waits for the last old control-plane Machine during an upgrade", kind: actWait, reason: cabpiv1.WaitingForControlPlaneVersionReason, requeue: waitRequeue,
			facts: worker(skewed("v1.35.0", "v1.34.4", "v1.35.0"))},
		{name: "a worker renders once the control plane caught up", kind: actWorkerJoin, facts: worker(skewed("v1.35.0", "v1.35.0", "v1.35.0"))},
		{name: "a worker a patch ahead of the control plane joins", kind: actWorkerJoin, facts: worker(skewed("v1.34.5", "v1.34.4", "v1.34.4"))},
		{name: "a worker one minor behind the control plane joins", kind: actWorkerJoin, facts: worker(skewed("v1.33.13", "v1.34.4", "v1.34.4"))},
		{name: "a worker two minors behind the control plane is refused: kubeadm will not join it", kind: actFail, reason: cabpiv1.KubeadmVersionSkewReason, requeue: renderErrorRetry,
			facts: worker(skewed("v1.32.9", "v1.34.4", "v1.34.4")),
			check: func(t *testing.T, a action) {
				assert.Contains(t, a.message, "v1.32.9")
				assert.Contains(t, a.message, "v1.34.4")
			}},
		{name: "a control-plane join one minor ahead is the control plane's upgrade: it joins", kind: actControlPlaneJoin,
			facts: worker(skewed("v1.35.0", "v1.34.4", "v1.34.4"), func(f *facts) { f.role, f.controlPlane = ignition.RoleControlPlaneJoin, true })},
		{name: "a control-plane join two minors ahead waits", kind: actWait, reason: cabpiv1.WaitingForControlPlaneVersionReason, requeue: waitRequeue,
			facts: worker(skewed("v1.36.0", "v1.34.4", "v1.34.4"), func(f *facts) { f.role, f.controlPlane = ignition.RoleControlPlaneJoin, true })},
		{name: "a control-plane join two minors behind is refused", kind: actFail, reason: cabpiv1.KubeadmVersionSkewReason, requeue: renderErrorRetry,
			facts: worker(skewed("v1.32.9", "v1.34.4", "v1.34.4"), func(f *facts) { f.role, f.controlPlane = ignition.RoleControlPlaneJoin, true })},
		{name: "no control-plane Machine (a managed control plane) holds nothing", kind: actWorkerJoin, facts: worker(skewed("v1.35.0", "", ""))},
		{name: "a version cabpi cannot render for is the render's to report, not held", kind: actWorkerJoin, facts: worker(skewed("v1.21.3", "v1.34.4", "v1.34.4"))},
		{name: "a worker joins", kind: actWorkerJoin, facts: worker(),
			check: func(t *testing.T, a action) { assert.Equal(t, ignition.RoleWorkerJoin, a.role) }},
		{name: "a MachinePool joins as a worker", kind: actWorkerJoin, facts: worker(func(f *facts) { f.machinePool = true })},
		{name: "a control-plane Machine joins once the control plane is up", kind: actControlPlaneJoin,
			facts: worker(func(f *facts) { f.role, f.controlPlane = ignition.RoleControlPlaneJoin, true }),
			check: func(t *testing.T, a action) { assert.Equal(t, ignition.RoleControlPlaneJoin, a.role) }},
		{name: "a data Secret the status does not record is adopted, never rendered twice", kind: actAdopt,
			facts: worker(func(f *facts) { f.dataSecret = true })},
		{name: "adopted even while the Cluster's infrastructure is not provisioned (a move)", kind: actAdopt,
			facts: worker(func(f *facts) { f.dataSecret, f.infrastructureProvisioned = true, false })},
		{name: "an ownerless data Secret is adopted as it is once the owner started provisioning (a restore, a move)", kind: actAdopt,
			facts: worker(func(f *facts) { f.dataSecret, f.dataSecretUnowned, f.ownerProvisioningStarted = true, true, true })},
		{name: "an ownerless data Secret before the owner provisions may be planted: rendered over", kind: actWorkerJoin,
			facts: worker(func(f *facts) { f.dataSecret, f.dataSecretUnowned = true, true })},
		{name: "an ownerless init data Secret before the owner provisions: rendered over", kind: actInit,
			facts: worker(func(f *facts) {
				f.dataSecret, f.dataSecretUnowned, f.role, f.controlPlane, f.controlPlaneInitialized = true, true, ignition.RoleInit, true, false
			})},
		{name: "an ownerless data Secret waits with the rest for the infrastructure, not adopted", kind: actWait, reason: cabpiv1.WaitingForClusterInfrastructureReason,
			facts: worker(func(f *facts) { f.dataSecret, f.dataSecretUnowned, f.infrastructureProvisioned = true, true, false })},
		{name: "an ownerless data Secret waits with the rest for the control plane, not adopted", kind: actWait, reason: cabpiv1.WaitingForControlPlaneInitializedReason, requeue: waitRequeue,
			facts: worker(func(f *facts) { f.dataSecret, f.dataSecretUnowned, f.controlPlaneInitialized = true, true, false })},

		// Delivered data whose Secret was deleted.
		{name: "data Secret deleted before the node joined: rendered again", kind: actForgetDataSecret, reason: cabpiv1.DataSecretInternalErrorReason, requeue: time.Second,
			facts: deliveredWorker(func(f *facts) { f.dataSecret = false })},
		{name: "data Secret deleted after the node joined: left alone", kind: actKeep,
			facts: deliveredWorker(func(f *facts) { f.dataSecret, f.machineJoined = false, true })},

		// Delivered data: the status.
		{name: "delivered, its token far from expiry: looked at at the next token check", kind: actKeep, requeue: tokenCheck, facts: deliveredWorker()},
		{name: "delivered, condition not True yet: it turns True", kind: actKeep, reason: cabpiv1.DataSecretAvailableReason, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) {
				f.dataSecretAvailableTrue, f.dataSecretAvailableReason = false, cabpiv1.WaitingForClusterCAReason
			}),
			check: func(t *testing.T, a action) { assert.True(t, a.delivered.available) }},
		{name: "delivered kubeadm init: no token to look after", kind: actKeep,
			facts: deliveredWorker(func(f *facts) {
				f.role, f.controlPlane, f.tokenID, f.token = ignition.RoleControlPlaneJoin, true, "", tokenState{}
			}),
			check: func(t *testing.T, a action) { assert.True(t, a.delivered.certificates, "CertificatesAvailable") }},
		{name: "delivered after the Cluster's infrastructure went unprovisioned (a move): kept as is", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.infrastructureProvisioned, f.token = false, tokenState{} })},

		// Delivered data: its inputs.
		{name: "spec changed after provisioning: noted, not rendered", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) {
				f.ownerProvisioningStarted, f.specChangedAfterProvisioning, f.specHash = true, true, "s2"
			}),
			check: func(t *testing.T, a action) {
				assert.True(t, a.delivered.noteSpecChange)
				assert.Equal(t, "s2", a.delivered.recordSpecHash, "a change reported is not reported again")
			}},
		{name: "spec changed after provisioning only where an in-place update changes it: not noted", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) {
				f.ownerProvisioningStarted, f.specChangedAfterProvisioning, f.specHash = true, true, "s1"
			}),
			check: func(t *testing.T, a action) {
				assert.False(t, a.delivered.noteSpecChange)
				assert.Empty(t, a.delivered.recordSpecHash)
			}},
		{name: "spec changed after provisioning, no spec digest recorded: noted, recorded", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) {
				f.ownerProvisioningStarted, f.specChangedAfterProvisioning, f.specHash, f.recordedSpecHash = true, true, "s2", ""
			}),
			check: func(t *testing.T, a action) {
				assert.True(t, a.delivered.noteSpecChange)
				assert.Equal(t, "s2", a.delivered.recordSpecHash)
			}},
		{name: "provisioned, spec observed, no spec digest recorded: the current spec's is recorded", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.ownerProvisioningStarted, f.specHash, f.recordedSpecHash = true, "s2", "" }),
			check: func(t *testing.T, a action) {
				assert.False(t, a.delivered.noteSpecChange)
				assert.Equal(t, "s2", a.delivered.recordSpecHash)
			}},
		{name: "inputs changed before provisioning: rendered again in place", kind: actRerender,
			facts: deliveredWorker(func(f *facts) { f.inputs = inputs("h2") }),
			check: func(t *testing.T, a action) {
				require.NotNil(t, a.rerender)
				assert.Equal(t, "h2", a.rerender.hash)
			}},
		{name: "inputs changed, reading unlabelled references: rendered again, looked at again soon", kind: actRerender, requeue: time.Minute,
			facts: deliveredWorker(func(f *facts) { f.inputs = inputs("h2"); f.inputs.unwatched = true })},
		{name: "inputs unchanged", kind: actKeep, requeue: tokenCheck, facts: deliveredWorker(func(f *facts) { f.inputs = inputs("h1") })},
		{name: "inputs unchanged, reading unlabelled references: looked at every recheck interval", kind: actKeep, requeue: time.Minute,
			facts: deliveredWorker(func(f *facts) { f.inputs = inputs("h1"); f.inputs.unwatched = true })},
		{name: "inputs back to what the data was rendered from: RerenderFailed clears", kind: actKeep, reason: cabpiv1.DataSecretAvailableReason, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.inputs, f.dataSecretAvailableReason = inputs("h1"), cabpiv1.RerenderFailedReason }),
			check: func(t *testing.T, a action) { assert.True(t, a.delivered.available) }},
		{name: "inputs that failed to render before: not rendered again until they change", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.inputs, f.failedHash = inputs("h2"), "h2" })},
		{name: "changed inputs that do not build: the data stays, RerenderFailed says why", kind: actKeep, reason: cabpiv1.RerenderFailedReason, requeue: waitRequeue,
			facts: deliveredWorker(func(f *facts) { f.inputs = &currentInputs{notBuilt: waitingForReference} })},
		{name: "data delivered before digests were recorded: its digest is recorded", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.inputs, f.recordedHash = inputs("h2"), "" }),
			check: func(t *testing.T, a action) { assert.Equal(t, "h2", a.delivered.recordHash) }},
		{name: "data delivered before digests were recorded, inputs do not build: left alone", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.inputs, f.recordedHash = &currentInputs{notBuilt: waitingForReference}, "" }),
			check: func(t *testing.T, a action) { assert.Nil(t, a.delivered.rerenderFailed) }},

		// Delivered data: its join token.
		{name: "node joined: the token is left to expire and forgotten", kind: actKeep,
			facts: deliveredWorker(func(f *facts) { f.machineJoined, f.token = true, tokenState{} }),
			check: func(t *testing.T, a action) { assert.True(t, a.delivered.forgetToken) }},
		{name: "token with more than 5/6 of its TTL left: nothing yet", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.token = tokenExpiring(14 * time.Minute) })},
		{name: "token with less than 5/6 of its TTL left: refreshed", kind: actRefreshToken,
			facts: deliveredWorker(func(f *facts) { f.token = tokenExpiring(10 * time.Minute) }),
			check: func(t *testing.T, a action) { assert.NotNil(t, a.token) }},
		{name: "token gone before the Machine was provisioned: new data with a fresh token", kind: actWorkerJoin,
			facts: deliveredWorker(func(f *facts) { f.token = tokenState{state: tokenGone} })},
		{name: "token gone after the Machine was provisioned: it cannot join", kind: actTokenLost, reason: cabpiv1.JoinTokenLostReason, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.token, f.ownerProvisioningStarted = tokenState{state: tokenGone}, true })},
		{name: "a pool's token with more than half its TTL left: nothing yet", kind: actKeep, requeue: tokenCheck,
			facts: deliveredWorker(func(f *facts) { f.machinePool, f.token = true, tokenExpiring(10*time.Minute) })},
		{name: "a pool's token with less than half its TTL left: rotated while it still joins", kind: actRotatePoolToken,
			facts: deliveredWorker(func(f *facts) { f.machinePool, f.token = true, tokenExpiring(7*time.Minute) }),
			check: func(t *testing.T, a action) { assert.True(t, a.currentTokenUsable) }},
		{name: "a pool's token expired: rotated, the current data joins nothing", kind: actRotatePoolToken,
			facts: deliveredWorker(func(f *facts) { f.machinePool, f.token = true, tokenExpiring(-time.Minute) }),
			check: func(t *testing.T, a action) { assert.False(t, a.currentTokenUsable) }},
		{name: "a pool's token gone: rotated", kind: actRotatePoolToken,
			facts: deliveredWorker(func(f *facts) {
				f.machinePool, f.ownerProvisioningStarted, f.token = true, true, tokenState{state: tokenGone}
			}),
			check: func(t *testing.T, a action) { assert.False(t, a.currentTokenUsable) }},
		{name: "changed inputs that do not build, and a token due: refreshed, RerenderFailed says why", kind: actRefreshToken, reason: cabpiv1.RerenderFailedReason,
			facts: deliveredWorker(func(f *facts) {
				f.inputs, f.token = &currentInputs{notBuilt: waitingForReference}, tokenExpiring(10*time.Minute)
			})},
	}
}

func TestDecide(t *testing.T) {
	for _, row := range decideRows() {
		t.Run(row.name, func(t *testing.T) {
			a := decide(row.facts, testPolicy)
			assert.Equal(t, row.kind.String(), a.kind.String(), "action")
			assert.Equal(t, row.requeue, a.requeue, "requeue")
			assert.Equal(t, row.reason, reasonOf(a), "DataSecretAvailable's reason")
			if row.check != nil {
				row.check(t, a)
			}
		})
	}
}

// reasonOf is the DataSecretAvailable reason a's outcome sets without carrying anything out
// ("" when it leaves the condition, or when the execution decides it).
func reasonOf(a action) string {
	o := outcome{}
	switch a.kind {
	case actWait, actForgetDataSecret:
		o = waiting(a.reason, a.message, a.requeue)
	case actFail, actTokenLost:
		o = failed(a.reason, a.message, a.requeue)
	}
	o = deliveredOutcome(o, a.delivered, nil, "Machine", "w0")
	if o.dataSecretAvailable == nil {
		return ""
	}
	return o.dataSecretAvailable.Reason
}

type outcomeRow struct {
	name      string
	outcome   outcome
	reason    string // DataSecretAvailable's ("" leaves it)
	certs     string // CertificatesAvailable's ("" leaves it)
	requeue   time.Duration
	events    []string // reasons of the events
	retried   bool     // an error, retried with backoff
	condition metav1.ConditionStatus
}

func machineScope(version string, endpoint bool) *scope {
	c := &clusterv1.Cluster{}
	if endpoint {
		c.Spec.ControlPlaneEndpoint = clusterv1.APIEndpoint{Host: "10.0.0.1", Port: 6443}
	}
	m := &clusterv1.Machine{}
	m.Spec.Version = version
	return &scope{config: &cabpiv1.IgnitionConfig{}, cluster: c, configOwner: configOwner{machine: m}}
}

// unownedScope is a Machine's scope that found an ownerless data Secret the status does not
// record.
func unownedScope() *scope {
	s := machineScope("v1.34.4", true)
	s.dataSecret, s.dataSecretUnowned = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "w0"}}, true
	return s
}

func caCertificate(pem string) *secret.Certificate {
	return &secret.Certificate{Purpose: secret.ClusterCA, KeyPair: &certs.KeyPair{Cert: []byte(pem), Key: []byte("k")}}
}

func renderError(kind ignition.ErrorKind, part ignition.Part) *ignition.Error {
	return &ignition.Error{Kind: kind, Place: ignition.At(part)}
}

func outcomeRows(t *testing.T) []outcomeRow {
	// What building the input waits for, or what is wrong with it.
	notBuilt := func(why *notStored) outcome { return notStoredOutcome(why) }
	certsCondition, certsWhy, _ := certificatesStatus("c1", secret.Certificates{caCertificate("not PEM")}, nil)
	certsFound, _, _ := certificatesStatus("c1", secret.Certificates{}, nil)
	missingCerts, missingWhy, _ := certificatesStatus("c1", secret.NewCertificatesForWorker(""), nil)
	unusableCerts, _, unusableErr := certificatesStatus("c1", nil, errors.New("forbidden"))
	withCerts := func(o outcome, c *metav1.Condition) outcome { o.certificatesAvailable = c; return o }
	require.Error(t, unusableErr)

	bigOutput := ignition.Output{Size: ignition.SizeReport{Bytes: 70000, Limit: 65535}}
	warned := ignition.Output{Warnings: []ignition.Warning{{Place: ignition.At(ignition.PartButane), Message: "unused key foo"}}}
	storedRow := func(out ignition.Output) outcome {
		return storedOutcome(storedData{secretName: "w0", inputsHash: "h"}, out, cabpiv1.PlatformAzure, tokenCheck)
	}
	rerenderNotStored := func(why *notStored, before *metav1.Condition) outcome {
		return deliveredOutcome(outcome{requeue: why.requeue}, deliveredNotes{rerenderFailed: why}, before, "Machine", "w0")
	}
	shown := rerenderFailedCondition(waitingForReference)

	return []outcomeRow{
		{name: "another control-plane Machine holds the init lock", outcome: waitingForInitLock(),
			reason: cabpiv1.WaitingForInitLockReason, requeue: waitRequeue},
		{name: "no Kubernetes version", outcome: notBuilt(clusterWait(machineScope("", true), configinput.Needs{})),
			reason: cabpiv1.WaitingForKubernetesVersionReason, requeue: waitRequeue},
		{name: "no control-plane endpoint for a role that needs one", outcome: notBuilt(clusterWait(machineScope("v1.34.4", false), configinput.Needs{Endpoint: true})),
			reason: cabpiv1.WaitingForControlPlaneEndpointReason, requeue: waitRequeue},
		{name: "no cluster CA yet", outcome: notBuilt(caStatus("c1", &secret.Certificate{Purpose: secret.ClusterCA})),
			reason: cabpiv1.WaitingForClusterCAReason, requeue: waitRequeue},
		{name: "a cluster CA that is not PEM", outcome: withCerts(notBuilt(caStatus("c1", caCertificate("not PEM"))), certsCondition),
			reason: cabpiv1.InvalidClusterCertificateReason, certs: cabpiv1.InvalidClusterCertificateReason, requeue: renderErrorRetry,
			events: []string{cabpiv1.InvalidClusterCertificateReason}},
		{name: "a certificate that is not PEM", outcome: withCerts(notBuilt(certsWhy), certsCondition),
			reason: cabpiv1.InvalidClusterCertificateReason, certs: cabpiv1.InvalidClusterCertificateReason, requeue: renderErrorRetry,
			events: []string{cabpiv1.InvalidClusterCertificateReason}},
		{name: "cluster certificates missing", outcome: withCerts(notBuilt(missingWhy), missingCerts),
			reason: cabpiv1.WaitingForClusterCAReason, certs: cabpiv1.CertificatesNotFoundReason, requeue: waitRequeue},
		{name: "cluster certificates unreadable", outcome: withCerts(retrying(cabpiv1.DataSecretInternalErrorReason, unusableErr), unusableCerts),
			reason: cabpiv1.DataSecretInternalErrorReason, certs: cabpiv1.CertificatesInternalErrorReason, retried: true},
		{name: "cluster certificates found", outcome: outcome{certificatesAvailable: certsFound}, certs: cabpiv1.CertificatesAvailableReason},
		{name: "infrastructure machine not there yet", outcome: notBuilt(waitingForInfrastructureMachine("AWSMachine m0")),
			reason: cabpiv1.WaitingForInfrastructureMachineReason, requeue: waitRequeue},
		{name: "a referenced Secret missing", outcome: notBuilt(buildFailure(&configinput.MissingReferenceError{Field: configinput.RefField{Part: ignition.PartFile}, Kind: "Secret", Name: "s"})),
			reason: cabpiv1.ReferenceNotFoundReason, requeue: waitRequeue, events: []string{cabpiv1.ReferenceNotFoundReason}},
		{name: "an infrastructure machine that cannot deliver the data", outcome: notBuilt(buildFailure(&configinput.DeliveryError{})),
			reason: cabpiv1.IncompatibleInfrastructureReason, requeue: renderErrorRetry, events: []string{cabpiv1.IncompatibleInfrastructureReason}},

		// What rendering says.
		{name: "invalid Butane", outcome: notBuilt(renderFailure(renderError(ignition.ErrInvalidButane, ignition.PartButane))),
			reason: cabpiv1.InvalidButaneReason, requeue: renderErrorRetry, events: []string{cabpiv1.InvalidButaneReason}},
		{name: "Butane of the other variant", outcome: notBuilt(renderFailure(renderError(ignition.ErrVariantMismatch, ignition.PartButane))),
			reason: cabpiv1.InvalidButaneReason, requeue: renderErrorRetry, events: []string{cabpiv1.InvalidButaneReason}},
		{name: "invalid Container Linux Config", outcome: notBuilt(renderFailure(renderError(ignition.ErrInvalidContainerLinuxConfig, ignition.PartContainerLinuxConfig))),
			reason: cabpiv1.InvalidContainerLinuxConfigReason, requeue: renderErrorRetry, events: []string{cabpiv1.InvalidContainerLinuxConfigReason}},
		{name: "a Container Linux Config for Fedora CoreOS", outcome: notBuilt(renderFailure(renderError(ignition.ErrVariantMismatch, ignition.PartContainerLinuxConfig))),
			reason: cabpiv1.InvalidContainerLinuxConfigReason, requeue: renderErrorRetry, events: []string{cabpiv1.InvalidContainerLinuxConfigReason}},
		{name: "a path cabpi owns", outcome: notBuilt(renderFailure(renderError(ignition.ErrOwnedPathConflict, ignition.PartContainerLinuxConfig))),
			reason: cabpiv1.OwnedPathConflictReason, requeue: renderErrorRetry, events: []string{cabpiv1.OwnedPathConflictReason}},
		{name: "a Kubernetes version cabpi cannot render", outcome: notBuilt(renderFailure(renderError(ignition.ErrUnsupportedKubernetesVersion, ignition.PartWhole))),
			reason: cabpiv1.UnsupportedKubernetesVersionReason, requeue: renderErrorRetry, events: []string{cabpiv1.UnsupportedKubernetesVersionReason}},
		{name: "an Ignition version cabpi cannot emit", outcome: notBuilt(renderFailure(renderError(ignition.ErrUnsupportedIgnitionVersion, ignition.PartIgnitionVersion))),
			reason: cabpiv1.UnsupportedIgnitionVersionReason, requeue: renderErrorRetry, events: []string{cabpiv1.UnsupportedIgnitionVersionReason}},
		{name: "a download with no digest known", outcome: notBuilt(renderFailure(renderError(ignition.ErrKubernetesDigestUnknown, ignition.PartKubernetes))),
			reason: cabpiv1.KubernetesDigestUnknownReason, requeue: renderErrorRetry, events: []string{cabpiv1.KubernetesDigestUnknownReason}},
		{name: "any other input error", outcome: notBuilt(renderFailure(renderError(ignition.ErrInvalidInput, ignition.PartContainerLinuxConfig))),
			reason: cabpiv1.InvalidConfigReason, requeue: renderErrorRetry, events: []string{cabpiv1.InvalidConfigReason}},
		{name: "data too large for a Secret", outcome: notBuilt(tooLarge("1 MiB")),
			reason: cabpiv1.DataTooLargeReason, requeue: renderErrorRetry, events: []string{cabpiv1.DataTooLargeReason}},
		{name: "the workload cluster unreachable for the join token", outcome: notBuilt(workloadUnreachable(errors.New("connection refused"))),
			reason: cabpiv1.BootstrapTokenFailedReason, requeue: waitRequeue},
		{name: "the join token not created", outcome: retrying(cabpiv1.BootstrapTokenFailedReason, errors.New("forbidden")),
			reason: cabpiv1.BootstrapTokenFailedReason, retried: true},
		{name: "the data Secret not written", outcome: retrying(cabpiv1.DataSecretInternalErrorReason, errors.New("forbidden")),
			reason: cabpiv1.DataSecretInternalErrorReason, retried: true},

		// Stored.
		{name: "stored", outcome: storedRow(ignition.Output{}), reason: cabpiv1.DataSecretAvailableReason, requeue: tokenCheck, condition: metav1.ConditionTrue},
		{name: "stored over an ownerless Secret the status did not record", outcome: replacedUnowned(unownedScope(), storedRow(ignition.Output{})),
			reason: cabpiv1.DataSecretAvailableReason, requeue: tokenCheck, condition: metav1.ConditionTrue,
			events: []string{cabpiv1.DataSecretReplacedEventReason}},
		{name: "not stored over an ownerless Secret: no event of it", outcome: replacedUnowned(unownedScope(), waitingForInitLock()),
			reason: cabpiv1.WaitingForInitLockReason, requeue: waitRequeue},
		{name: "stored, over the platform's limit", outcome: storedRow(bigOutput), reason: cabpiv1.OverPlatformLimitReason, requeue: tokenCheck,
			events: []string{cabpiv1.OverPlatformLimitReason}, condition: metav1.ConditionTrue},
		{name: "stored, with warnings", outcome: storedRow(warned), reason: cabpiv1.RenderedWithWarningsReason, requeue: tokenCheck,
			events: []string{cabpiv1.RenderedWithWarningsReason}, condition: metav1.ConditionTrue},

		// Delivered data.
		{name: "changed inputs not rendered: the data stays", outcome: rerenderNotStored(waitingForReference, nil),
			reason: cabpiv1.RerenderFailedReason, requeue: waitRequeue, events: []string{cabpiv1.RerenderFailedReason}, condition: metav1.ConditionTrue},
		{name: "changed inputs not rendered, said before: no second event", outcome: rerenderNotStored(waitingForReference, shown),
			reason: cabpiv1.RerenderFailedReason, requeue: waitRequeue, condition: metav1.ConditionTrue},
		{name: "rendered again in place", outcome: outcome{events: []event{rerendered("Machine", "w0")}}, events: []string{cabpiv1.RerenderedEventReason}},
		{name: "a spec change after provisioning", outcome: deliveredOutcome(outcome{}, deliveredNotes{noteSpecChange: true}, nil, "Machine", "w0"),
			events: []string{cabpiv1.NotRerenderedEventReason}},
		{name: "a control-plane Machine's data delivered", outcome: deliveredOutcome(outcome{}, deliveredNotes{certificates: true}, nil, "Machine", "w0"),
			certs: cabpiv1.CertificatesAvailableReason},

		// A MachinePool's token rotation that stored nothing.
		{name: "rotation failed, the current token still joins: the data stays", outcome: rotationFailed(true, waitingForReference, nil, "", tokenCheck),
			requeue: waitRequeue, events: []string{cabpiv1.ReferenceNotFoundReason}},
		{name: "rotation failed, the current token expired: the data joins nothing", outcome: rotationFailed(false, waitingForReference, nil, "", tokenCheck),
			reason: cabpiv1.ReferenceNotFoundReason, requeue: waitRequeue, events: []string{cabpiv1.ReferenceNotFoundReason}},
		{name: "rotation failed to write, the current token expired", outcome: rotationFailed(false, nil, errors.New("forbidden"), cabpiv1.DataSecretInternalErrorReason, tokenCheck),
			reason: cabpiv1.DataSecretInternalErrorReason, retried: true},
		{name: "rotation failed to write, the current token still joins: retried, condition kept", outcome: rotationFailed(true, nil, errors.New("forbidden"), cabpiv1.DataSecretInternalErrorReason, tokenCheck),
			retried: true},
	}
}

func TestOutcomes(t *testing.T) {
	for _, row := range outcomeRows(t) {
		t.Run(row.name, func(t *testing.T) {
			o := row.outcome
			assert.Equal(t, row.reason, conditionReason(o.dataSecretAvailable), "DataSecretAvailable's reason")
			if row.condition != "" {
				assert.Equal(t, row.condition, o.dataSecretAvailable.Status)
			}
			assert.Equal(t, row.certs, conditionReason(o.certificatesAvailable), "CertificatesAvailable's reason")
			assert.Equal(t, row.requeue, o.requeue, "requeue")
			assert.Equal(t, row.retried, o.err != nil, "retried with backoff: %v", o.err)
			var events []string
			for _, e := range o.events {
				events = append(events, e.reason)
			}
			assert.Equal(t, row.events, events, "events")
		})
	}
}

func conditionReason(c *metav1.Condition) string {
	if c == nil {
		return ""
	}
	return c.Reason
}

// Ready summarises the two conditions.
func readyRows() []struct {
	name   string
	status metav1.ConditionStatus
	reason string
} {
	return []struct {
		name   string
		status metav1.ConditionStatus
		reason string
	}{
		{"data available", metav1.ConditionTrue, cabpiv1.ReadyReason},
		{"data not available", metav1.ConditionFalse, cabpiv1.NotReadyReason},
		{"data unknown", metav1.ConditionUnknown, cabpiv1.ReadyUnknownReason},
	}
}

func TestReady(t *testing.T) {
	for _, row := range readyRows() {
		t.Run(row.name, func(t *testing.T) {
			config := &cabpiv1.IgnitionConfig{}
			conditions.Set(config, metav1.Condition{Type: cabpiv1.DataSecretAvailableCondition, Status: row.status, Reason: "Some"})
			require.NoError(t, setReady(config))
			assert.Equal(t, row.reason, conditions.GetReason(config, cabpiv1.ReadyCondition))
		})
	}
}

// Every condition and event reason the API declares is reached by a row of the tables above:
// a reason no row leads to is either dead or a rule without a test.
func TestEveryReasonHasARow(t *testing.T) {
	covered := map[string]bool{}
	for _, row := range decideRows() {
		covered[row.reason] = true
	}
	for _, row := range outcomeRows(t) {
		covered[row.reason], covered[row.certs] = true, true
		for _, e := range row.events {
			covered[e] = true
		}
	}
	for _, row := range readyRows() {
		covered[row.reason] = true
	}
	kinds := map[string]bool{}
	for _, row := range decideRows() {
		kinds[row.kind.String()] = true
	}

	declared := declaredReasons(t)
	require.NotEmpty(t, declared)
	for name, value := range declared {
		assert.True(t, covered[value], "no row leads to %s (%q)", name, value)
	}
	for kind := range actionNames {
		assert.True(t, kinds[kind.String()], "no row decides %s", kind)
	}
}

// declaredReasons are the constants named *Reason in apis/v1alpha1/conditions.go, by name.
func declaredReasons(t *testing.T) map[string]string {
	file, err := parser.ParseFile(token.NewFileSet(), "../apis/v1alpha1/conditions.go", nil, 0)
	require.NoError(t, err)
	reasons := map[string]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			if !strings.HasSuffix(name.Name, "Reason") || i >= len(spec.Values) {
				continue
			}
			if lit, ok := spec.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
				value, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				reasons[name.Name] = value
			}
		}
		return true
	})
	return reasons
}

// A render with three problems: the condition's reason is the first one's, and its message
// names the first and counts the rest (admission lists them all).
func TestRenderFailureNamesTheFirstProblemAndCountsTheRest(t *testing.T) {
	report := &ignition.Report{Errors: []*ignition.Error{
		{Kind: ignition.ErrOwnedPathConflict, Place: ignition.At(ignition.PartButane), Message: "/etc/kubeadm.yml is cabpi's"},
		{Kind: ignition.ErrInvalidButane, Place: ignition.At(ignition.PartButane), Message: "bad key"},
		{Kind: ignition.ErrInvalidInput, Place: ignition.At(ignition.PartWhole), Message: "bad field"},
	}}
	why := renderFailure(report)
	assert.Equal(t, cabpiv1.OwnedPathConflictReason, why.reason)
	assert.Contains(t, why.message, "/etc/kubeadm.yml is cabpi's")
	assert.Contains(t, why.message, "and 2 more problems")
	assert.NotContains(t, why.message, "bad key")
}
