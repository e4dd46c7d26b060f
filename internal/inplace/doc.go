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

// Package inplace is cabpi's in-place update extension (Cluster API's Runtime SDK hooks
// CanUpdateMachineSet and UpdateMachine, behind Cluster API's InPlaceUpdates
// feature gate): it takes a change of a Machine's Kubernetes version, and of its source's
// baseURL, for nodes whose IgnitionConfig installs Kubernetes from a system extension or the
// release binaries, and moves the running node to the new version without replacing it
// (docs/adr/035, 038). Everything else it declines, and Cluster API rolls it out by replacement.
//
// fields.go is the one rule of what an in-place update changes (accept: the mirror of a source
// updated in place; admission, the controller's spec hash and the hooks' patches derive from
// it); decide.go the pure decision of the CanUpdate hooks; handlers.go the hooks; gather.go what
// UpdateMachine acts on, read from the management cluster, and what it refuses; updatedecide.go
// the pure decision of one UpdateMachine call; update.go its gathering from the workload cluster
// and its executor; drain.go the drain before a minor upgrade; server.go the Runtime SDK server.
package inplace
