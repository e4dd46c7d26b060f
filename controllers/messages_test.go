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

package controllers

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// Messages are cut to their bound, keeping whole report entries and saying what was left out.
func TestBounded(t *testing.T) {
	short := "Rendering failed: butane: bad"
	assert.Equal(t, short, bounded(short, 100))

	var entries []string
	for range 500 {
		entries = append(entries, "error at $.storage.files.0.path: path must be absolute")
	}
	report := strings.Join(entries, "; ")
	got := bounded(report, 1024)
	assert.LessOrEqual(t, len(got), 1024)
	assert.True(t, strings.HasPrefix(got, entries[0]+"; "+entries[1]), got)
	assert.Regexp(t, `; … and \d+ more$`, got)
	kept := strings.Count(got, "path must be absolute")
	assert.Contains(t, got, "… and "+strconv.Itoa(500-kept)+" more")

	long := strings.Repeat("é", 2000) // one entry, multi-byte runes
	got = bounded(long, 1024)
	assert.LessOrEqual(t, len(got), 1024)
	assert.True(t, utf8.ValidString(got), "cut at a rune boundary")
	assert.Regexp(t, `… and \d+ more bytes$`, got)
}
