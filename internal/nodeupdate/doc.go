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

// Package nodeupdate is the node side of an in-place Kubernetes update (docs/adr/043): one
// typed state machine that moves a node's kubeadm and kubelet to another version of the same
// source (sysext or binaries) and either finishes or rolls back, whatever happens to the node.
//
// The steps, one file each: fetch (download and verify against the SHA-256 the update pins, before
// anything changes), backup (what the swap and kubeadm change, and the boot units that finish an
// interrupted update), swap (the new image or binaries in place, sysupdate's transfer file for
// the new minor and mirror), kubeadm (`kubeadm upgrade node`), restart (the kubelet), health
// (its health endpoint), confirm (kubeadm and the kubelet are the version), and clear; rollback
// restores the backup and brings the kubelet up on it. A journal in the state directory records
// each step before and after it; every file and directory a step changes is synced before the
// journal moves on, and the backup is removed only after the journal says the update is over.
//
// Who runs it: `cabpi update-node`'s Pod copies the cabpi binary it runs into the state
// directory and starts it on the host as the transient unit Unit (`cabpi update-node apply`);
// at boot, ResumeUnit (ordered before the kubelet) takes an interrupted update's file steps to
// their end, and FinishUnit (after the kubelet) its kubelet steps. SIGTERM pauses an update: the
// journal stays, and the next run (or boot) goes on from it.
//
// The protocol between the Job's Pod and the node (protocol.go) lives here, below both.
package nodeupdate
