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

package clc

import (
	"fmt"
	"reflect"
	"slices"

	v3types "github.com/coreos/ignition/v2/config/v3_3/types"
	v2types "github.com/flatcar/ignition/config/v2_3/types"
	"k8s.io/utils/ptr"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/optional"
)

// systemd translates units. The deprecated enable is enabled (both only ever enabled). Entries
// naming one unit (the transpiler's docker: section and the user's docker.service, say) are
// one 3.x unit, as Ignition 2 applied both.
func (t *v2to3) systemd(in v2types.Config, out *v3types.Config) *Error {
	var order []string
	units := map[string]v3types.Unit{}
	for _, u := range in.Systemd.Units {
		r := t.ref(listUnits, u.Name)
		if u.Enable && u.Enabled != nil && !*u.Enabled {
			// Ignition 2 wrote an enable and then a disable line for it; systemd takes the first.
			return t.fail(r, []any{"enabled"}, "unit %s sets both enable: true and enabled: false: keep one", u.Name)
		}
		u3 := v3types.Unit{Name: u.Name, Contents: optional.String(u.Contents), Mask: optional.True(u.Mask), Enabled: optional.Copy(u.Enabled)}
		if u.Enable {
			u3.Enabled = ptr.To(true)
		}
		for _, d := range u.Dropins {
			// Ignition 2 skipped a drop-in without contents, as 3.x does one without.
			u3.Dropins = append(u3.Dropins, v3types.Dropin{Name: d.Name, Contents: optional.String(d.Contents)})
		}
		existing, dup := units[u.Name]
		if !dup {
			units[u.Name] = u3
			order = append(order, u.Name)
			continue
		}
		merged, problem := mergeUnits(existing, u3)
		if problem != "" {
			return t.fail(r, nil, "unit %s is defined again and %s: Ignition 3 takes one entry per unit; merge the two", u.Name, problem)
		}
		units[u.Name] = merged
	}
	for _, name := range order {
		out.Systemd.Units = append(out.Systemd.Units, units[name])
	}
	return nil
}

// mergeUnits is the 3.x unit doing what Ignition 2 did applying a and then b, or what makes
// that impossible: both writing different contents or drop-ins of one name, or one enabling and
// the other disabling the unit.
func mergeUnits(a, b v3types.Unit) (v3types.Unit, string) {
	if a.Contents != nil && b.Contents != nil && *a.Contents != *b.Contents {
		return a, "both entries set different contents"
	}
	if b.Contents != nil {
		a.Contents = b.Contents
	}
	if a.Enabled != nil && b.Enabled != nil && *a.Enabled != *b.Enabled {
		return a, "one entry enables it, the other disables it"
	}
	if b.Enabled != nil {
		a.Enabled = b.Enabled
	}
	if b.Mask != nil {
		a.Mask = b.Mask
	}
	a.Dropins = slices.Clone(a.Dropins)
	for _, d := range b.Dropins {
		i := slices.IndexFunc(a.Dropins, func(x v3types.Dropin) bool { return x.Name == d.Name })
		switch {
		case i < 0:
			a.Dropins = append(a.Dropins, d)
		case !reflect.DeepEqual(a.Dropins[i], d):
			return a, fmt.Sprintf("both entries set drop-in %s, differently", d.Name)
		}
	}
	return a, ""
}
