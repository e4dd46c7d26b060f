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

// Package controllers holds the IgnitionConfig reconciler.
//
// One reconcile is one decision and one outcome (reconciler.go, Reconcile):
//
//  1. gather: the config, its Machine or MachinePool owner, the Cluster and the data Secret into
//     a scope (scope.go); from it, this manager's memory (memory.go) and the clock, the facts
//     (gather.go), with the delivered data's current inputs and its join token in the workload
//     cluster when the config's state calls for them. Gathering only reads.
//  2. decide (decide.go): a pure function of the facts returns one action. decide_test.go is the
//     whole contract as a table, with no API server.
//  3. execute (execute.go): the action is carried out, and comes to one outcome. This is where a
//     reconcile writes: the data Secret (secret.go), join tokens (token.go), certificates
//     (certificates.go), the init lock.
//  4. apply (outcome.go): the outcome is written to the status, the events and the result in one
//     place; the status is patched on the way out, in one request (patch.go).
//
// The actions, and the files that carry them out:
//
//	action               when                                              file
//	in-place update      Cluster API updates the Machine in place          execute.go
//	                     (UpdateInProgress annotation): nothing written
//	wait                 Cluster infrastructure, control plane not ready   outcome.go
//	fail                 a Secret of the data Secret's name is not ours    outcome.go
//	init                 first control-plane Machine (init lock)           init.go
//	control-plane join   control plane initialized                         join.go
//	worker join          control plane initialized; or a token lost        join.go
//	                     before provisioning
//	re-render            inputs changed before the owner provisioned       delivered.go
//	refresh token        a Machine's token has under 5/6 of its TTL left   delivered.go
//	rotate pool token    a MachinePool's token under half its TTL, gone    machinepool.go
//	token lost           a provisioned Machine's token is gone             outcome.go
//	adopt                a data Secret the status does not record          delivered.go
//	forget data Secret   the data Secret deleted before the node joined    outcome.go
//	keep                 nothing to write (the status notes of delivered   outcome.go
//	                     data aside)
//
// Building the renderer's input (inputs.go) and rendering it (render.go, the same
// configinput.Build and ignition.Render the webhook and `cabpi render` use) happen inside the
// actions that render; what they wait for or find wrong is a notStored, which each action turns
// into its outcome: DataSecretAvailable False for a first render, True with RerenderFailed for
// delivered data, nothing for a pool whose current token still works.
//
// Changes to referenced Secrets and ConfigMaps reach the configs that read them through a field
// index and label-selected watches (references.go); the watches of Machines, MachinePools and
// Clusters are in watches.go.
package controllers
