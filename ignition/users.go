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

package ignition

import (
	"fmt"
	"path"
	"strings"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// passwdSeparators separate the fields (':') and the entries (newlines) of /etc/passwd and
// /etc/group. useradd, which Ignition creates users with, refuses a field that holds one, and
// Ignition then fails the boot. groupListSeparator separates the supplementary groups useradd
// takes as one list (--groups): a group name with one would be read as two groups.
const (
	passwdSeparators   = ":\n\r"
	groupListSeparator = ","
)

// checkUsers refuses the user fields useradd refuses at boot: a name, GECOS, home directory,
// shell or primary group with a ':' or a line break, and a supplementary group with one or a
// ','. Each field at fault is reported.
func checkUsers(users []User) []*Error {
	var errs []*Error
	refuse := func(i int, member Member, what, value string, listed bool) {
		separators, also := passwdSeparators, ""
		if listed {
			separators, also = passwdSeparators+groupListSeparator, " or a ','"
		}
		if strings.ContainsAny(value, separators) {
			errs = append(errs, errorf(ErrInvalidInput, Entry(PartUser, i, member),
				"%s holds a ':' or a line break%s, which separate the fields and entries of /etc/passwd and /etc/group "+
					"and useradd's list of groups: useradd refuses it at boot and Ignition fails the boot", what, also).withValue(value))
		}
	}
	for i, u := range users {
		for _, f := range []struct {
			member Member
			value  string
		}{{UserName, u.Name}, {UserGecos, u.Gecos}, {UserHomeDir, u.HomeDir}, {UserShell, u.Shell}, {UserPrimaryGroup, u.PrimaryGroup}} {
			refuse(i, f.member, string(f.member), f.value, false)
		}
		for j, g := range u.Groups {
			refuse(i, UserGroups, fmt.Sprintf("groups[%d]", j), g, true)
		}
	}
	return errs
}

// foreignSysextWarnings warn of a Kubernetes system extension the input brings itself, under
// source image, at another version than the one rendered for: Cluster API compares the
// kubelet's version with the Machine's spec.version exactly, so such a node never matches its
// Machine. Files and links named in the sysext layout (kubernetes-v1.33.0-x86-64.raw), by their
// path, link target or download URL, are looked at. A warning rather than an error: the version
// rendered for may be a stand-in (admission before the owner is known).
func foreignSysextWarnings(in *Input, snip *snippet) []Warning {
	if kubernetesSource(in.Kubernetes) != cabpiv1.KubernetesSourceImage {
		return nil
	}
	want := "v" + strings.TrimPrefix(in.KubernetesVersion, "v")
	var out []Warning
	seen := map[string]bool{}
	look := func(at Place, name string) {
		version, _, ok := ParseSysextImageName(path.Base(name))
		key := at.String() + "\x00" + version
		if !ok || version == want || seen[key] {
			return
		}
		seen[key] = true
		out = append(out, Warning{Kind: WarnKubernetesVersionMismatch, Place: at, Message: fmt.Sprintf(
			"brings its own Kubernetes system extension %s, of Kubernetes %s, while the node is rendered for Kubernetes %s: "+
				"Cluster API compares the kubelet's version with the Machine's spec.version exactly; "+
				"use spec.kubernetes.source sysext, which installs the Machine's version, or bring that version",
			path.Base(name), version, want)})
	}
	for i, f := range in.Files {
		look(Entry(PartFile, i, FilePath), f.Path)
	}
	if snip == nil {
		return out
	}
	at := snip.source.place()
	for _, f := range snip.config.Storage.Files {
		look(at, f.Path)
		if src := f.Contents.Source; src != nil && !strings.HasPrefix(*src, "data:") {
			look(at, *src)
		}
	}
	for _, l := range snip.config.Storage.Links {
		look(at, l.Path)
		if l.Target != nil {
			look(at, *l.Target)
		}
	}
	return out
}

// twiceDefinedUserWarnings warn of a user that both the input's users and the snippet define:
// Ignition merges the two entries silently, the snippet's fields winning where both set one (a
// password hash, a shell), so one of the two definitions is not what the node gets.
func twiceDefinedUserWarnings(in *Input, snip *snippet) []Warning {
	if snip == nil {
		return nil
	}
	var out []Warning
	for i, u := range in.Users {
		for _, su := range snip.config.Passwd.Users {
			if su.Name == u.Name {
				out = append(out, Warning{Kind: WarnUserDefinedTwice, Place: Entry(PartUser, i, UserName), Message: fmt.Sprintf(
					"user %q is defined in %s (%s) too: Ignition merges the two, and where both set a field the snippet's wins; "+
						"define the user in one place", u.Name, snip.source.name, snip.source.place())})
				break
			}
		}
	}
	return out
}
