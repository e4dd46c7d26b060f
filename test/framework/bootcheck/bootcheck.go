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

// Package bootcheck checks, without root and without booting, what a rendered Ignition config
// leaves on a node, once the real ignition-apply has applied it (ignitionapply.Apply):
//
//   - its units, as the host's real systemd reads them: ReadUnit (systemd-analyze cat-config finds
//     the unit file and its drop-ins, go-systemd's unit parser reads each), Verify (systemd-analyze
//     verify loads them and resolves their dependencies), Enabled (systemctl --root applies the
//     presets);
//   - its bootstrap script, /etc/kubeadm.sh, on the real bash with a stub kubeadm: RunScript.
//
// Booting a node (systemd as PID 1 starting kubeadm.service, the real kubeadm and kubelet) is the
// real-node suite's alone (test/e2e; docs/adr/029-one-way-to-boot-a-node.md says which proof
// lives where).
package bootcheck
