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

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A run with a passing and a failing test: the ends as go test -v prints them, a package line,
// the counts, and the failing test's whole output (not the passing one's); a line that is not an
// event is printed as it is.
func TestReport(t *testing.T) {
	in := strings.Join([]string{
		`make: entering`,
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:1: quiet\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA","Elapsed":1.5}`,
		`{"Action":"run","Package":"p","Test":"TestB/sub"}`,
		`{"Action":"output","Package":"p","Test":"TestB/sub","Output":"    b_test.go:9: journal of the node\n"}`,
		`{"Action":"fail","Package":"p","Test":"TestB/sub","Elapsed":2}`,
		`{"Action":"fail","Package":"p","Elapsed":3.25}`,
	}, "\n")
	r := newReport()
	var out bytes.Buffer
	require.NoError(t, r.read(strings.NewReader(in), &out))
	r.summary(&out)
	got := out.String()
	for _, want := range []string{
		"make: entering\n",
		"--- PASS: TestA (1.50s)\n",
		"--- FAIL: TestB/sub (2.00s)\n",
		"FAIL\tp\t3.2s\n",
		"== 1 passed, 1 failed, 0 skipped\n",
		"== output of p TestB/sub (failed):\n    b_test.go:9: journal of the node\n",
	} {
		assert.Contains(t, got, want)
	}
	assert.NotContains(t, got, "quiet", "a passing test's output is left out")
}

// A failed test's output beyond the bound keeps its first and last lines.
func TestReportBoundsTheOutput(t *testing.T) {
	r := newReport()
	var in strings.Builder
	for i := range outputLines + 10 {
		in.WriteString(`{"Action":"output","Package":"p","Test":"T","Output":"line ` + strings.Repeat("x", i%3) + "\\n\"}\n")
	}
	in.WriteString(`{"Action":"fail","Package":"p","Test":"T"}` + "\n")
	var out bytes.Buffer
	require.NoError(t, r.read(strings.NewReader(in.String()), &out))
	r.summary(&out)
	assert.Contains(t, out.String(), "... 10 lines left out ...")
}
