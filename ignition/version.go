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

	"github.com/blang/semver/v4"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// variantSpec is what a variant's Ignition can read: floor is the lowest spec version the
// provider emits for it (the oldest OS releases still supported read it), allowed the stable
// versions a user may pin, ascending.
type variantSpec struct {
	floor   string
	allowed []string
}

// variantSpecs: Flatcar reads Ignition 3.x from 3.3.0 (Butane's flatcar 1.0.0) and, in stable
// releases, up to 3.4.0. Fedora CoreOS reads every stable 3.x spec up to 3.6.0 (Butane's fcos
// 1.7.0). Experimental specs are never emitted.
var variantSpecs = map[cabpiv1.Variant]variantSpec{
	cabpiv1.VariantFlatcar: {floor: "3.3.0", allowed: []string{"3.3.0", "3.4.0"}},
	cabpiv1.VariantFCOS:    {floor: "3.0.0", allowed: []string{"3.0.0", "3.1.0", "3.2.0", "3.3.0", "3.4.0", "3.5.0", "3.6.0"}},
}

// AllowedIgnitionVersions returns the Ignition spec versions the provider can emit for the
// variant, ascending; nil for an unknown variant. The slice is the caller's to keep.
func AllowedIgnitionVersions(variant cabpiv1.Variant) []string {
	spec, ok := variantSpecs[variant]
	if !ok {
		return nil
	}
	return slices.Clone(spec.allowed)
}

// ValidateIgnitionVersion reports whether version may be pinned for the variant; the empty
// version (no pin) is always valid. The error is an *Error with Kind
// ErrUnsupportedIgnitionVersion at PartIgnitionVersion (ErrInvalidInput at PartVariant for an
// unknown variant).
func ValidateIgnitionVersion(variant cabpiv1.Variant, version string) error {
	return asError(validateIgnitionVersion(variant, version))
}

func validateIgnitionVersion(variant cabpiv1.Variant, version string) *Error {
	spec, err := specFor(variant)
	if err != nil {
		return err
	}
	if version == "" || slices.Contains(spec.allowed, version) {
		return nil
	}
	return errorf(ErrUnsupportedIgnitionVersion, At(PartIgnitionVersion),
		"Ignition version %q is not supported for %s; supported: %v", version, variant, spec.allowed)
}

func specFor(variant cabpiv1.Variant) (variantSpec, *Error) {
	spec, ok := variantSpecs[variant]
	if !ok {
		return variantSpec{}, errorf(ErrInvalidInput, At(PartVariant),
			"unknown variant %q; supported: %s, %s", variant, cabpiv1.VariantFlatcar, cabpiv1.VariantFCOS)
	}
	return spec, nil
}

// targetIgnitionVersion picks the spec version of the output: the highest of the variant's
// floor, the base config's own version and what the snippet emits, or the pinned version, which
// must be at least the base's and what the snippet emits (a config cannot be translated down).
// emitted is empty without a snippet.
func targetIgnitionVersion(variant cabpiv1.Variant, base, emitted, pinned string) (string, *Error) {
	spec, ierr := specFor(variant)
	if ierr != nil {
		return "", ierr
	}
	if ierr := validateIgnitionVersion(variant, pinned); ierr != nil {
		return "", ierr
	}
	target := spec.floor
	for _, v := range []string{base, emitted} {
		if v != "" && mustVersion(v).GT(mustVersion(target)) {
			target = v
		}
	}
	if pinned == "" {
		return target, nil
	}
	if mustVersion(pinned).LT(mustVersion(base)) {
		return "", errorf(ErrUnsupportedIgnitionVersion, At(PartIgnitionVersion),
			"pinned Ignition version %s is lower than %s, the first whose verification.hash takes the SHA-256 the Kubernetes downloads are pinned to", pinned, base)
	}
	if emitted != "" && mustVersion(pinned).LT(mustVersion(emitted)) {
		return "", errorf(ErrUnsupportedIgnitionVersion, At(PartIgnitionVersion),
			"pinned Ignition version %s is lower than %s, which the Butane snippet needs", pinned, emitted)
	}
	return pinned, nil
}

// mustVersion parses a version taken from the tables above or checked against them.
func mustVersion(v string) semver.Version {
	return semver.MustParse(v)
}
