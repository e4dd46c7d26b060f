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
