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

package clc

import (
	"fmt"
	"net/url"
	"reflect"

	v3types "github.com/coreos/ignition/v2/config/v3_3/types"
	v2types "github.com/flatcar/ignition/config/v2_3/types"
	"k8s.io/utils/ptr"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/optional"
)

// v2to3 translates an Ignition 2.3 config, as Flatcar's Container Linux Config transpiler emits
// it, to Ignition 3.3.0 (docs/adr/013). Most of 2.x is said differently in 3.x rather than not at
// all: filesystems by path instead of by name, networkd units as files, a user's create section
// as the user's own fields, file defaults made explicit. Where 3.x cannot say what Ignition 2
// did, the entry is refused with its place in the document; where it says something slightly
// different, the translation carries a warning. Nothing is dropped silently.
type v2to3 struct {
	at locator
	// seen counts the entries of a list met so far with a name, to locate the nth of them.
	seen map[string]int
	// filesystems are the 2.x filesystems by name; as in Ignition 2, the last of a name wins.
	filesystems map[string]v2types.Filesystem
	warnings    []Warning
}

// translateV2 translates in to spec 3.3.0; at locates its entries in the document the
// transpiler read (the zero locator leaves every position unknown).
func translateV2(in v2types.Config, at locator) (v3types.Config, []Warning, *Error) {
	t := &v2to3{at: at, seen: map[string]int{}, filesystems: map[string]v2types.Filesystem{}}
	out := v3types.Config{Ignition: v3types.Ignition{Version: SpecVersion}}
	steps := []func(v2types.Config, *v3types.Config) *Error{
		t.ignitionSection, t.storage, t.systemd, t.passwd,
	}
	for _, step := range steps {
		if cerr := step(in, &out); cerr != nil {
			return v3types.Config{}, nil, cerr
		}
	}
	return out, t.warnings, nil
}

// ref names the next entry of list with the given name.
func (t *v2to3) ref(list docList, value string) entryRef {
	k := fmt.Sprint(list.path, "\x00", value)
	n := t.seen[k]
	t.seen[k] = n + 1
	return entryRef{list: list, value: value, nth: n}
}

// fail is an error about the entry r (or sub inside it).
func (t *v2to3) fail(r entryRef, sub []any, format string, args ...any) *Error {
	return errorAt(t.at.at(r, sub...), format, args...)
}

// warn notes that the entry r (or sub inside it) means something slightly different in 3.x.
func (t *v2to3) warn(r entryRef, sub []any, format string, args ...any) {
	t.warnings = append(t.warnings, warningAt(t.at.at(r, sub...), format, args...))
}

// ignitionSection translates config references (append becomes merge), timeouts and the
// certificate authorities.
func (t *v2to3) ignitionSection(in v2types.Config, out *v3types.Config) *Error {
	for _, a := range in.Ignition.Config.Append {
		r := t.ref(listConfigAppend, a.Source)
		res, cerr := t.resource(r, []any{"source"}, a.Source, "", a.Verification)
		if cerr != nil {
			return cerr
		}
		out.Ignition.Config.Merge = append(out.Ignition.Config.Merge, res)
	}
	if rep := in.Ignition.Config.Replace; rep != nil {
		r := t.ref(listConfigReplace, "")
		res, cerr := t.resource(r, []any{"source"}, rep.Source, "", rep.Verification)
		if cerr != nil {
			return cerr
		}
		out.Ignition.Config.Replace = res
	}
	out.Ignition.Timeouts = v3types.Timeouts{
		HTTPResponseHeaders: in.Ignition.Timeouts.HTTPResponseHeaders,
		HTTPTotal:           in.Ignition.Timeouts.HTTPTotal,
	}
	for _, ca := range in.Ignition.Security.TLS.CertificateAuthorities {
		r := t.ref(listCAs, ca.Source)
		res, cerr := t.resource(r, []any{"source"}, ca.Source, "", ca.Verification)
		if cerr != nil {
			return cerr
		}
		out.Ignition.Security.TLS.CertificateAuthorities = append(out.Ignition.Security.TLS.CertificateAuthorities, res)
	}
	return nil
}

// resource translates a 2.x source with its compression and verification. Ignition 2 reads
// oem:// from the OEM partition; Ignition 3 has no such scheme.
func (t *v2to3) resource(r entryRef, sub []any, source, compression string, v v2types.Verification) (v3types.Resource, *Error) {
	var res v3types.Resource
	if source != "" {
		if u, err := url.Parse(source); err == nil && u.Scheme == "oem" {
			return res, t.fail(r, sub, "source %s: Ignition 3 has no oem:// scheme (Ignition 2 read it from the OEM partition): "+
				"put the contents inline or fetch them over https", source)
		}
		res.Source = ptr.To(source)
	}
	res.Compression = optional.String(compression)
	res.Verification.Hash = optional.Copy(v.Hash)
	return res, nil
}

// passwd translates users and groups. A user's deprecated create section holds the fields
// Ignition 2 used in its place (a user with create has none of its own), so they become the
// user's fields, as Ignition 2 itself did.
func (t *v2to3) passwd(in v2types.Config, out *v3types.Config) *Error {
	var users []located[v3types.PasswdUser]
	for _, u := range in.Passwd.Users {
		r := t.ref(listUsers, u.Name)
		u3 := v3types.PasswdUser{
			Name:         u.Name,
			PasswordHash: u.PasswordHash,
			UID:          u.UID,
			Gecos:        optional.String(u.Gecos),
			HomeDir:      optional.String(u.HomeDir),
			NoCreateHome: optional.True(u.NoCreateHome),
			PrimaryGroup: optional.String(u.PrimaryGroup),
			NoUserGroup:  optional.True(u.NoUserGroup),
			NoLogInit:    optional.True(u.NoLogInit),
			Shell:        optional.String(u.Shell),
			System:       optional.True(u.System),
		}
		for _, k := range u.SSHAuthorizedKeys {
			u3.SSHAuthorizedKeys = append(u3.SSHAuthorizedKeys, v3types.SSHAuthorizedKey(k))
		}
		for _, g := range u.Groups {
			u3.Groups = append(u3.Groups, v3types.Group(g))
		}
		if c := u.Create; c != nil {
			u3.UID, u3.Gecos, u3.HomeDir = c.UID, optional.String(c.Gecos), optional.String(c.HomeDir)
			u3.NoCreateHome, u3.PrimaryGroup, u3.NoUserGroup = optional.True(c.NoCreateHome), optional.String(c.PrimaryGroup), optional.True(c.NoUserGroup)
			u3.NoLogInit, u3.Shell, u3.System = optional.True(c.NoLogInit), optional.String(c.Shell), optional.True(c.System)
			u3.Groups = nil
			for _, g := range c.Groups {
				u3.Groups = append(u3.Groups, v3types.Group(g))
			}
		}
		users = append(users, located[v3types.PasswdUser]{u3, r})
	}
	var cerr *Error
	if out.Passwd.Users, cerr = dedupe(t, users, func(u v3types.PasswdUser) string { return u.Name }, "user"); cerr != nil {
		return cerr
	}

	var groups []located[v3types.PasswdGroup]
	for _, g := range in.Passwd.Groups {
		groups = append(groups, located[v3types.PasswdGroup]{v3types.PasswdGroup{
			Name: g.Name, Gid: g.Gid, PasswordHash: optional.String(g.PasswordHash), System: optional.True(g.System),
		}, t.ref(listGroups, g.Name)})
	}
	out.Passwd.Groups, cerr = dedupe(t, groups, func(g v3types.PasswdGroup) string { return g.Name }, "group")
	return cerr
}

// located is a translated entry with the entry of the document it came from.
type located[T any] struct {
	v   T
	ref entryRef
}

// dedupe keeps one entry per key. Ignition 2 applied every entry in turn; Ignition 3 refuses two
// entries with one key. Equal entries are one; different ones are refused at the later one, as
// no single 3.x entry says what applying both did.
func dedupe[T any](t *v2to3, entries []located[T], key func(T) string, what string) ([]T, *Error) {
	var out []T
	first := map[string]int{}
	for _, e := range entries {
		k := key(e.v)
		i, dup := first[k]
		if !dup {
			first[k] = len(out)
			out = append(out, e.v)
			continue
		}
		if !reflect.DeepEqual(out[i], e.v) {
			return nil, t.fail(e.ref, nil, "%s %s is defined again, differently: Ignition 3 takes one entry per %s; merge the two", what, k, what)
		}
	}
	return out, nil
}
