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

package guide_test

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// The guide's pages mark their fenced blocks with an HTML comment on the line right before the
// opening fence (docs/guide/README.md explains them to writers):
//
//	<!-- test -->                 the sh block is run; it must exit 0
//	<!-- test exit=N -->          the sh block is run; it must exit N
//	<!-- test demo -->            the sh block is `make demo` (or `VARIANT=fcos make demo`): the
//	                              demo program make demo runs (hack/demo) is run in its place
//	<!-- output -->               the text block is what the run block before it prints
//	                              (stdout and stderr): each line must appear, in order; "..."
//	                              stands for any text
//	<!-- not run: WHY -->         the sh block is shown only; WHY says why (kubectl against a
//	                              real cluster, docker, a feature on another branch)
//	<!-- example: PATH -->        the yaml block is an excerpt of the file PATH (docs/examples/)
//	<!-- admission: PATH -->      the text block is what kubectl prints when the examples of PATH
//	                              are applied: the admission warnings, then "... created"
//
// Every sh block needs a test or not-run marker, every yaml block an example marker.

// block is one fenced block of a page.
type block struct {
	page string
	line int    // line of the opening fence, 1-based
	lang string // the fence's info string: sh, yaml, text, ...
	body string
	// marker is the comment before the fence: its kind and argument.
	marker, arg string
}

func (b block) String() string { return fmt.Sprintf("%s:%d", b.page, b.line) }

var (
	markerLine = regexp.MustCompile(`^<!--\s*(test|output|not run|example|admission)(?:(?:\s+|:\s*)(.*?))?\s*-->$`)
	fenceLine  = regexp.MustCompile("^\\s*(```+)\\s*([A-Za-z0-9_+-]*)\\s*$")
)

// parsePage reads the fenced blocks of a Markdown page and their markers.
func parsePage(path string) ([]block, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var blocks []block
	var cur *block
	var fence, prev string
	var body []string
	scanner := bufio.NewScanner(f)
	for n := 1; scanner.Scan(); n++ {
		line := scanner.Text()
		if cur != nil {
			if strings.TrimSpace(line) == fence {
				cur.body = strings.Join(body, "\n") + "\n"
				blocks = append(blocks, *cur)
				cur, body = nil, nil
			} else {
				body = append(body, line)
			}
			prev = line
			continue
		}
		if m := fenceLine.FindStringSubmatch(line); m != nil {
			cur = &block{page: path, line: n, lang: m[2]}
			fence = m[1]
			if mm := markerLine.FindStringSubmatch(strings.TrimSpace(prev)); mm != nil {
				cur.marker, cur.arg = mm[1], strings.TrimSpace(mm[2])
			} else if strings.HasPrefix(strings.TrimSpace(prev), "<!--") {
				return nil, fmt.Errorf("%s:%d: %q is not a marker the guide test knows", path, n-1, prev)
			}
		}
		prev = line
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: the block is not closed", path, cur.line)
	}
	return blocks, checkMarkers(blocks)
}

// checkMarkers enforces where each marker may be, so that nothing in a page escapes the test.
func checkMarkers(blocks []block) error {
	for i, b := range blocks {
		switch {
		case isShell(b.lang) && b.marker != "test" && b.marker != "not run":
			return fmt.Errorf("%s: a %s block needs <!-- test --> or <!-- not run: why -->", b, b.lang)
		case b.marker == "not run" && b.arg == "":
			return fmt.Errorf("%s: <!-- not run: why --> must say why", b)
		case b.marker == "test" && !isShell(b.lang):
			return fmt.Errorf("%s: only sh blocks are run", b)
		case b.marker == "test" && b.arg != "" && b.arg != "demo":
			if _, err := expectedExit(b); err != nil {
				return err
			}
		case b.lang == "yaml" && b.marker != "example":
			return fmt.Errorf("%s: a yaml block needs <!-- example: docs/examples/FILE -->: examples live as files", b)
		case (b.marker == "example" || b.marker == "admission") && b.arg == "":
			return fmt.Errorf("%s: <!-- %s: PATH --> needs the example's path", b, b.marker)
		case b.marker == "output" && (i == 0 || blocks[i-1].marker != "test"):
			return fmt.Errorf("%s: <!-- output --> must follow a run block", b)
		}
	}
	return nil
}

func isShell(lang string) bool { return lang == "sh" || lang == "bash" || lang == "shell" }

// expectedExit is the exit status a test block must end with.
func expectedExit(b block) (int, error) {
	if b.arg == "" || b.arg == "demo" {
		return 0, nil
	}
	v, ok := strings.CutPrefix(b.arg, "exit=")
	n, err := strconv.Atoi(v)
	if !ok || err != nil {
		return 0, fmt.Errorf("%s: <!-- test %s -->: use <!-- test exit=N -->", b, b.arg)
	}
	return n, nil
}

// matchOutput checks that every line of want appears in got, in order, each in a line of its
// own; "..." in a line of want stands for any text, and a line of only "..." is skipped. How
// much white space separates words does not count (columns may be aligned differently). It
// returns the first line not found, or "".
func matchOutput(want, got string) string {
	gotLines := strings.Split(got, "\n")
	next := 0
	for _, w := range strings.Split(want, "\n") {
		w = squeeze(w)
		if w == "" || w == "..." {
			continue
		}
		parts := strings.Split(w, "...")
		for i, p := range parts {
			parts[i] = regexp.QuoteMeta(p)
		}
		re := regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
		found := false
		for next < len(gotLines) {
			line := squeeze(gotLines[next])
			next++
			if re.MatchString(line) {
				found = true
				break
			}
		}
		if !found {
			return w
		}
	}
	return ""
}

// squeeze is s with runs of white space made one space, and none at either end.
func squeeze(s string) string { return strings.Join(strings.Fields(s), " ") }

// isExcerpt reports whether excerpt is a run of whole consecutive lines of file, both taken
// without their common indentation (a snippet shown from inside a spec).
func isExcerpt(excerpt, file string) bool {
	want := dedent(strings.Split(strings.TrimRight(excerpt, "\n"), "\n"))
	lines := strings.Split(strings.TrimRight(file, "\n"), "\n")
	for start := 0; start+len(want) <= len(lines); start++ {
		window := dedent(lines[start : start+len(want)])
		if strings.Join(window, "\n") == strings.Join(want, "\n") {
			return true
		}
	}
	return false
}

// dedent removes the indentation all non-empty lines share.
func dedent(lines []string) []string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, " "))
		if indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		out[i] = l
	}
	return out
}
