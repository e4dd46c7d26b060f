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
	"fmt"
	"net/url"
	"strings"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// StandInDigest pins a download whose digest is in an object that was not read (admission and
// `cabpi render` without --digests do not read spec.kubernetes.digestsFrom): the output is the
// shape and size of the real one; the controller always renders with the digests read.
var StandInDigest = strings.Repeat("0", 64)

// KubernetesDigests are the digests the Kubernetes source's downloads are pinned to, and where
// they come from.
type KubernetesDigests struct {
	// User are the digests of spec.kubernetes.digestsFrom, nil when it is not set.
	User nodelayout.Digests
	// StandIn says spec.kubernetes.digestsFrom was not read: a download with no digest known is
	// pinned to StandInDigest rather than refused.
	StandIn bool
}

// KubernetesPins is the one rule of what a node downloads to run Kubernetes and what it checks
// it against (docs/adr/046), for first boot (the renderer's verification.hash) and the in-place
// update (nodeupdate.Update.Digests) alike. Each download of the source at version is pinned to
// the user's digest, else cabpi's catalogue's. A download the node runs with neither is refused
// (ErrKubernetesDigestUnknown, at spec.kubernetes.digestsFrom, whose message says how to add
// one); an http:// base URL is refused unless every download it serves is pinned, since then the
// transport does not decide what runs. Source image downloads nothing: no pins, no error. The
// errors are *Error, a *Report when there are several; checkKubernetes' rules come first.
func KubernetesPins(k cabpiv1.KubernetesSpec, version string, digests KubernetesDigests) (nodelayout.Digests, error) {
	pins, errs := kubernetesPins(k, version, digests)
	if len(errs) > 0 {
		return nil, &Report{Errors: errs}
	}
	return pins, nil
}

func kubernetesPins(k cabpiv1.KubernetesSpec, version string, digests KubernetesDigests) (nodelayout.Digests, []*Error) {
	var downloads []nodelayout.Download
	var base string
	var baseAt Place
	switch kubernetesSource(k) {
	case cabpiv1.KubernetesSourceSysext:
		l, err := nodelayout.SysextFor(k, version)
		if err != nil {
			return nil, []*Error{errorf(ErrUnsupportedKubernetesVersion, At(PartKubernetesVersion), "%v", err)}
		}
		downloads = l.Downloads(k.Sysext != nil && k.Sysext.Sysupdate)
		base, baseAt = l.BaseURL, At(PartKubernetes, KubernetesSysext, KubernetesBaseURL)
	case cabpiv1.KubernetesSourceBinaries:
		b := nodelayout.BinariesFor(k, version)
		downloads = b.Downloads()
		base, baseAt = b.BaseURL, At(PartKubernetes, KubernetesBinaries, KubernetesBaseURL)
	default:
		return nil, nil
	}
	pins, missing := nodelayout.Pins(downloads, digests.User)
	if digests.StandIn {
		for _, d := range downloads {
			if _, pinned := pins[d.Rel]; !pinned {
				pins[d.Rel] = StandInDigest
			}
		}
		return pins, nil
	}
	var errs []*Error
	if len(missing) > 0 {
		errs = append(errs, errorf(ErrKubernetesDigestUnknown, At(PartKubernetes, KubernetesDigestsFrom), "%v",
			&nodelayout.UnknownDigestsError{Version: version, Missing: missing}))
	}
	if u, err := url.Parse(base); err == nil && u.Scheme == "http" {
		var unpinned []string
		for _, d := range downloads {
			if _, pinned := pins[d.Rel]; !pinned && !d.Runs {
				unpinned = append(unpinned, d.Rel)
			}
		}
		if len(unpinned) > 0 {
			errs = append(errs, errorf(ErrInvalidInput, baseAt,
				"an http:// base URL is accepted only when every download it serves is pinned, and %s %s no digest: "+
					"list %s in spec.kubernetes.digestsFrom, or use https://", strings.Join(unpinned, ", "), haveOrHas(len(unpinned)), themOrIt(len(unpinned))))
		}
	}
	return pins, errs
}

func haveOrHas(n int) string {
	if n == 1 {
		return "has"
	}
	return "have"
}

func themOrIt(n int) string {
	if n == 1 {
		return "it"
	}
	return "them"
}

// verificationHash is Ignition's verification.hash of a SHA-256 digest.
func verificationHash(sum string) string { return fmt.Sprintf("sha256-%s", sum) }
