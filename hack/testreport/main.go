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

// Command testreport reads `go test -json` (from standard input, or the files named) and prints
// what CI shows of a run: a line per test that ended (`--- PASS: TestX (1.20s)`, as go test -v
// prints them), a line per package, the counts, the slowest packages, and, for every test that
// failed, its whole output, so that a failure CI keeps no artifacts of says why in CI's output.
// Lines that are not test events (make's, a build's errors) are printed when they come.
//
// It exits 0 whatever the tests did: the exit status is go test's, which the caller has.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// event is one line of `go test -json` (cmd/test2json's TestEvent).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

// outputLines bounds the output printed of one failed test: its first and last lines.
const outputLines = 400

func main() {
	var inputs []io.Reader
	for _, name := range os.Args[1:] {
		f, err := os.Open(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
		defer f.Close()
		inputs = append(inputs, f)
	}
	if len(inputs) == 0 {
		inputs = append(inputs, os.Stdin)
	}
	r := newReport()
	for _, in := range inputs {
		if err := r.read(in, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "testreport:", err)
			os.Exit(2)
		}
	}
	r.summary(os.Stdout)
}

// key names a test: its package and name ("" for the package itself).
type key struct{ pkg, test string }

// report is what was read so far.
type report struct {
	output   map[key][]string
	failed   []key
	passed   int
	skipped  int
	packages map[string]float64
}

func newReport() *report {
	return &report{output: map[key][]string{}, packages: map[string]float64{}}
}

// read takes the events of in, printing each test's and package's end and every line that is
// not an event as they come.
func (r *report) read(in io.Reader, w io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		var e event
		if !strings.HasPrefix(line, "{") || json.Unmarshal([]byte(line), &e) != nil || e.Action == "" {
			fmt.Fprintln(w, line)
			continue
		}
		r.take(e, w)
	}
	return sc.Err()
}

func (r *report) take(e event, w io.Writer) {
	k := key{e.Package, e.Test}
	switch e.Action {
	case "output", "build-output":
		r.output[k] = append(r.output[k], strings.TrimRight(e.Output, "\n"))
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.packages[e.Package] = e.Elapsed
			status := map[string]string{"pass": "ok  ", "fail": "FAIL", "skip": "ok  "}[e.Action]
			fmt.Fprintf(w, "%s\t%s\t%.1fs\n", status, e.Package, e.Elapsed)
			if e.Action == "fail" {
				r.failed = append(r.failed, k)
			}
			return
		}
		fmt.Fprintf(w, "--- %s: %s (%.2fs)\n", strings.ToUpper(e.Action), e.Test, e.Elapsed)
		switch e.Action {
		case "pass":
			r.passed++
			delete(r.output, k)
		case "skip":
			r.skipped++
			delete(r.output, k)
		case "fail":
			r.failed = append(r.failed, k)
		}
	}
}

// summary prints the counts, the slowest packages and each failure's output.
func (r *report) summary(w io.Writer) {
	tests := 0
	for _, k := range r.failed {
		if k.test != "" {
			tests++
		}
	}
	fmt.Fprintf(w, "\n== %d passed, %d failed, %d skipped\n", r.passed, tests, r.skipped)
	if len(r.packages) > 0 {
		pkgs := make([]string, 0, len(r.packages))
		for p := range r.packages {
			pkgs = append(pkgs, p)
		}
		slices.SortFunc(pkgs, func(a, b string) int {
			if d := r.packages[b] - r.packages[a]; d != 0 {
				if d > 0 {
					return 1
				}
				return -1
			}
			return strings.Compare(a, b)
		})
		fmt.Fprintln(w, "== the slowest packages:")
		for _, p := range pkgs[:min(len(pkgs), 12)] {
			fmt.Fprintf(w, "%10s  %s\n", time.Duration(r.packages[p]*float64(time.Second)).Round(100*time.Millisecond), p)
		}
	}
	for _, k := range r.failed {
		name := k.pkg
		if k.test != "" {
			name += " " + k.test
		}
		lines := r.output[k]
		fmt.Fprintf(w, "\n== output of %s (failed):\n", name)
		if len(lines) > outputLines {
			cut := len(lines) - outputLines
			lines = append(append(slices.Clone(lines[:outputLines/2]), fmt.Sprintf("... %d lines left out ...", cut)), lines[len(lines)-outputLines/2:]...)
		}
		for _, l := range lines {
			fmt.Fprintln(w, l)
		}
	}
}
