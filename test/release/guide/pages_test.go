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
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEveryReasonHasTroubleshooting: each condition type and reason of apis/v1alpha1/conditions.go
// has its entry in troubleshooting.md (a heading "## `Type`" or "### `Reason`").
func TestEveryReasonHasTroubleshooting(t *testing.T) {
	page, err := os.ReadFile(filepath.Join(repoRoot, "docs", "guide", "troubleshooting.md"))
	require.NoError(t, err)
	headings := map[string]bool{}
	for _, line := range strings.Split(string(page), "\n") {
		if m := regexp.MustCompile("^#{2,3} `([A-Za-z]+)`").FindStringSubmatch(line); m != nil {
			headings[m[1]] = true
		}
	}
	conditions, reasons := conditionConstants(t)
	require.NotEmpty(t, reasons)
	for name, value := range conditions {
		require.True(t, headings[value], "troubleshooting.md has no heading ## `%s` (%s)", value, name)
	}
	for name, value := range reasons {
		require.True(t, headings[value], "troubleshooting.md has no heading ### `%s` (%s)", value, name)
	}
}

// conditionConstants reads the condition types and reasons declared in conditions.go, by
// constant name.
func conditionConstants(t *testing.T) (conditions, reasons map[string]string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(repoRoot, "apis", "v1alpha1", "conditions.go"), nil, 0)
	require.NoError(t, err)
	conditions, reasons = map[string]string{}, map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					continue
				}
				value, err := strconv.Unquote(lit.Value)
				require.NoError(t, err)
				switch {
				case strings.HasSuffix(name.Name, "Condition"):
					conditions[name.Name] = value
				case strings.HasSuffix(name.Name, "Reason"):
					reasons[name.Name] = value
				}
			}
		}
	}
	return conditions, reasons
}

// markdownLink is a link target: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestLinksResolve: every relative link of the guide (and the README's links into it) names a
// file of the repository.
func TestLinksResolve(t *testing.T) {
	pages := append(guidePages(t), filepath.Join(repoRoot, "README.md"))
	for _, page := range pages {
		data, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			_, err := os.Stat(filepath.Join(filepath.Dir(page), target))
			require.NoError(t, err, "%s links to %s", rel(page), m[1])
		}
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	require.Contains(t, string(readme), "](docs/guide/README.md)", "README.md does not link the guide")
}

// The checks above are only as good as the parser and the matchers: they must refuse what they
// are there to refuse.
func TestMarkersAndMatchers(t *testing.T) {
	write := func(t *testing.T, text string) string {
		p := filepath.Join(t.TempDir(), "page.md")
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	for name, page := range map[string]string{
		"unmarked sh":         "```sh\nls\n```\n",
		"not run without why": "<!-- not run: -->\n```sh\nls\n```\n",
		"unmarked yaml":       "```yaml\na: b\n```\n",
		"unknown marker":      "<!-- tset -->\n```sh\nls\n```\n",
		"bad exit":            "<!-- test exit=x -->\n```sh\nls\n```\n",
		"output alone":        "<!-- output -->\n```text\nx\n```\n",
		"unclosed":            "<!-- test -->\n```sh\nls\n",
		"indented unmarked":   "1. step\n   ```sh\n   ls\n   ```\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parsePage(write(t, page))
			require.Error(t, err)
		})
	}
	blocks, err := parsePage(write(t, "<!-- test exit=2 -->\n```sh\nfalse\n```\n<!-- output -->\n```text\nx\n```\n"+
		"<!-- not run: needs a cluster -->\n```sh\nkubectl get nodes\n```\n<!-- example: docs/examples/a.yaml -->\n```yaml\na: b\n```\n"))
	require.NoError(t, err)
	require.Len(t, blocks, 4)
	require.Equal(t, []string{"test", "output", "not run", "example"}, []string{blocks[0].marker, blocks[1].marker, blocks[2].marker, blocks[3].marker})
	code, err := expectedExit(blocks[0])
	require.NoError(t, err)
	require.Equal(t, 2, code)
	require.Equal(t, "docs/examples/a.yaml", blocks[3].arg)

	got := "first line\n  rendered Ignition 3.3.0 for flatcar: 1353 bytes\nwarning: x\n"
	require.Empty(t, matchOutput("rendered Ignition 3.3.0 for ...: ... bytes\n...\nwarning: x\n", got))
	require.NotEmpty(t, matchOutput("rendered Ignition 3.4.0 for ...\n", got), "a different version")
	require.NotEmpty(t, matchOutput("warning: x\nfirst line\n", got), "out of order")
	require.NotEmpty(t, matchOutput("rendered\n", got), "a part of a line only")
	require.Empty(t, matchOutput("rendered   Ignition 3.3.0 for ...\n", got), "spacing does not count")
	require.NotEmpty(t, matchOutput("renderedIgnition ...\n", got), "but words stay apart")

	file := "spec:\n  template:\n    spec:\n      nodeName:\n        fromMetadata: aws\n      variant: flatcar\n"
	require.True(t, isExcerpt("nodeName:\n  fromMetadata: aws\n", file))
	require.True(t, isExcerpt(file, file))
	require.False(t, isExcerpt("nodeName:\n  fromMetadata: azure\n", file))
	require.False(t, isExcerpt("nodeName:\nfromMetadata: aws\n", file), "indentation changed")
}
