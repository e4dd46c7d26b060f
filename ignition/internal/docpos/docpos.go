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

// Package docpos is where in a user's YAML document (a Butane snippet, a Container Linux Config)
// something is, and how messages say it. Package ignition and the Container Linux Config
// translation below it (ignition/clc) both locate their errors and warnings this way, so the two
// say a place alike.
package docpos

import (
	"fmt"
	"regexp"
	"strconv"
)

// Position is a place in a document: 1-based line and column, 0 when unknown.
type Position struct {
	Line, Column int
}

// String is "line L, column C", "line L" when the column is unknown, "" when the line is.
func (p Position) String() string {
	switch {
	case p.Line > 0 && p.Column > 0:
		return fmt.Sprintf("line %d, column %d", p.Line, p.Column)
	case p.Line > 0:
		return fmt.Sprintf("line %d", p.Line)
	}
	return ""
}

// yamlErrorLine finds the line number YAML parsers put in their error text ("yaml: line 3:
// ...", "line 6: cannot unmarshal ..."). Neither go-yaml v2 (under Flatcar's transpiler) nor v3
// (under Butane and the renderer) gives a syntax or type error a structured position.
var yamlErrorLine = regexp.MustCompile(`\bline (\d+)\b`)

// YAMLErrorLine is the line a YAML parser's error message names, 0 when it names none. It only
// locates the error for the message; nothing is decided by it.
func YAMLErrorLine(message string) int {
	m := yamlErrorLine.FindStringSubmatch(message)
	if m == nil {
		return 0
	}
	line, _ := strconv.Atoi(m[1]) // the digits are there; out of range is the int's limit
	return line
}
