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

// Package escape writes file contents as data URLs the way every config the provider emits
// carries them: the renderer's own files and the Container Linux Config translation's networkd
// units (ignition/clc) alike.
package escape

import "strings"

// dataPrefix starts a data URL of percent-escaped data without a media type.
const dataPrefix = "data:,"

// DataURL is content as a data URL without a media type, percent-escaped. RFC 2397 allows RFC
// 2396's reserved characters there unescaped; those that are common in scripts and YAML
// ("/", ":", "=", ",", ";", "@", "+", "$") are kept, which makes text cheaper than with
// dataurl.Escape, which escapes all of them. Every data URL decoder that reads the output
// (Ignition's, CAPD's and Butane's: vincent-petithory/dataurl, which unescapes only %XX) takes
// them as themselves. "?" and "&" stay escaped: a URL parser would start a query at "?", and
// JSON encoding would turn "&" into six bytes.
func DataURL(content []byte) string {
	var b strings.Builder
	b.Grow(len(dataPrefix) + len(content))
	b.WriteString(dataPrefix)
	for _, c := range content {
		if dataURLChar(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[c>>4])
		b.WriteByte(upperHex[c&0xf])
	}
	return b.String()
}

const upperHex = "0123456789ABCDEF"

// dataURLChar reports whether DataURL keeps c: RFC 2396's unreserved characters and the
// reserved ones named there.
func dataURLChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-_.!~*'()/:=,;@+$", c) >= 0
}
