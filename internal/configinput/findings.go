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

package configinput

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
)

// MaxListedFindings bounds the findings one answer lists (an admission response, `cabpi
// render`'s error); the rest are counted in one more ("and N more problems"), so a config with
// hundreds of bad files gets a readable answer.
const MaxListedFindings = 20

// FieldErrors is every finding of a render's error (ignition.Findings) as a field error at its
// field path below root (spec, or spec.template.spec), in the render's order; nil when err
// carries none (not the input's: a bug, or the caller's own).
func FieldErrors(err error, root *field.Path) field.ErrorList {
	findings := ignition.Findings(err)
	if len(findings) == 0 {
		return nil
	}
	errs := make(field.ErrorList, 0, len(findings))
	for _, f := range findings {
		errs = append(errs, FieldError(f, root))
	}
	return errs
}

// FieldError is one finding as a field error at its field path below root. The value is the
// renderer's Value, which it sets only where the value cannot be secret: a document, a kubeadm
// section, a file's content, a command or a URL with credentials may carry them.
func FieldError(f *ignition.Error, root *field.Path) *field.Error {
	var value any = field.OmitValueType{}
	if f.Value != nil {
		value = f.Value
	}
	return field.Invalid(f.Place.FieldPath(root), value, f.Detail())
}

// CapFieldErrors lists the first MaxListedFindings errors and counts the rest in one more, on
// root (the spec as a whole).
func CapFieldErrors(errs field.ErrorList, root *field.Path) field.ErrorList {
	if len(errs) <= MaxListedFindings {
		return errs
	}
	more := len(errs) - MaxListedFindings
	noun := "problems"
	if more == 1 {
		noun = "problem"
	}
	return append(errs[:MaxListedFindings:MaxListedFindings],
		field.Invalid(root, field.OmitValueType{}, fmt.Sprintf("and %d more %s, not listed", more, noun)))
}
