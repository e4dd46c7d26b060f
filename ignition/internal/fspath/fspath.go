// Package fspath compares the paths a config writes: what the renderer owns and checks, and
// where the Container Linux Config translation (ignition/clc) places a filesystem's files.
package fspath

import "strings"

// Below reports whether p is strictly inside directory dir; both are clean and absolute.
func Below(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}
