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

package ignition

import (
	"slices"
	"strings"

	"github.com/blang/semver/v4"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// What a first boot that is cut off leaves for the next one to finish (attempt.sh,
// docs/adr/034-interrupted-first-boot.md). The sentinel is in /run and gone after any reboot, so
// whatever a later boot decides from is on the disk.
const (
	// AttemptStateDir holds the marks of a bootstrap attempt and the copy of what Ignition wrote
	// below the directories kubeadm reset empties. It is removed once the bootstrap finished.
	AttemptStateDir = "/var/lib/cabpi-bootstrap"
	// AttemptMarkPath exists from the start of a first attempt (after the copy) until kubeadm
	// succeeded.
	AttemptMarkPath = AttemptStateDir + "/attempt"
	// KubeadmSucceededPath exists from the moment kubeadm exited 0 until the bootstrap finished.
	KubeadmSucceededPath = AttemptStateDir + "/kubeadm-succeeded"
	// AttemptRunningPath, in /run, says a run of the bootstrap is under way on this boot: the
	// kubelet may start.
	AttemptRunningPath = "/run/cabpi-bootstrap/running"
)

// KubeletHoldPath is the drop-in a first attempt writes (attempt.sh) to keep the kubelet from
// starting on a boot that finds the attempt's mark, until kubeadm.service has decided what to do
// with what that attempt left: left to itself, the kubelet would bootstrap from a leftover
// bootstrap-kubelet.conf, register the Node and run the leftover static Pods while kubeadm reset
// removes them under it. Its conditions are triggering ones (|): the kubelet starts when there is
// no attempt mark or once a run of the bootstrap is under way on this boot (kubeadm starts the
// kubelet itself). The script writes it, rather than Ignition, because it matters only once an
// attempt has begun, and it costs the config nothing that way; the kubelet is not ordered after
// kubeadm.service instead, as kubeadm starts and waits for the kubelet from inside that oneshot.
// The path is the provider's: a user's file or snippet is refused there.
const KubeletHoldPath = "/etc/systemd/system/kubelet.service.d/10-cabpi-bootstrap.conf"

// updateAgents are the units of each variant that reboot a node into a staged OS update:
// Zincati on Fedora CoreOS, update-engine (which stages) and locksmithd (which reboots) on
// Flatcar. kubeadm.service is ordered before them (Before=, the same as After=kubeadm.service
// in theirs, at no cost of a drop-in file each): they start only once the bootstrap has ended,
// with the sentinel written or with a failure (the agent may then reboot, and the next boot tries
// again); on later boots kubeadm.service is skipped and they start at once. Ordering needs no
// unit to exist. Their own configuration (strategy, windows, locks) is the user's and left alone.
var updateAgents = map[cabpiv1.Variant][]string{
	cabpiv1.VariantFCOS:    {"zincati.service"},
	cabpiv1.VariantFlatcar: {"update-engine.service", "locksmithd.service"},
}

// resumePhases are what a resumed run of kubeadm skips (the arguments of cabpi_attempt and of
// cabpi_skip_etcd_join), each a comma-separated list of kubeadm phases.
type resumePhases struct {
	// skip are skipped whenever kubeadm is resumed, the user's skipPhases included: with
	// --skip-phases on the command line kubeadm ignores the config's.
	//   - preflight, always: it refuses a node with kubeadm's files on it, which is what
	//     resuming means.
	//   - kubelet-start, for a control-plane join: it refuses to run while a Ready Node of this
	//     name exists, which a registered kubelet makes true, and what it writes is already
	//     there (the etcd member has data only once the kubelet it started ran etcd).
	// Init skips only preflight: every other phase of kubeadm init reuses what it finds (the
	// certificates and kubeconfigs) or writes, creates or updates the same thing again.
	skip string
	// voterSkip are skipped besides when the node's etcd member votes already: kubeadm's etcd
	// join promotes the member it added as a learner, and refuses to promote a voter ("can
	// only promote a learner member"; kubeadm v1.34's MemberPromote tries even when it found the
	// member promoted). The phase that joins etcd is etcd-join from v1.31 with
	// ControlPlaneKubeletLocalMode (on by default from v1.33, locked on from v1.35), and
	// control-plane-join/etcd without it (removed from v1.35): the ones the version has. Empty
	// but for a control-plane join.
	voterSkip string
}

// resumePhasesFor are the phases a resumed run of the role skips at that Kubernetes version.
func resumePhasesFor(role Role, user []string, ver semver.Version) resumePhases {
	phases := []string{"preflight"}
	if role == RoleControlPlaneJoin {
		phases = append(phases, "kubelet-start")
	}
	for _, p := range user {
		if !slices.Contains(phases, p) {
			phases = append(phases, p)
		}
	}
	r := resumePhases{skip: strings.Join(phases, ",")}
	if role == RoleControlPlaneJoin {
		switch {
		case ver.LT(semver.Version{Major: 1, Minor: 31}):
			r.voterSkip = "control-plane-join/etcd"
		case ver.LT(semver.Version{Major: 1, Minor: 35}):
			r.voterSkip = "etcd-join,control-plane-join/etcd"
		default:
			r.voterSkip = "etcd-join"
		}
	}
	return r
}

// userSkipPhases are the phases the user's kubeadm configuration of the role skips.
func userSkipPhases(in *Input) []string {
	if in.Role == RoleInit {
		if in.InitConfiguration != nil {
			return in.InitConfiguration.SkipPhases
		}
		return nil
	}
	if in.JoinConfiguration != nil {
		return in.JoinConfiguration.SkipPhases
	}
	return nil
}
