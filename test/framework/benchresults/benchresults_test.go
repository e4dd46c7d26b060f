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

package benchresults

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReplace(t *testing.T) {
	for _, tc := range []struct{ name, text, body, want string }{
		{"appended where missing", "# Results\n", "t1", "# Results\n\n" + Begin + "\nt1\n" + End + "\n"},
		{"replaced in place", "a\n" + Begin + "\nold\n" + End + "\nb\n", "new\n", "a\n" + Begin + "\nnew\n" + End + "\nb\n"},
		{"markers out of order are not a section", "a " + End + " " + Begin, "x", "a " + End + " " + Begin + "\n\n" + Begin + "\nx\n" + End + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Replace(tc.text, tc.body)) })
	}
}

// make bench rewrites the file: the real-node section survives it, and a file without one gets none.
func TestKeep(t *testing.T) {
	old := "# Benchmark\nold figures\n" + Begin + "\n| e2e |\n" + End + "\n"
	assert.Equal(t, "# Benchmark\nnew figures\n\n"+Begin+"\n| e2e |\n"+End+"\n", Keep(old, "# Benchmark\nnew figures\n"))
	assert.Equal(t, "# Benchmark\nnew\n", Keep("# Benchmark\nno section\n", "# Benchmark\nnew\n"))
}
