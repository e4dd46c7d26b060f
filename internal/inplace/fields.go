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

// Package inplace says which IgnitionConfig spec fields a Cluster API in-place update
// (feature gate InPlaceUpdates) may change: the one place the admission webhook, the
// controller and cabpi's update extension take that answer from, so that what the extension
// accepts to update in place is exactly what admission lets through and what the controller
// does not report.
//
// The extension updates the node's Kubernetes version (the Machine's spec.version, which is
// not in the spec) and, for a config whose spec.kubernetes.source is sysext or binaries, the
// mirror that source downloads from (spec.kubernetes.sysext.baseURL or
// spec.kubernetes.binaries.baseURL) with the digests its downloads are pinned to
// (spec.kubernetes.digestsFrom: a new version or mirror may need a new list). Every other change
// needs new bootstrap data, which only a new Machine boots with: Cluster API rolls it out by
// replacing the Machine.
package inplace

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// The one rule of what an in-place update changes: the mirror of a spec whose source is updated
// in place (sysext or binaries), besides the Machine's version. accept applies it; the changed
// fields (ChangedOutsideInPlace: admission, the CanUpdate hooks), the spec hash (SpecHash: the
// controller) and the hooks' patches (specPatch) all derive from it.

// updatedInPlace: Kubernetes from this source is updated in place (its files come from a mirror
// the node side can fetch again); the image source's Kubernetes is the image.
func updatedInPlace(source cabpiv1.KubernetesSource) bool {
	return source == cabpiv1.KubernetesSourceSysext || source == cabpiv1.KubernetesSourceBinaries
}

// mirror is the base URL the source downloads Kubernetes from, as the spec says it ("" for the
// default, and for a source with no mirror).
func mirror(k cabpiv1.KubernetesSpec) string {
	switch {
	case k.Source == cabpiv1.KubernetesSourceSysext && k.Sysext != nil:
		return k.Sysext.BaseURL
	case k.Source == cabpiv1.KubernetesSourceBinaries && k.Binaries != nil:
		return k.Binaries.BaseURL
	}
	return ""
}

// withMirror is spec with its source's mirror set to url; spec itself is not changed. An empty
// url on an absent block leaves it absent (the default either way).
func withMirror(spec cabpiv1.IgnitionConfigSpec, url string) cabpiv1.IgnitionConfigSpec {
	out := *spec.DeepCopy()
	k := &out.Kubernetes
	switch k.Source {
	case cabpiv1.KubernetesSourceSysext:
		if k.Sysext == nil && url != "" {
			k.Sysext = &cabpiv1.SysextSource{}
		}
		if k.Sysext != nil {
			k.Sysext.BaseURL = url
		}
	case cabpiv1.KubernetesSourceBinaries:
		if k.Binaries == nil && url != "" {
			k.Binaries = &cabpiv1.BinariesSource{}
		}
		if k.Binaries != nil {
			k.Binaries.BaseURL = url
		}
	}
	return out
}

// accept is what an in-place update makes of current on its way to desired: current with
// desired's mirror, when both have the same source and it is updated in place; current as it is
// otherwise. What desired differs in beyond that is rolled out by replacing the Machine.
func accept(current, desired cabpiv1.IgnitionConfigSpec) cabpiv1.IgnitionConfigSpec {
	if current.Kubernetes.Source != desired.Kubernetes.Source || !updatedInPlace(current.Kubernetes.Source) {
		return *current.DeepCopy()
	}
	out := withMirror(current, mirror(desired.Kubernetes))
	out.Kubernetes.DigestsFrom = desired.Kubernetes.DigestsFrom.DeepCopy()
	// An absent block and an empty one say the same; desired's form is taken, so that a patch to
	// out leaves nothing for Cluster API's comparison (of the objects as JSON) to find.
	k, d := &out.Kubernetes, desired.Kubernetes
	if deref(k.Sysext) == deref(d.Sysext) {
		k.Sysext = d.Sysext.DeepCopy()
	}
	if deref(k.Binaries) == deref(d.Binaries) {
		k.Binaries = d.Binaries.DeepCopy()
	}
	return out
}

// ChangedOutsideInPlace returns the paths (under "spec") of the fields in which newSpec differs
// from what an in-place update makes of oldSpec (accept); none when an in-place update can apply
// the change. Each is reported at its field: the spec's own fields (spec.butane, spec.files,
// ...), and under spec.kubernetes the field within (spec.kubernetes.source,
// spec.kubernetes.sysext.sysupdate, ...). Fields are compared with Kubernetes' semantic equality
// (nil and empty lists are the same, so are an absent and an empty source block); a field added
// to the spec later is outside in-place updates unless accept takes it.
func ChangedOutsideInPlace(oldSpec, newSpec cabpiv1.IgnitionConfigSpec) []*field.Path {
	taken := accept(oldSpec, newSpec)
	return changedFields(field.NewPath("spec"), taken, newSpec, map[string]func(*field.Path) []*field.Path{
		"kubernetes": func(p *field.Path) []*field.Path {
			oldK, newK := taken.Kubernetes, newSpec.Kubernetes
			return changedFields(p, oldK, newK, map[string]func(*field.Path) []*field.Path{
				"sysext": func(p *field.Path) []*field.Path {
					return changedFields(p, deref(oldK.Sysext), deref(newK.Sysext), nil)
				},
				"binaries": func(p *field.Path) []*field.Path {
					return changedFields(p, deref(oldK.Binaries), deref(newK.Binaries), nil)
				},
			})
		},
	})
}

// changedFields compares the fields of two values of one struct type and returns the path of
// each that differs, named by its JSON name; a field in within is compared by its function
// instead (to name the fields within it).
func changedFields[T any](path *field.Path, oldV, newV T, within map[string]func(*field.Path) []*field.Path) []*field.Path {
	o, n := reflect.ValueOf(oldV), reflect.ValueOf(newV)
	var changed []*field.Path
	for i := range o.NumField() {
		name := jsonName(o.Type().Field(i))
		p := path.Child(name)
		if compare, ok := within[name]; ok {
			changed = append(changed, compare(p)...)
			continue
		}
		if !equality.Semantic.DeepEqual(o.Field(i).Interface(), n.Field(i).Interface()) {
			changed = append(changed, p)
		}
	}
	return changed
}

// jsonName is the name a struct field has in the API.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" || name == "-" {
		return f.Name
	}
	return name
}

// deref is *p, or T's zero value for nil: an unset sysext or binaries block and an empty one
// say the same (the defaults).
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// OutsideInPlace is spec less what an in-place update may change: accept's rule applied with no
// mirror and no digests, and an emptied (or empty) sysext or binaries block unset. Two specs have the same
// OutsideInPlace exactly when ChangedOutsideInPlace finds nothing between them.
func OutsideInPlace(spec cabpiv1.IgnitionConfigSpec) cabpiv1.IgnitionConfigSpec {
	none := withMirror(spec, "")
	none.Kubernetes.DigestsFrom = nil
	out := accept(spec, none)
	k := &out.Kubernetes
	if k.Sysext != nil && *k.Sysext == (cabpiv1.SysextSource{}) {
		k.Sysext = nil
	}
	if k.Binaries != nil && *k.Binaries == (cabpiv1.BinariesSource{}) {
		k.Binaries = nil
	}
	return out
}

// specHashPrefix names the digest in status.dataSpecHash.
const specHashPrefix = "sha256:"

// SpecHash is the digest of OutsideInPlace(spec), for status.dataSpecHash: SHA-256 of its JSON
// encoding (struct fields in declaration order, map keys sorted). Two specs have the same
// SpecHash when an in-place update can take one to the other.
func SpecHash(spec cabpiv1.IgnitionConfigSpec) (string, error) {
	data, err := json.Marshal(OutsideInPlace(spec))
	if err != nil {
		return "", fmt.Errorf("encoding the spec: %w", err)
	}
	sum := sha256.Sum256(data)
	return specHashPrefix + hex.EncodeToString(sum[:]), nil
}
