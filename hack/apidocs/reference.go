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
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// reference is what api.md documents.
type reference struct {
	group, version string
	kinds          []kind
	conditions     []conditionGroup
	annotations    []constant
}

// kind is a top-level object (a type with +kubebuilder:object:root that is not a List) and all
// its fields, depth first in declaration order.
type kind struct {
	name, doc string
	fields    []field
}

// field is one field of a kind, at its full path: "spec.files[].contentFrom.secret.name".
type field struct {
	path string
	// jsonType is the type in the YAML a user writes: string, integer, boolean, object, or a
	// list of one of them ("[]object").
	jsonType string
	doc      string
	required bool
	// own is the field's validation; items that of each item of a list.
	own, items validation
	// external is a type of another package (Cluster API's kubeadm types, Kubernetes'
	// metadata): not expanded, linked to its documentation.
	external *externalType
	// sameAs is the kind and path of a field of the same struct type documented in full
	// before (IgnitionConfigTemplate's spec.template.spec is IgnitionConfig's spec).
	sameAs *fieldRef
	// values are the documented constants of an enum type, with what each means.
	values []constant
}

type externalType struct{ name, pkgPath string }

type fieldRef struct{ kind, path string }

// conditionGroup is a condition type and the reasons declared after it in conditions.go.
type conditionGroup struct {
	condition constant
	reasons   []constant
}

// reference builds the reference from the parsed package.
func (api *apiPackage) reference() (*reference, error) {
	ref := &reference{group: api.group, version: api.version}
	// expanded records, for every struct type documented in full, where it was first.
	expanded := map[string]fieldRef{}
	for _, name := range api.typeOrder {
		t := api.types[name]
		if !slices.Contains(t.markers, "+kubebuilder:object:root=true") || strings.HasSuffix(name, "List") {
			continue
		}
		st, ok := t.expr.(*ast.StructType)
		if !ok {
			return nil, fmt.Errorf("kind %s is not a struct", name)
		}
		k := kind{name: name, doc: t.doc}
		w := walker{api: api, kind: name, expanded: expanded, out: &k.fields}
		if err := w.walkStruct("", st, t.imports, nil); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		ref.kinds = append(ref.kinds, k)
	}
	for _, c := range api.consts {
		switch {
		case strings.HasSuffix(c.name, "Condition"):
			ref.conditions = append(ref.conditions, conditionGroup{condition: c})
		case strings.HasSuffix(c.name, "Reason"):
			if len(ref.conditions) == 0 {
				return nil, fmt.Errorf("reason %s is declared before any condition type", c.name)
			}
			last := &ref.conditions[len(ref.conditions)-1]
			last.reasons = append(last.reasons, c)
		case strings.HasSuffix(c.name, "Annotation"):
			ref.annotations = append(ref.annotations, c)
		}
	}
	return ref, nil
}

// walker collects the fields of one kind.
type walker struct {
	api      *apiPackage
	kind     string
	expanded map[string]fieldRef
	out      *[]field
}

// walkStruct adds the fields of st under prefix. stack holds the struct types being expanded,
// to refuse a recursive type (it would have no end in a flat reference).
func (w walker) walkStruct(prefix string, st *ast.StructType, imports map[string]string, stack []string) error {
	for _, f := range st.Fields.List {
		tag := ""
		if f.Tag != nil {
			raw, err := strconv.Unquote(f.Tag.Value)
			if err != nil {
				return err
			}
			tag = reflect.StructTag(raw).Get("json")
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if slices.Contains(strings.Split(opts, ","), "inline") {
			// TypeMeta: apiVersion and kind are in the kind's heading.
			if _, ok := f.Type.(*ast.SelectorExpr); ok {
				continue
			}
			return fmt.Errorf("inline field %s of this package: not supported", prefix)
		}
		if name == "" {
			return fmt.Errorf("field %v under %q has no json name", f.Names, prefix)
		}
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		var lines []string
		doc := ""
		if f.Doc != nil {
			lines = markerLines(f.Doc.Text())
			doc = docText(f.Doc.Text())
		}
		m, err := parseMarkers(lines)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		omitempty := slices.Contains(strings.Split(opts, ","), "omitempty")
		fd := field{path: path, doc: doc, required: m.required || (!m.optional && !omitempty), own: m.own, items: m.items}
		if err := w.addField(fd, f.Type, imports, stack); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return nil
}

// addField resolves the field's type, appends it and walks into a struct of this package.
func (w walker) addField(fd field, expr ast.Expr, imports map[string]string, stack []string) error {
	if star, ok := expr.(*ast.StarExpr); ok {
		expr = star.X
	}
	list := false
	if arr, ok := expr.(*ast.ArrayType); ok {
		list, expr = true, arr.Elt
		if star, ok := expr.(*ast.StarExpr); ok {
			expr = star.X
		}
	}
	// typeValidation is where a named type's own markers go: the field, or each item.
	typeValidation := &fd.own
	if list {
		typeValidation = &fd.items
	}
	prefix := func(t string) string {
		if list {
			return "[]" + t
		}
		return t
	}

	switch t := expr.(type) {
	case *ast.SelectorExpr:
		pkg, ok := t.X.(*ast.Ident)
		if !ok || imports[pkg.Name] == "" {
			return fmt.Errorf("type %v: package not imported", t)
		}
		fd.jsonType = prefix("object")
		fd.external = &externalType{name: t.Sel.Name, pkgPath: imports[pkg.Name]}
		*w.out = append(*w.out, fd)
		return nil
	case *ast.Ident:
		if jt, ok := builtinTypes[t.Name]; ok {
			fd.jsonType = prefix(jt)
			*w.out = append(*w.out, fd)
			return nil
		}
		named, ok := w.api.types[t.Name]
		if !ok {
			return fmt.Errorf("type %s is not declared in the package", t.Name)
		}
		tm, err := parseMarkers(named.markers)
		if err != nil {
			return fmt.Errorf("type %s: %w", t.Name, err)
		}
		*typeValidation = tm.own.merge(*typeValidation)
		switch under := named.expr.(type) {
		case *ast.Ident:
			jt, ok := builtinTypes[under.Name]
			if !ok {
				return fmt.Errorf("type %s: underlying type %s not supported", t.Name, under.Name)
			}
			fd.jsonType = prefix(jt)
			for _, c := range w.api.consts {
				if c.typeName == t.Name {
					fd.values = append(fd.values, c)
				}
			}
			*w.out = append(*w.out, fd)
			return nil
		case *ast.StructType:
			fd.jsonType = prefix("object")
			if first, seen := w.expanded[t.Name]; seen && first.kind != w.kind {
				fd.sameAs = &first
				*w.out = append(*w.out, fd)
				return nil
			}
			if slices.Contains(stack, t.Name) {
				return fmt.Errorf("type %s contains itself", t.Name)
			}
			if _, seen := w.expanded[t.Name]; !seen {
				w.expanded[t.Name] = fieldRef{kind: w.kind, path: fd.path}
			}
			*w.out = append(*w.out, fd)
			childPrefix := fd.path
			if list {
				childPrefix += "[]"
			}
			return w.walkStruct(childPrefix, under, named.imports, append(slices.Clone(stack), t.Name))
		default:
			return fmt.Errorf("type %s: %T not supported", t.Name, under)
		}
	default:
		return fmt.Errorf("type %T not supported", expr)
	}
}

// builtinTypes are the Go types the API uses, by the type a user writes.
var builtinTypes = map[string]string{
	"string": "string",
	"bool":   "boolean",
	"int32":  "integer",
	"int64":  "integer",
}
