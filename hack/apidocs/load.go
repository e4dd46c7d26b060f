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
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// apiPackage is the parsed API package: its named types and documented constants.
type apiPackage struct {
	group, version string
	types          map[string]*namedType
	// typeOrder is the order the types are declared in, for the kinds.
	typeOrder []string
	consts    []constant
}

// namedType is one type declaration with the comments around it.
type namedType struct {
	name string
	// doc is the type's doc comment without markers; markers are every marker line of the doc
	// comment and of the comment groups between the previous declaration and this one (where
	// kubebuilder puts +kubebuilder:object:root and the resource markers).
	doc     string
	markers []string
	expr    ast.Expr
	// imports maps the import names of the type's file to their paths.
	imports map[string]string
}

// constant is a documented string constant, in declaration order.
type constant struct {
	name, value, typeName, doc string
}

// loadAPI parses the non-test, non-generated Go files of dir.
func loadAPI(dir string) (*apiPackage, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	api := &apiPackage{version: filepath.Base(dir), types: map[string]*namedType{}}
	fset := token.NewFileSet()
	for _, p := range paths {
		base := filepath.Base(p)
		if strings.HasSuffix(base, "_test.go") || strings.HasPrefix(base, "zz_generated") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return nil, fmt.Errorf("parsing %s: %w", p, err)
		}
		if f.Doc != nil {
			for _, m := range markerLines(f.Doc.Text()) {
				if g, ok := strings.CutPrefix(m, "+groupName="); ok {
					api.group = g
				}
			}
		}
		if err := api.addFile(fset, f); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	if api.group == "" {
		return nil, fmt.Errorf("no +groupName marker in the package documentation of %s", dir)
	}
	return api, nil
}

func (api *apiPackage) addFile(fset *token.FileSet, f *ast.File) error {
	imports := map[string]string{}
	for _, imp := range f.Imports {
		path, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			return err
		}
		name := path[strings.LastIndex(path, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		imports[name] = path
	}
	prevEnd := f.Name.End()
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok {
			prevEnd = decl.End()
			continue
		}
		switch gen.Tok {
		case token.TYPE:
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				doc := gen.Doc
				if ts.Doc != nil {
					doc = ts.Doc
				}
				t := &namedType{name: ts.Name.Name, expr: ts.Type, imports: imports}
				if doc != nil {
					t.doc = docText(doc.Text())
				}
				// Marker groups between the previous declaration and this one, the doc included.
				for _, cg := range f.Comments {
					if cg.Pos() > prevEnd && cg.End() < ts.Pos() {
						t.markers = append(t.markers, markerLines(cg.Text())...)
					}
				}
				api.types[t.name] = t
				api.typeOrder = append(api.typeOrder, t.name)
			}
		case token.CONST:
			for _, spec := range gen.Specs {
				api.addConstants(spec.(*ast.ValueSpec), gen)
			}
		}
		prevEnd = decl.End()
	}
	return nil
}

// addConstants records the string constants of a spec that have a doc comment.
func (api *apiPackage) addConstants(vs *ast.ValueSpec, gen *ast.GenDecl) {
	doc := vs.Doc
	if doc == nil && len(gen.Specs) == 1 {
		doc = gen.Doc
	}
	if doc == nil {
		return
	}
	typeName := ""
	if id, ok := vs.Type.(*ast.Ident); ok {
		typeName = id.Name
	}
	for i, name := range vs.Names {
		if i >= len(vs.Values) {
			break
		}
		lit, ok := vs.Values[i].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			continue
		}
		value, err := strconv.Unquote(lit.Value)
		if err != nil {
			continue
		}
		api.consts = append(api.consts, constant{name: name.Name, value: value, typeName: typeName, doc: docText(doc.Text())})
	}
}

// markerLines returns the marker lines ("+...") of a comment's text.
func markerLines(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if line = strings.TrimSpace(line); strings.HasPrefix(line, "+") {
			out = append(out, line)
		}
	}
	return out
}

// docText is a comment's text without its marker lines, as one paragraph per blank-line
// separated block, lines joined with spaces.
func docText(text string) string {
	var paragraphs []string
	var cur []string
	flush := func() {
		if len(cur) > 0 {
			paragraphs = append(paragraphs, strings.Join(cur, " "))
			cur = nil
		}
	}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "+"):
			continue
		case line == "":
			flush()
		default:
			cur = append(cur, line)
		}
	}
	flush()
	return strings.Join(paragraphs, "\n\n")
}
