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

// Package optional makes the optional fields of Ignition's types from plain values: Ignition
// says "unset" with nil pointers. The renderer's base config and the Container Linux Config
// translation (ignition/clc) both write them. ptr.To (k8s.io/utils/ptr) makes a pointer to any
// value.
package optional

// String is s, or nil for "": an empty field of the input (or Ignition 2's zero value) is an
// absent one in 3.x, so the OS's default applies.
func String(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// True is b, or nil for false.
func True(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

// Copy is a pointer to a copy of *p, nil for nil: a translation shares nothing with its input.
func Copy[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
