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

package convert

import (
	"fmt"
	"slices"
	"strings"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
)

// sudoersMode is the mode sudo wants for its drop-ins (it ignores writable ones).
const sudoersMode = "0440"

// sudoRule is a user's sudo rule as a file, with the source path for findings.
type sudoRule struct {
	path string
	file cabpiv1.File
}

// convertUsers maps users onto Ignition's passwd users; sudo rules become files under
// /etc/sudoers.d. cloudConfig says the source's meaning is cloud-init's, where a password is
// locked unless lockPassword is false.
func convertUsers(src []kubeadmv1.User, cloudConfig bool, f *findings) ([]cabpiv1.User, []sudoRule) {
	var users []cabpiv1.User
	var sudo []sudoRule
	for i, s := range src {
		path := fmt.Sprintf("users[%d]", i)
		u := cabpiv1.User{
			Name:              s.Name,
			Gecos:             s.Gecos,
			HomeDir:           s.HomeDir,
			Shell:             s.Shell,
			PrimaryGroup:      s.PrimaryGroup,
			Groups:            splitGroups(s.Groups),
			PasswordHash:      s.Passwd,
			SSHAuthorizedKeys: s.SSHAuthorizedKeys,
		}
		if s.PasswdFrom.IsDefined() {
			u.PasswordHashFrom = &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: s.PasswdFrom.Secret.Name, Key: s.PasswdFrom.Secret.Key}}
		}
		hasPassword := s.Passwd != "" || s.PasswdFrom.IsDefined()
		if s.Inactive != nil && *s.Inactive {
			f.lossy(path+".inactive", "Ignition has no account expiry: the user is created active")
		}
		switch {
		case s.LockPassword != nil && !*s.LockPassword:
			f.lossy(path+".lockPassword", "Ignition has no password lock, and cabpi does not open sshd to password login (CABPK's Ignition wrote an sshd_config for it): add an sshd drop-in in spec.butane if password login over SSH is needed")
		case hasPassword && (cloudConfig || s.LockPassword != nil):
			// cloud-init locks a password unless lockPassword is false; Ignition cannot.
			f.lossy(path+".lockPassword", "the password is locked in the source (lockPassword unset or true); Ignition cannot lock a password it sets, so it will work on the console: remove passwd/passwdFrom to keep password login off")
		}
		users = append(users, u)
		if s.Sudo != "" {
			sudo = append(sudo, sudoRule{path: path + ".sudo", file: cabpiv1.File{
				Path:        "/etc/sudoers.d/" + s.Name,
				Owner:       "root:root",
				Permissions: sudoersMode,
				Content:     s.Name + " " + s.Sudo + "\n",
			}})
		}
	}
	return users, sudo
}

// splitGroups splits CABPK's comma-separated groups ("docker, wheel") into a list.
func splitGroups(groups string) []string {
	var out []string
	for g := range strings.SplitSeq(groups, ",") {
		if g = strings.TrimSpace(g); g != "" && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}
