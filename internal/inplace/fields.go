// Package inplace says which IgnitionConfig spec fields a Cluster API in-place update
// (feature gate InPlaceUpdates) may change: the one place the admission webhook, the
// controller and cabpi's update extension take that answer from, so that what the extension
// accepts to update in place is exactly what admission lets through and what the controller
// does not report.
//
// The extension updates the node's Kubernetes version (the Machine's spec.version, which is
// not in the spec) and, for a config whose spec.kubernetes.source is sysext or binaries, the
// mirror that source downloads from (spec.kubernetes.sysext.baseURL or
// spec.kubernetes.binaries.baseURL). Every other change needs new bootstrap data, which only a
// new Machine boots with: Cluster API rolls it out by replacing the Machine.
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

// ChangedOutsideInPlace returns the paths (under "spec") of the fields in which newSpec
// differs from oldSpec beyond what an in-place update changes; none when an in-place update
// can apply the change. A baseURL change is an in-place update's only when the old and the new
// source are the same and it is that source's (sysext's, or binaries'); everything else is
// reported at its field: the spec's own fields (spec.butane, spec.files, ...), and under
// spec.kubernetes the field within (spec.kubernetes.source, spec.kubernetes.sysext.sysupdate,
// ...). Fields are compared with Kubernetes' semantic equality (nil and empty lists are the
// same); a field added to the spec later is outside in-place updates until it is named here.
func ChangedOutsideInPlace(oldSpec, newSpec cabpiv1.IgnitionConfigSpec) []*field.Path {
	spec := field.NewPath("spec")
	return changedFields(spec, oldSpec, newSpec, map[string]func(*field.Path) []*field.Path{
		"kubernetes": func(p *field.Path) []*field.Path { return kubernetesChanged(p, oldSpec.Kubernetes, newSpec.Kubernetes) },
	})
}

// kubernetesChanged is ChangedOutsideInPlace for spec.kubernetes.
func kubernetesChanged(path *field.Path, oldK, newK cabpiv1.KubernetesSpec) []*field.Path {
	mirrorOf := func(source cabpiv1.KubernetesSource) map[string]func(*field.Path) []*field.Path {
		if oldK.Source != source || newK.Source != source {
			return nil
		}
		return map[string]func(*field.Path) []*field.Path{"baseURL": func(*field.Path) []*field.Path { return nil }}
	}
	return changedFields(path, oldK, newK, map[string]func(*field.Path) []*field.Path{
		"sysext": func(p *field.Path) []*field.Path {
			return changedFields(p, deref(oldK.Sysext), deref(newK.Sysext), mirrorOf(cabpiv1.KubernetesSourceSysext))
		},
		"binaries": func(p *field.Path) []*field.Path {
			return changedFields(p, deref(oldK.Binaries), deref(newK.Binaries), mirrorOf(cabpiv1.KubernetesSourceBinaries))
		},
	})
}

// changedFields compares the fields of two values of one struct type and returns the path of
// each that differs, named by its JSON name; a field in within is compared by its function
// instead (which returns nothing for a field an in-place update may change).
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

// OutsideInPlace is spec less what an in-place update may change: its source's baseURL
// cleared, and an emptied (or empty) sysext or binaries block unset. Two specs have the same
// OutsideInPlace exactly when ChangedOutsideInPlace finds nothing between them (the source is
// part of both, so clearing the baseURL of each one's own source is clearing it where both
// sources are the same).
func OutsideInPlace(spec cabpiv1.IgnitionConfigSpec) cabpiv1.IgnitionConfigSpec {
	out := *spec.DeepCopy()
	k := &out.Kubernetes
	switch {
	case k.Source == cabpiv1.KubernetesSourceSysext && k.Sysext != nil:
		k.Sysext.BaseURL = ""
	case k.Source == cabpiv1.KubernetesSourceBinaries && k.Binaries != nil:
		k.Binaries.BaseURL = ""
	}
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
