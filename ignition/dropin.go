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
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition/internal/fspath"
)

// The drop-in directories systemd reads for kubeadm.service under /etc/systemd/system: the
// unit's own and service.d, which applies to every service. Users (and the cloud providers'
// Flatcar templates) add ordering, dependencies and environment there, so drop-ins are allowed;
// only what would break the bootstrap contract is refused (docs/adr/008-kubeadm-unit-drop-ins.md).
var kubeadmDropinDirs = []string{
	systemdUnitDir + "/" + KubeadmUnitName + ".d",
	systemdUnitDir + "/service.d",
}

// refusedDirectives are the [Service] settings a drop-in may not set, with why.
var refusedDirectives = map[string]string{
	"Type":              "the unit must stay a oneshot that finishes when kubeadm does",
	"ExecStart":         "it replaces or adds to the command that runs kubeadm and writes the bootstrap sentinel",
	"RemainAfterExit":   "the unit must stay active after the bootstrap so that it runs once",
	"User":              "kubeadm must run as root",
	"Group":             "kubeadm must run as root",
	"DynamicUser":       "kubeadm must run as root",
	"RootDirectory":     "the bootstrap must run in the node's own root",
	"RootImage":         "the bootstrap must run in the node's own root",
	"SuccessExitStatus": "a failed bootstrap would count as a success",
	"ExecStopPost":      "it also runs after a failed bootstrap, and could claim success",
}

// refusedEnvironment are variables that change how bash runs the bootstrap script before its
// first line (a startup file, shell options), where the script cannot undo them.
var refusedEnvironment = []string{"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS"}

// kubeadmDropinPath reports whether systemd reads the clean path p as a drop-in of
// kubeadm.service: a *.conf file directly in one of the drop-in directories.
func kubeadmDropinPath(p string) bool {
	return strings.HasSuffix(p, ".conf") && slices.Contains(kubeadmDropinDirs, path.Dir(p))
}

// inKubeadmDropinDir reports whether the clean path p is inside a drop-in directory of
// kubeadm.service, at any depth.
func inKubeadmDropinDir(p string) bool {
	return slices.ContainsFunc(kubeadmDropinDirs, func(dir string) bool { return fspath.Below(p, dir) })
}

// checkDropin parses a drop-in of kubeadm.service with systemd's unit syntax and returns why it
// is refused, or "". It is refused when it cannot be parsed, when it sets a refused directive,
// when it resets the ConditionPathExists guard that keeps kubeadm from running twice, or when
// its environment changes how bash starts.
func checkDropin(p string, content []byte) string {
	opts, err := unit.DeserializeOptions(bytes.NewReader(content))
	if err != nil {
		return fmt.Sprintf("the drop-in %s is not a systemd unit file: %v", p, err)
	}
	for _, o := range opts {
		if problem := checkDropinOption(o); problem != "" {
			return fmt.Sprintf("the drop-in %s for %s sets %s=%s in [%s]: %s; a drop-in may add ordering, dependencies and environment",
				p, KubeadmUnitName, o.Name, o.Value, o.Section, problem)
		}
	}
	return ""
}

func checkDropinOption(o *unit.UnitOption) string {
	switch o.Section {
	case "Unit":
		// systemd clears every condition on an empty assignment of any Condition*= key, the
		// guard included (and every assertion on an empty Assert*=).
		if strings.HasPrefix(o.Name, "Condition") && strings.TrimSpace(o.Value) == "" {
			return fmt.Sprintf("an empty %s= resets every condition, the guard ConditionPathExists=%s included, and kubeadm would run again on every boot",
				o.Name, KubeadmConfigPath)
		}
	case "Service":
		if why, refused := refusedDirectives[o.Name]; refused {
			return why
		}
		if o.Name == "Environment" {
			for _, name := range refusedEnvironment {
				if assignsVariable(o.Value, name) {
					return fmt.Sprintf("%s changes how bash runs the bootstrap script", name)
				}
			}
		}
	}
	return ""
}

// assignsVariable reports whether an Environment= value assigns name. systemd separates
// assignments by spaces and lets quotes group them; an assignment may start right after a
// separator or an opening quote, which is all that matters here.
func assignsVariable(value, name string) bool {
	prefix := name + "="
	for i := 0; i < len(value); i++ {
		atStart := i == 0 || strings.ContainsRune(" \t\"'", rune(value[i-1]))
		if atStart && strings.HasPrefix(value[i:], prefix) {
			return true
		}
	}
	return false
}

// systemd's own configuration: its DefaultEnvironment= is every service's environment,
// kubeadm.service's included.
const (
	managerConfigFile = "/etc/systemd/system.conf"
	managerConfigDir  = "/etc/systemd/system.conf.d"
)

// managerConfigPath reports whether systemd reads the clean path p as its configuration.
func managerConfigPath(p string) bool {
	return p == managerConfigFile || (path.Dir(p) == managerConfigDir && strings.HasSuffix(p, ".conf"))
}

// checkManagerConfig returns why systemd configuration at p is refused, or "": a
// DefaultEnvironment= that sets a variable changing how bash starts the bootstrap script.
func checkManagerConfig(p string, content []byte) string {
	opts, err := unit.DeserializeOptions(bytes.NewReader(content))
	if err != nil {
		return fmt.Sprintf("%s, which is not a systemd configuration file: %v", p, err)
	}
	for _, o := range opts {
		if o.Section != "Manager" || o.Name != "DefaultEnvironment" {
			continue
		}
		for _, name := range refusedEnvironment {
			if assignsVariable(o.Value, name) {
				return fmt.Sprintf("%s, which sets %s for every service with DefaultEnvironment=: it changes how bash runs the bootstrap script of %s",
					p, name, KubeadmUnitName)
			}
		}
	}
	return ""
}
