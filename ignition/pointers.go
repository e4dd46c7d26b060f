package ignition

// Ignition's types say "unset" with nil pointers. These make them from plain values; ptr.To
// (k8s.io/utils/ptr) makes a pointer to any value.

// stringOrNil is s, or nil for "": an empty field of the input (or Ignition 2's zero value) is
// an absent one in 3.x, so the OS's default applies.
func stringOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// trueOrNil is b, or nil for false.
func trueOrNil(b bool) *bool {
	if !b {
		return nil
	}
	return &b
}

// copyPtr is a pointer to a copy of *p, nil for nil: a translation shares nothing with its input.
func copyPtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
