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
