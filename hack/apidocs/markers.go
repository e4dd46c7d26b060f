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
	"slices"
	"strconv"
	"strings"
)

// validation is what the kubebuilder markers of a field (or of its type) tell the API server to
// enforce, in the terms of the CRD schema they become.
type validation struct {
	Enum          []string
	Pattern       string
	Default       string
	MinLength     *int64
	MaxLength     *int64
	MinItems      *int64
	MaxItems      *int64
	MinProperties *int64
	Minimum       *int64
	Maximum       *int64
	ListType      string
	ListMapKeys   []string
	Rules         []celRule
}

// celRule is an x-kubernetes-validations entry.
type celRule struct{ Rule, Message string }

func (v validation) empty() bool {
	return len(v.Enum) == 0 && v.Pattern == "" && v.Default == "" && v.MinLength == nil && v.MaxLength == nil &&
		v.MinItems == nil && v.MaxItems == nil && v.MinProperties == nil && v.Minimum == nil && v.Maximum == nil &&
		v.ListType == "" && len(v.ListMapKeys) == 0 && len(v.Rules) == 0
}

// markerSet is the parsed markers of one field: its validation, its items' validation (for
// lists: the "items:" markers) and whether it is optional or required.
type markerSet struct {
	own, items         validation
	optional, required bool
}

// ignoredMarkers carry no validation a user sees in the reference: object generation, storage,
// printer columns and the like.
var ignoredMarkers = []string{
	"+kubebuilder:object:", "+kubebuilder:resource:", "+kubebuilder:storageversion",
	"+kubebuilder:subresource:", "+kubebuilder:printcolumn:", "+groupName=",
}

// parseMarkers reads marker lines. A validation marker it does not know is an error, so that a
// new kind of validation cannot be left out of the reference unnoticed.
func parseMarkers(lines []string) (markerSet, error) {
	var m markerSet
	for _, line := range lines {
		if err := m.add(line); err != nil {
			return m, fmt.Errorf("marker %q: %w", line, err)
		}
	}
	return m, nil
}

func (m *markerSet) add(line string) error {
	switch line {
	case "+optional":
		m.optional = true
		return nil
	case "+required", "+kubebuilder:validation:Required":
		m.required = true
		return nil
	}
	for _, prefix := range ignoredMarkers {
		if strings.HasPrefix(line, prefix) {
			return nil
		}
	}
	if v, ok := strings.CutPrefix(line, "+listType="); ok {
		m.own.ListType = v
		return nil
	}
	if v, ok := strings.CutPrefix(line, "+listMapKey="); ok {
		m.own.ListMapKeys = append(m.own.ListMapKeys, v)
		return nil
	}
	if v, ok := strings.CutPrefix(line, "+kubebuilder:default="); ok {
		m.own.Default = v
		return nil
	}
	rest, ok := strings.CutPrefix(line, "+kubebuilder:validation:")
	if !ok {
		return fmt.Errorf("not a marker the reference knows: teach hack/apidocs what it means")
	}
	target := &m.own
	if r, isItems := strings.CutPrefix(rest, "items:"); isItems {
		target, rest = &m.items, r
	}
	if args, ok := strings.CutPrefix(rest, "XValidation:"); ok {
		rule, err := parseXValidation(args)
		if err != nil {
			return err
		}
		target.Rules = append(target.Rules, rule)
		return nil
	}
	name, value, _ := strings.Cut(rest, "=")
	ints := map[string]**int64{
		"MinLength": &target.MinLength, "MaxLength": &target.MaxLength,
		"MinItems": &target.MinItems, "MaxItems": &target.MaxItems,
		"MinProperties": &target.MinProperties,
		"Minimum":       &target.Minimum, "Maximum": &target.Maximum,
	}
	if dst, ok := ints[name]; ok {
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return err
		}
		*dst = &n
		return nil
	}
	switch name {
	case "Enum":
		target.Enum = strings.Split(value, ";")
	case "Pattern":
		p, err := unquoteMarker(value)
		if err != nil {
			return err
		}
		target.Pattern = p
	default:
		return fmt.Errorf("validation %s is not one the reference knows: teach hack/apidocs what it means", name)
	}
	return nil
}

// parseXValidation reads rule="...",message="..." (Go-quoted strings, in any order).
func parseXValidation(args string) (celRule, error) {
	var r celRule
	for args != "" {
		key, rest, ok := strings.Cut(args, "=")
		if !ok {
			return r, fmt.Errorf("XValidation arguments %q", args)
		}
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return r, fmt.Errorf("XValidation %s: %w", key, err)
		}
		value, err := strconv.Unquote(quoted)
		if err != nil {
			return r, err
		}
		switch key {
		case "rule":
			r.Rule = value
		case "message":
			r.Message = value
		default:
			return r, fmt.Errorf("XValidation argument %s is not one the reference knows", key)
		}
		args = strings.TrimPrefix(rest[len(quoted):], ",")
	}
	if r.Rule == "" {
		return r, fmt.Errorf("XValidation without a rule")
	}
	return r, nil
}

// unquoteMarker reads a marker value that may be quoted ("..." or `...`).
func unquoteMarker(v string) (string, error) {
	if strings.HasPrefix(v, "`") || strings.HasPrefix(v, `"`) {
		return strconv.Unquote(v)
	}
	return v, nil
}

// merge adds o's validation to v (a type's markers under a field's).
func (v validation) merge(o validation) validation {
	if len(o.Enum) > 0 {
		v.Enum = o.Enum
	}
	if o.Pattern != "" {
		v.Pattern = o.Pattern
	}
	if o.Default != "" {
		v.Default = o.Default
	}
	for _, p := range []struct{ dst, src **int64 }{
		{&v.MinLength, &o.MinLength}, {&v.MaxLength, &o.MaxLength}, {&v.MinItems, &o.MinItems},
		{&v.MaxItems, &o.MaxItems}, {&v.MinProperties, &o.MinProperties}, {&v.Minimum, &o.Minimum}, {&v.Maximum, &o.Maximum},
	} {
		if *p.src != nil {
			*p.dst = *p.src
		}
	}
	if o.ListType != "" {
		v.ListType = o.ListType
	}
	v.ListMapKeys = slices.Concat(v.ListMapKeys, o.ListMapKeys)
	v.Rules = slices.Concat(v.Rules, o.Rules)
	return v
}
