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

package catalogue_test

import (
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/fixtures"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

// badInput is one entry of the catalogue: an IgnitionConfig (and what it refers to) that must
// not become bootstrap data, with the outcome a user sees. Exactly one of rejected (admission)
// and reason (reconcile) is set.
type badInput struct {
	name string
	// spec is the config's spec.
	spec cabpiv1.IgnitionConfigSpec
	// controlPlaneLabel puts the control-plane label on the config itself (the webhook then
	// validates it as a control-plane node).
	controlPlaneLabel bool
	// ownerVersion (admission only) creates a Machine of this Kubernetes version first and
	// creates the config with an owner reference to it: the webhook reads the owner's version
	// at create.
	ownerVersion string

	// secrets and configMaps are created (key -> value) in the case's namespace before the
	// config: what spec.butane.contentFrom and spec.files[].contentFrom read. Their names are
	// unique over the catalogue.
	secrets    map[string]map[string]string
	configMaps map[string]map[string]string
	// foreign, when set, is created before the config under the config's name (namespace and
	// name are filled in): a Secret that is not the config's, which must be left unchanged.
	foreign *corev1.Secret
	// setup creates anything else the case needs before the config (ns, name: the config's).
	setup func(t *testing.T, ns, name string)
	// cluster gives the case a Cluster of its own set up this way; nil is the shared healthy
	// Cluster (reconcile-side cases only: admission cases need no Cluster).
	cluster *fixtures.ClusterSetup
	// machine edits the Machine of a reconcile-side case (its version, labels).
	machine func(*clusterv1.Machine)

	// rejected: the API server refuses the config with status (Invalid when empty) and at
	// least these causes.
	rejected []cause
	status   metav1.StatusReason
	// reason and message: the config is stored, and after reconcile DataSecretAvailable is
	// False with reason and a message containing message, and Ready is False.
	reason, message string

	// secret is a credential in the input that no error or condition message may repeat.
	secret string
}

// Butane snippets.
const flatcarHeader = "variant: flatcar\nversion: 1.0.0\n"

// flatcar is a flatcar 1.0.0 Butane document with body.
func flatcar(body string) string { return flatcarHeader + body }

// dropin is a flatcar Butane document adding a drop-in with contents to kubeadm.service.
func dropin(contents string) string {
	return flatcar(fmt.Sprintf("systemd:\n  units:\n  - name: kubeadm.service\n    dropins:\n    - name: 10-x.conf\n      contents: %q\n", contents))
}

// fileWith is a flatcar Butane document writing one file at path with inline contents.
func fileWith(path, contents string) string {
	return flatcar(fmt.Sprintf("storage:\n  files:\n  - path: %s\n    contents:\n      inline: %q\n", path, contents))
}

// linkedDropinDir is a flatcar Butane document that makes the drop-in directory dir of
// /etc/systemd/system a symbolic link to /opt/dropins and writes there a drop-in that replaces
// ExecStart with a command writing the bootstrap sentinel.
func linkedDropinDir(dir string) string {
	return flatcar("storage:\n  links:\n  - path: /etc/systemd/system/" + dir + "\n    target: /opt/dropins\n" +
		"  files:\n  - path: /opt/dropins/10-x.conf\n    contents:\n      inline: " +
		fmt.Sprintf("%q", "[Service]\nExecStart=\nExecStart=/bin/sh -c \"mkdir -p /run/cluster-api && touch /run/cluster-api/bootstrap-success.complete\"\n") + "\n")
}

// Specs.

func inline(doc string) cabpiv1.IgnitionConfigSpec {
	return cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Inline: doc}}
}

func files(fs ...cabpiv1.File) cabpiv1.IgnitionConfigSpec {
	return cabpiv1.IgnitionConfigSpec{Files: fs}
}

func file(path, content string) cabpiv1.File {
	return cabpiv1.File{Path: path, Content: content}
}

// secretFile is a file whose content is key "value" of Secret name.
func secretFile(path, name string) cabpiv1.File {
	return cabpiv1.File{Path: path, ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: name, Key: "value"}}}
}

// snippetFromSecret reads the Butane document from key "config.bu" of Secret name.
func snippetFromSecret(name string) cabpiv1.IgnitionConfigSpec {
	return cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{ContentFrom: &cabpiv1.ButaneSource{
		Secret: &cabpiv1.KeyReference{Name: name, Key: "config.bu"}}}}
}

// snippetFromConfigMap reads the Butane document from key "config.bu" of ConfigMap name.
func snippetFromConfigMap(name string) cabpiv1.IgnitionConfigSpec {
	return cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{ContentFrom: &cabpiv1.ButaneSource{
		ConfigMap: &cabpiv1.KeyReference{Name: name, Key: "config.bu"}}}}
}

// butaneData is the data of a Secret or ConfigMap holding doc under "config.bu".
func butaneData(name, doc string) map[string]map[string]string {
	return map[string]map[string]string{name: {"config.bu": doc}}
}

// clcFromSecret reads a Container Linux Config from key "config.yaml" of Secret name.
func clcFromSecret(name string) cabpiv1.IgnitionConfigSpec {
	return cabpiv1.IgnitionConfigSpec{ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{ContentFrom: &cabpiv1.ButaneSource{
		Secret: &cabpiv1.KeyReference{Name: name, Key: "config.yaml"}}}}
}

// clcData is the data of a Secret holding doc under "config.yaml".
func clcData(name, doc string) map[string]map[string]string {
	return map[string]map[string]string{name: {"config.yaml": doc}}
}

// catalogue is every bad input. Admission cases come first: they are answered at once. Then the
// reconcile-side cases, which the webhook cannot stop (it does not read what contentFrom names,
// nor the Cluster, nor the Machine created after the config).
func catalogue() []badInput {
	// Random text, which gzip cannot shrink below a Secret's limit (file contents are compressed).
	rnd := rand.New(rand.NewPCG(12, 1))
	raw := make([]byte, 450*1024)
	for i := range raw {
		raw[i] = byte(rnd.Uint32())
	}
	big := base64.StdEncoding.EncodeToString(raw)
	var many []cabpiv1.File
	for i := range 201 {
		many = append(many, file(fmt.Sprintf("/opt/many/%d", i), "x"))
	}
	controlPlaneMachine := func(m *clusterv1.Machine) { m.Labels[clusterv1.MachineControlPlaneLabel] = "" }

	return []badInput{
		// ---- Admission: the Butane snippet (webhook, field spec.butane.inline). ----
		{name: "butane: YAML syntax error", spec: inline(flatcar("storage:\n  files: [\n")),
			rejected: []cause{{"spec.butane.inline", "not valid YAML"}, {"spec.butane.inline", "(line 4)"}}},
		{name: "butane: wrongly typed value", spec: inline(flatcar("storage:\n  files:\n  - path: /etc/x\n    mode: abc\n")),
			rejected: []cause{{"spec.butane.inline", "line 6"}}},
		{name: "butane: strict with an unused key",
			spec:     cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Strict: true, Inline: flatcar("storage:\n  filez:\n  - path: /etc/x\n")}},
			rejected: []cause{{"spec.butane.inline", "unused key filez (line 4, column 3)"}}},
		{name: "butane: another variant", spec: inline("variant: fcos\nversion: 1.5.0\n"),
			rejected: []cause{{"spec.butane.inline", `Butane variant "fcos" does not match the config's variant "flatcar" (line 1, column 10)`}}},
		{name: "butane: unknown variant", spec: inline("variant: ubuntu\nversion: 1.0.0\n"),
			rejected: []cause{{"spec.butane.inline", `unknown Butane variant "ubuntu"`}}},
		{name: "butane: unknown version", spec: inline("variant: flatcar\nversion: 9.9.9\n"),
			rejected: []cause{{"spec.butane.inline", "version 9.9.9 (line 2, column 10)"}}},
		{name: "butane: experimental version",
			spec:     cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFCOS, Butane: cabpiv1.ButaneSpec{Inline: "variant: fcos\nversion: 1.8.0-experimental\n"}},
			rejected: []cause{{"spec.butane.inline", "not a stable version supported for fcos"}}},
		{name: "butane: no version", spec: inline("variant: flatcar\n"),
			rejected: []cause{{"spec.butane.inline", "no version"}}},
		{name: "butane: writes /etc/kubeadm.yml", spec: inline(fileWith("/etc/kubeadm.yml", "x")),
			rejected: []cause{{"spec.butane.inline", "conflicts with /etc/kubeadm.yml written by the provider"}}},
		{name: "butane: links the bootstrap sentinel",
			spec:     inline(flatcar("storage:\n  links:\n  - path: /run/cluster-api/bootstrap-success.complete\n    target: /dev/null\n")),
			rejected: []cause{{"spec.butane.inline", "conflicts with /run/cluster-api/bootstrap-success.complete"}}},
		{name: "butane: disables kubeadm.service", spec: inline(flatcar("systemd:\n  units:\n  - name: kubeadm.service\n    enabled: false\n")),
			rejected: []cause{{"spec.butane.inline", "disables unit kubeadm.service, which the provider owns"}}},
		{name: "butane: masks kubeadm.service", spec: inline(flatcar("systemd:\n  units:\n  - name: kubeadm.service\n    mask: true\n")),
			rejected: []cause{{"spec.butane.inline", "masks unit kubeadm.service"}}},
		{name: "butane: disables a unit glob matching kubeadm.service", spec: inline(flatcar("systemd:\n  units:\n  - name: kube*.service\n    enabled: false\n")),
			rejected: []cause{{"spec.butane.inline", "kube*.service, which matches kubeadm.service"}}},
		{name: "butane drop-in: ExecStart", spec: inline(dropin("[Service]\nExecStart=\nExecStart=/bin/true\n")),
			rejected: []cause{{"spec.butane.inline", "sets ExecStart= in [Service]"}}},
		{name: "butane drop-in: Type", spec: inline(dropin("[Service]\nType=simple\n")),
			rejected: []cause{{"spec.butane.inline", "sets Type=simple in [Service]"}}},
		{name: "butane drop-in: User", spec: inline(dropin("[Service]\nUser=core\n")),
			rejected: []cause{{"spec.butane.inline", "sets User=core in [Service]: kubeadm must run as root"}}},
		{name: "butane drop-in: empty ConditionPathExists=", spec: inline(dropin("[Unit]\nConditionPathExists=\n")),
			rejected: []cause{{"spec.butane.inline", "guard ConditionPathExists=/etc/kubeadm.yml included"}}},
		{name: "butane drop-in: empty ConditionFileNotEmpty=", spec: inline(dropin("[Unit]\nConditionFileNotEmpty=\n")),
			rejected: []cause{{"spec.butane.inline", "an empty ConditionFileNotEmpty= resets every condition"}}},
		{name: "butane drop-in: BASH_ENV", spec: inline(dropin("[Service]\nEnvironment=\"A=1\" \"BASH_ENV=/opt/x\"\n")),
			rejected: []cause{{"spec.butane.inline", "BASH_ENV changes how bash runs the bootstrap script"}}},
		{name: "butane drop-in: SuccessExitStatus", spec: inline(dropin("[Service]\nSuccessExitStatus=1\n")),
			rejected: []cause{{"spec.butane.inline", "a failed bootstrap would count as a success"}}},
		{name: "butane drop-in: not a unit file", spec: inline(dropin("[Service\nUser=core\n")),
			rejected: []cause{{"spec.butane.inline", "invalid unit content"}}},
		{name: "butane: drop-in file for every service", spec: inline(fileWith("/etc/systemd/system/service.d/10-x.conf", "[Service]\nExecStart=\n")),
			rejected: []cause{{"spec.butane.inline", "drop-in /etc/systemd/system/service.d/10-x.conf for kubeadm.service sets ExecStart= in [Service]"}}},
		{name: "butane: drop-in from a remote source",
			spec:     inline(flatcar("storage:\n  files:\n  - path: /etc/systemd/system/kubeadm.service.d/10-x.conf\n    contents:\n      source: https://example.com/10-x.conf\n")),
			rejected: []cause{{"spec.butane.inline", "cannot be checked"}}},
		{name: "butane: kubeadm.service in system.control",
			spec:     inline(flatcar("storage:\n  links:\n  - path: /etc/systemd/system.control/kubeadm.service\n    target: /dev/null\n")),
			rejected: []cause{{"spec.butane.inline", "/etc/systemd/system.control/kubeadm.service"}}},
		{name: "butane: preset disabling every unit", spec: inline(fileWith("/etc/systemd/system-preset/10-x.preset", "disable *\n")),
			rejected: []cause{{"spec.butane.inline", `line "disable *" disables kubeadm.service`}}},
		{name: "butane: Ignition's own preset file", spec: inline(flatcar("storage:\n  files:\n  - path: /etc/systemd/system-preset/20-ignition.preset\n")),
			rejected: []cause{{"spec.butane.inline", "20-ignition.preset"}}},
		{name: "butane: hard link to /etc/kubeadm.yml",
			spec:     inline(flatcar("storage:\n  links:\n  - path: /etc/x\n    target: /etc/kubeadm.yml\n    hard: true\n")),
			rejected: []cause{{"spec.butane.inline", "hard link at /etc/x to /etc/kubeadm.yml"}}},
		// BUG (fails until fixed): a link at a drop-in directory itself is not refused, only links
		// inside it. Through it a drop-in nobody checked replaces ExecStart; the boot simulation
		// shows kubeadm.service writing the sentinel without ever running kubeadm. Expected: refused
		// like a link inside the directory, "what a link points to cannot be checked".
		{name: "butane: link at the kubeadm.service.d directory", spec: inline(linkedDropinDir("kubeadm.service.d")),
			rejected: []cause{{"spec.butane.inline", "link at /etc/systemd/system/kubeadm.service.d"}, {"spec.butane.inline", "cannot be checked"}}},
		{name: "butane: link at the service.d directory", spec: inline(linkedDropinDir("service.d")),
			rejected: []cause{{"spec.butane.inline", "link at /etc/systemd/system/service.d"}, {"spec.butane.inline", "cannot be checked"}}},
		{name: "butane: replaces the whole config",
			spec:     inline(flatcar("ignition:\n  config:\n    replace:\n      source: https://example.invalid/config.ign\n")),
			rejected: []cause{{"spec.butane.inline", "would discard the bootstrap configuration"}}},
		{name: "butane: local file", spec: inline(flatcar("storage:\n  files:\n  - path: /etc/x\n    contents:\n      local: x\n")),
			rejected: []cause{{"spec.butane.inline", "files directory"}}},
		{name: "butane: directory path with a semicolon", spec: inline(flatcar("storage:\n  directories:\n  - path: /opt/a;b\n")),
			rejected: []cause{{"spec.butane.inline", `directory path "/opt/a;b" contains ';'`}}},
		{name: "butane: writes a file of spec.files",
			spec:     cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Inline: flatcar("storage:\n  files:\n  - path: /etc/app.conf\n")}, Files: []cabpiv1.File{file("/etc/app.conf", "x")}},
			rejected: []cause{{"spec.butane.inline", "writes /etc/app.conf, which files[0] writes too"}}},
		{name: "butane: directory at a file of spec.files",
			spec:     cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Inline: flatcar("storage:\n  directories:\n  - path: /opt/app\n")}, Files: []cabpiv1.File{file("/opt/app", "x")}},
			rejected: []cause{{"spec.butane.inline", "directory at /opt/app, where files[0] writes a file"}}},
		{name: "butane: file inside a file of spec.files",
			spec:     cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Inline: flatcar("storage:\n  files:\n  - path: /opt/app/x\n")}, Files: []cabpiv1.File{file("/opt/app", "x")}},
			rejected: []cause{{"spec.butane.inline", "is inside /opt/app, a file written by files[0]"}}},
		{name: "butane: inline and contentFrom (CEL)",
			spec: cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Inline: flatcarHeader,
				ContentFrom: &cabpiv1.ButaneSource{ConfigMap: &cabpiv1.KeyReference{Name: "butane", Key: "config.bu"}}}},
			rejected: []cause{{"spec.butane", "set either inline or contentFrom, not both"}}},
		{name: "butane: contentFrom with a Secret and a ConfigMap (CEL)",
			spec: cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{ContentFrom: &cabpiv1.ButaneSource{
				Secret:    &cabpiv1.KeyReference{Name: "butane", Key: "config.bu"},
				ConfigMap: &cabpiv1.KeyReference{Name: "butane", Key: "config.bu"}}}},
			rejected: []cause{{"spec.butane.contentFrom", "set exactly one of secret or configMap"}}},
		{name: "butane: contentFrom with neither (CEL)",
			spec:     cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{ContentFrom: &cabpiv1.ButaneSource{}}},
			rejected: []cause{{"spec.butane.contentFrom", "set exactly one of secret or configMap"}}},

		// ---- Admission: spec.files. ----
		{name: "files: relative path (schema)", spec: files(file("etc/app.conf", "x")),
			rejected: []cause{{"spec.files[0].path", "should match '^/'"}}},
		{name: "files: /etc/kubeadm.yml", spec: files(file("/etc/fine", "x"), file("/etc/kubeadm.yml", "x")),
			rejected: []cause{{"spec.files[1].path", "conflicts with /etc/kubeadm.yml written by the provider"}}},
		{name: "files: owned path spelled differently", spec: files(file("/etc/./kubeadm.sh", "x")),
			rejected: []cause{{"spec.files[0].path", "conflicts with /etc/kubeadm.sh"}}},
		{name: "files: the kubeadm.service unit", spec: files(file("/etc/systemd/system/kubeadm.service", "[Service]\n")),
			rejected: []cause{{"spec.files[0].path", "conflicts with /etc/systemd/system/kubeadm.service"}}},
		{name: "files: parent directory of the sentinel", spec: files(file("/run/cluster-api", "x")),
			rejected: []cause{{"spec.files[0].path", "conflicts with /run/cluster-api/bootstrap-success.complete"}}},
		{name: "files: owned path with content from a Secret", spec: files(secretFile("/etc/kubeadm.sh", "never-read")),
			rejected: []cause{{"spec.files[0].path", "conflicts with /etc/kubeadm.sh"}}},
		{name: "files: certificate path on a control-plane config", controlPlaneLabel: true, spec: files(file("/etc/kubernetes/pki/ca.crt", "x")),
			rejected: []cause{{"spec.files[0].path", "conflicts with /etc/kubernetes/pki/ca.crt"}}},
		{name: "files: same path twice (schema)", spec: files(file("/etc/app.conf", "x"), file("/etc/app.conf", "y")),
			rejected: []cause{{"spec.files[1]", "Duplicate value"}}},
		{name: "files: same path once cleaned", spec: files(file("/etc/app.conf", "x"), file("/etc//app.conf", "y")),
			rejected: []cause{{"spec.files[1].path", "is also written by files[0]"}}},
		{name: "files: path with a space", spec: files(file("/etc/a b", "x")),
			rejected: []cause{{"spec.files[0].path", `file path "/etc/a b" contains ' '`}}},
		{name: "files: path with a command substitution", spec: files(file("/etc/$(reboot)", "x")),
			rejected: []cause{{"spec.files[0].path", `contains '$'`}}},
		{name: "files: path with a newline", spec: files(file("/etc/a\nb", "x")),
			rejected: []cause{{"spec.files[0].path", `contains '\n'`}}},
		{name: "files: file inside another file", spec: files(file("/opt/a", "a"), file("/opt/a/b", "b")),
			rejected: []cause{{"spec.files[1].path", "file /opt/a/b (written by files[1]) is inside /opt/a, a file written by files[0]"}}},
		{name: "files: permissions not octal (schema)", spec: files(cabpiv1.File{Path: "/etc/app.conf", Content: "x", Permissions: "0999"}),
			rejected: []cause{{"spec.files[0].permissions", "should match"}}},
		{name: "files: symbolic permissions (schema)", spec: files(cabpiv1.File{Path: "/etc/app.conf", Content: "x", Permissions: "rw-r--r--"}),
			rejected: []cause{{"spec.files[0].permissions", "should match"}}},
		{name: "files: owner with a slash", spec: files(cabpiv1.File{Path: "/etc/app.conf", Content: "x", Owner: "core/x:core"}),
			rejected: []cause{{"spec.files[0].owner", "must not contain spaces or slashes"}}},
		{name: "files: owner with two colons (schema)", spec: files(cabpiv1.File{Path: "/etc/app.conf", Content: "x", Owner: "a:b:c"}),
			rejected: []cause{{"spec.files[0].owner", "should match"}}},
		{name: "files: content and contentFrom (CEL)",
			spec: files(cabpiv1.File{Path: "/etc/app.conf", Content: "x",
				ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "app", Key: "value"}}}),
			rejected: []cause{{"spec.files[0]", "set exactly one of content or contentFrom"}}},
		{name: "files: neither content nor contentFrom (CEL)", spec: files(cabpiv1.File{Path: "/etc/app.conf"}),
			rejected: []cause{{"spec.files[0]", "set exactly one of content or contentFrom"}}},
		{name: "files: drop-in running kubeadm as another user", spec: files(file("/etc/systemd/system/kubeadm.service.d/20-user.conf", "[Service]\nUser=core\n")),
			rejected: []cause{{"spec.files[0].content", "sets User=core in [Service]: kubeadm must run as root"}}},
		{name: "files: drop-in for every service replacing ExecStart", spec: files(file("/etc/systemd/system/service.d/10-x.conf", "[Service]\nExecStart=\n")),
			rejected: []cause{{"spec.files[0].content", "sets ExecStart= in [Service]"}}},
		{name: "files: drop-in that is not a unit file", spec: files(file("/etc/systemd/system/kubeadm.service.d/10-x.conf", "[Service\nUser=core\n")),
			rejected: []cause{{"spec.files[0].content", "not a systemd unit file"}}},
		{name: "files: preset disabling kubeadm.service", spec: files(file("/etc/systemd/system-preset/10-x.preset", "disable kubeadm.service\n")),
			rejected: []cause{{"spec.files[0].content", "disables kubeadm.service"}}},
		{name: "files: more than 200 (schema)", spec: files(many...),
			rejected: []cause{{"spec.files", "must have at most 200 items"}}},
		{name: "files: more than a Secret holds", spec: files(file("/opt/big-1", big), file("/opt/big-2", big)),
			rejected: []cause{{"spec", "over the 1048568 a Secret holds"}}},

		// ---- Admission: commands, each on its own index; never echoed. ----
		{name: "commands: unclosed quote after a password",
			spec:     cabpiv1.IgnitionConfigSpec{PreKubeadmCommands: []string{"echo ok", "docker login -u ci -p s3cr3t 'registry.example.com"}},
			rejected: []cause{{"spec.preKubeadmCommands[1]", "not a complete shell command"}, {"spec.preKubeadmCommands[1]", "reached EOF without closing quote"}},
			secret:   "s3cr3t"},
		{name: "commands: trailing backslash", spec: cabpiv1.IgnitionConfigSpec{PreKubeadmCommands: []string{"echo pre \\"}},
			rejected: []cause{{"spec.preKubeadmCommands[0]", "ends with a line continuation"}}},
		{name: "commands: unclosed here-document", spec: cabpiv1.IgnitionConfigSpec{PreKubeadmCommands: []string{"cat > /etc/x <<EOF\nhello"}},
			rejected: []cause{{"spec.preKubeadmCommands[0]", "unclosed here-document"}}},
		{name: "commands: if without fi", spec: cabpiv1.IgnitionConfigSpec{PreKubeadmCommands: []string{"if true; then echo x"}},
			rejected: []cause{{"spec.preKubeadmCommands[0]", "must end with `fi`"}}},
		{name: "commands: trailing &&", spec: cabpiv1.IgnitionConfigSpec{PostKubeadmCommands: []string{"echo a", "echo b &&"}},
			rejected: []cause{{"spec.postKubeadmCommands[1]", "must be followed by a statement"}}},
		{name: "commands: trailing pipe", spec: cabpiv1.IgnitionConfigSpec{PostKubeadmCommands: []string{"echo b |"}},
			rejected: []cause{{"spec.postKubeadmCommands[0]", "must be followed by a statement"}}},

		// ---- Admission: variant and Ignition version. ----
		{name: "variant: unknown (schema)", spec: cabpiv1.IgnitionConfigSpec{Variant: "ubuntu"},
			rejected: []cause{{"spec.variant", "Unsupported value"}}},
		{name: "ignitionVersion: 3.0.0 on flatcar", spec: cabpiv1.IgnitionConfigSpec{IgnitionVersion: "3.0.0"},
			rejected: []cause{{"spec.ignitionVersion", `Ignition version "3.0.0" is not supported for flatcar`}}},
		{name: "ignitionVersion: 3.6.0 on flatcar", spec: cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFlatcar, IgnitionVersion: "3.6.0"},
			rejected: []cause{{"spec.ignitionVersion", "supported: [3.3.0 3.4.0]"}}},
		{name: "ignitionVersion: 9.9.9 (schema)", spec: cabpiv1.IgnitionConfigSpec{IgnitionVersion: "9.9.9"},
			rejected: []cause{{"spec.ignitionVersion", "should match"}}},
		{name: "ignitionVersion: not x.y.z (schema)", spec: cabpiv1.IgnitionConfigSpec{IgnitionVersion: "3.4"},
			rejected: []cause{{"spec.ignitionVersion", "should match"}}},
		{name: "ignitionVersion: lower than the snippet needs",
			spec: cabpiv1.IgnitionConfigSpec{Variant: cabpiv1.VariantFCOS, IgnitionVersion: "3.0.0",
				Butane: cabpiv1.ButaneSpec{Inline: "variant: fcos\nversion: 1.5.0\n"}},
			rejected: []cause{{"spec.ignitionVersion", "lower than 3.4.0, which the Butane snippet needs"}}},

		// ---- Admission: kubeadm configuration. Tokens are credentials: never echoed. ----
		{name: "token: not kubeadm's form",
			spec: cabpiv1.IgnitionConfigSpec{JoinConfiguration: kubeadmv1.JoinConfiguration{Discovery: kubeadmv1.Discovery{
				BootstrapToken: kubeadmv1.BootstrapTokenDiscovery{Token: "NOT-A-TOKEN-s3cr3t"}}}},
			rejected: []cause{{"spec.joinConfiguration.discovery.bootstrapToken.token", "must match [a-z0-9]{6}.[a-z0-9]{16}"}},
			secret:   "s3cr3t"},
		{name: "token: upper case",
			spec: cabpiv1.IgnitionConfigSpec{JoinConfiguration: kubeadmv1.JoinConfiguration{Discovery: kubeadmv1.Discovery{
				BootstrapToken: kubeadmv1.BootstrapTokenDiscovery{Token: "ABCDEF.S3CR3TS3CR3TS3CR"}}}},
			rejected: []cause{{"spec.joinConfiguration.discovery.bootstrapToken.token", "must match [a-z0-9]{6}.[a-z0-9]{16}"}},
			secret:   "S3CR3TS3CR3TS3CR"},
		{name: "token: TLS bootstrap token not kubeadm's form",
			spec: cabpiv1.IgnitionConfigSpec{JoinConfiguration: kubeadmv1.JoinConfiguration{Discovery: kubeadmv1.Discovery{
				TLSBootstrapToken: "abcdef.s3cr3t"}}},
			rejected: []cause{{"spec.joinConfiguration.discovery.tlsBootstrapToken", "must match [a-z0-9]{6}.[a-z0-9]{16}"}},
			secret:   "s3cr3t"},
		{name: "discovery: relative kubeConfigPath",
			spec: cabpiv1.IgnitionConfigSpec{JoinConfiguration: kubeadmv1.JoinConfiguration{Discovery: kubeadmv1.Discovery{File: kubeadmv1.FileDiscovery{
				KubeConfigPath: "discovery.conf",
				KubeConfig: kubeadmv1.FileDiscoveryKubeConfig{User: kubeadmv1.KubeConfigUser{
					Exec: kubeadmv1.KubeConfigAuthExec{Command: "/opt/bin/cluster-token"}}},
			}}}},
			rejected: []cause{{"spec.joinConfiguration.discovery.file.kubeConfigPath", `"discovery.conf" is not an absolute path`}}},

		// ---- Admission: node name from metadata. ----
		{name: "nodeName: and nodeRegistration.name",
			spec: cabpiv1.IgnitionConfigSpec{NodeName: &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformOpenStack},
				JoinConfiguration: kubeadmv1.JoinConfiguration{NodeRegistration: kubeadmv1.NodeRegistrationOptions{Name: "node-1"}}},
			rejected: []cause{{"spec.nodeName", "joinConfiguration.nodeRegistration.name is set too"}}},
		{name: "nodeName: provider ID on Azure (CEL)",
			spec:     cabpiv1.IgnitionConfigSpec{NodeName: &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformAzure, ProviderID: true}},
			rejected: []cause{{"spec.nodeName", "leave providerID unset"}}},
		{name: "nodeName: provider ID and a provider-id kubelet argument",
			spec: cabpiv1.IgnitionConfigSpec{NodeName: &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformAWS, ProviderID: true},
				JoinConfiguration: kubeadmv1.JoinConfiguration{NodeRegistration: kubeadmv1.NodeRegistrationOptions{
					KubeletExtraArgs: []kubeadmv1.Arg{{Name: "provider-id", Value: ptr.To("aws:///x/i-1")}}}}},
			rejected: []cause{{"spec.nodeName.providerID", "kubeletExtraArgs sets provider-id too"}}},
		{name: "nodeName: unknown platform (schema)",
			spec:     cabpiv1.IgnitionConfigSpec{NodeName: &cabpiv1.NodeNameSource{FromMetadata: "gcp"}},
			rejected: []cause{{"spec.nodeName.fromMetadata", "Unsupported value"}}},

		// ---- Admission: the owner's Kubernetes version, known at create. ----
		{name: "owner Machine of Kubernetes v1.21", ownerVersion: "v1.21.0",
			rejected: []cause{{"metadata.ownerReferences[0]", "doesn't support Kubernetes version lower than v1.22.0"}}},

		{name: "owner Machine whose version is not a version", ownerVersion: "latest",
			rejected: []cause{{"metadata.ownerReferences[0]", `Kubernetes version "latest" is not a semantic version`}}},

		// ---- Admission: the Container Linux Config (webhook, field spec.containerLinuxConfig.inline). ----
		{name: "clc: wrongly typed value",
			spec:     cabpiv1.IgnitionConfigSpec{ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{Inline: "storage:\n  files:\n  - path: /etc/x\n    mode: abc\n"}},
			rejected: []cause{{"spec.containerLinuxConfig.inline", "(line 4)"}}},
		{name: "clc: with Butane (CEL)",
			spec: cabpiv1.IgnitionConfigSpec{Butane: cabpiv1.ButaneSpec{Inline: flatcar("")},
				ContainerLinuxConfig: cabpiv1.ContainerLinuxConfigSpec{Inline: "systemd: {}\n"}},
			rejected: []cause{{"spec", "set butane or containerLinuxConfig, not both"}}},

		// ---- Reconcile: a Container Linux Config the webhook does not read (contentFrom). ----
		{name: "clc from a Secret: does not transpile", spec: clcFromSecret("clc-yaml"),
			secrets: clcData("clc-yaml", "storage:\n  files: [\n"),
			reason:  cabpiv1.InvalidContainerLinuxConfigReason, message: "does not transpile"},
		{name: "clc from a Secret: file from the OEM partition", spec: clcFromSecret("clc-oem"),
			secrets: clcData("clc-oem", "storage:\n  files:\n  - path: /etc/x\n    mode: 0644\n    contents:\n      remote:\n        url: oem:///x\n"),
			reason:  cabpiv1.InvalidContainerLinuxConfigReason, message: "no oem:// scheme"},
		{name: "clc from a Secret: an alias the transpiler panics on", spec: clcFromSecret("clc-alias"),
			secrets: clcData("clc-alias", "x: &r\n  remote:\n    url: https://example.invalid/x\nstorage:\n  files:\n  - path: /etc/x\n    mode: 0644\n    contents: *r\n"),
			reason:  cabpiv1.InvalidContainerLinuxConfigReason, message: "it does not follow YAML aliases"},
		{name: "clc from a Secret: for fcos",
			spec: func() cabpiv1.IgnitionConfigSpec {
				s := clcFromSecret("clc-fcos")
				s.Variant = cabpiv1.VariantFCOS
				return s
			}(),
			secrets: clcData("clc-fcos", "systemd: {}\n"),
			reason:  cabpiv1.InvalidContainerLinuxConfigReason, message: "fcos nodes never read it"},
		{name: "clc from a Secret: writes /etc/kubeadm.sh", spec: clcFromSecret("clc-kubeadm-sh"),
			secrets: clcData("clc-kubeadm-sh", "storage:\n  files:\n  - path: /etc/kubeadm.sh\n    mode: 0700\n"),
			reason:  cabpiv1.OwnedPathConflictReason, message: "the Container Linux Config writes a file at /etc/kubeadm.sh"},

		// ---- Reconcile: a Butane snippet the webhook does not read (contentFrom). ----
		{name: "from a Secret: YAML syntax error", spec: snippetFromSecret("bu-yaml"),
			secrets: butaneData("bu-yaml", flatcar("storage:\n  files: [\n")),
			reason:  cabpiv1.InvalidButaneReason, message: "not valid YAML"},
		{name: "from a ConfigMap: wrongly typed value", spec: snippetFromConfigMap("bu-type"),
			configMaps: butaneData("bu-type", flatcar("storage:\n  files:\n  - path: /etc/x\n    mode: abc\n")),
			reason:     cabpiv1.InvalidButaneReason, message: "line 6"},
		{name: "from a Secret, strict: unused key",
			spec: func() cabpiv1.IgnitionConfigSpec {
				s := snippetFromSecret("bu-strict")
				s.Butane.Strict = true
				return s
			}(),
			secrets: butaneData("bu-strict", flatcar("storage:\n  filez:\n  - path: /etc/x\n")),
			reason:  cabpiv1.InvalidButaneReason, message: "unused key filez"},
		{name: "from a ConfigMap: another variant", spec: snippetFromConfigMap("bu-variant"),
			configMaps: butaneData("bu-variant", "variant: fcos\nversion: 1.5.0\n"),
			reason:     cabpiv1.InvalidButaneReason, message: `Butane variant "fcos" does not match the config's variant "flatcar"`},
		{name: "from a Secret: unknown version", spec: snippetFromSecret("bu-version"),
			secrets: butaneData("bu-version", "variant: flatcar\nversion: 9.9.9\n"),
			reason:  cabpiv1.InvalidButaneReason, message: "version 9.9.9 (line 2, column 10)"},
		{name: "from a Secret: no version", spec: snippetFromSecret("bu-noversion"),
			secrets: butaneData("bu-noversion", "variant: flatcar\n"),
			reason:  cabpiv1.InvalidButaneReason, message: "no version"},
		{name: "from a ConfigMap: experimental version",
			spec: func() cabpiv1.IgnitionConfigSpec {
				s := snippetFromConfigMap("bu-experimental")
				s.Variant = cabpiv1.VariantFCOS
				return s
			}(),
			configMaps: butaneData("bu-experimental", "variant: fcos\nversion: 1.8.0-experimental\n"),
			reason:     cabpiv1.InvalidButaneReason, message: "not a stable version supported for fcos"},
		{name: "from a Secret: binary garbage", spec: snippetFromSecret("bu-binary"),
			secrets: butaneData("bu-binary", "\x00\x01\x02\xff\xfe{[: \t\x7f"),
			reason:  cabpiv1.InvalidButaneReason, message: "Butane is not valid YAML"},
		{name: "from a Secret: replaces the whole config", spec: snippetFromSecret("bu-replace"),
			secrets: butaneData("bu-replace", flatcar("ignition:\n  config:\n    replace:\n      source: https://example.invalid/config.ign\n")),
			reason:  cabpiv1.InvalidButaneReason, message: "would discard the bootstrap configuration"},
		{name: "from a Secret: local file", spec: snippetFromSecret("bu-local"),
			secrets: butaneData("bu-local", flatcar("storage:\n  files:\n  - path: /etc/x\n    contents:\n      local: x\n")),
			reason:  cabpiv1.InvalidButaneReason, message: "files directory"},
		{name: "from a ConfigMap: writes /etc/kubeadm.yml", spec: snippetFromConfigMap("bu-kubeadm-yml"),
			configMaps: butaneData("bu-kubeadm-yml", fileWith("/etc/kubeadm.yml", "x")),
			reason:     cabpiv1.OwnedPathConflictReason, message: "conflicts with /etc/kubeadm.yml written by the provider"},
		{name: "from a Secret: links the bootstrap sentinel", spec: snippetFromSecret("bu-sentinel"),
			secrets: butaneData("bu-sentinel", flatcar("storage:\n  links:\n  - path: /run/cluster-api/bootstrap-success.complete\n    target: /dev/null\n")),
			reason:  cabpiv1.OwnedPathConflictReason, message: "conflicts with /run/cluster-api/bootstrap-success.complete"},
		{name: "from a ConfigMap: disables kubeadm.service", spec: snippetFromConfigMap("bu-disable"),
			configMaps: butaneData("bu-disable", flatcar("systemd:\n  units:\n  - name: kubeadm.service\n    enabled: false\n")),
			reason:     cabpiv1.OwnedPathConflictReason, message: "disables unit kubeadm.service"},
		{name: "from a Secret: masks kubeadm.service", spec: snippetFromSecret("bu-mask"),
			secrets: butaneData("bu-mask", flatcar("systemd:\n  units:\n  - name: kubeadm.service\n    mask: true\n")),
			reason:  cabpiv1.OwnedPathConflictReason, message: "masks unit kubeadm.service"},
		{name: "from a Secret: drop-in ExecStart", spec: snippetFromSecret("bu-execstart"),
			secrets: butaneData("bu-execstart", dropin("[Service]\nExecStart=\nExecStart=/bin/true\n")),
			reason:  cabpiv1.OwnedPathConflictReason, message: "sets ExecStart= in [Service]"},
		{name: "from a ConfigMap: drop-in Type", spec: snippetFromConfigMap("bu-type-simple"),
			configMaps: butaneData("bu-type-simple", dropin("[Service]\nType=simple\n")),
			reason:     cabpiv1.OwnedPathConflictReason, message: "sets Type=simple in [Service]"},
		{name: "from a Secret: drop-in User", spec: snippetFromSecret("bu-user"),
			secrets: butaneData("bu-user", dropin("[Service]\nUser=core\n")),
			reason:  cabpiv1.OwnedPathConflictReason, message: "kubeadm must run as root"},
		{name: "from a ConfigMap: drop-in empty ConditionPathExists=", spec: snippetFromConfigMap("bu-condition"),
			configMaps: butaneData("bu-condition", dropin("[Unit]\nConditionPathExists=\n")),
			reason:     cabpiv1.OwnedPathConflictReason, message: "guard ConditionPathExists=/etc/kubeadm.yml included"},
		{name: "from a Secret: drop-in BASH_ENV", spec: snippetFromSecret("bu-bash-env"),
			secrets: butaneData("bu-bash-env", dropin("[Service]\nEnvironment=BASH_ENV=/opt/x\n")),
			reason:  cabpiv1.OwnedPathConflictReason, message: "BASH_ENV changes how bash runs the bootstrap script"},
		{name: "from a ConfigMap: preset disabling every unit", spec: snippetFromConfigMap("bu-preset"),
			configMaps: butaneData("bu-preset", fileWith("/etc/systemd/system-preset/10-x.preset", "disable *\n")),
			reason:     cabpiv1.OwnedPathConflictReason, message: `line "disable *" disables kubeadm.service`},
		{name: "from a Secret: hard link to /etc/kubeadm.yml", spec: snippetFromSecret("bu-hardlink"),
			secrets: butaneData("bu-hardlink", flatcar("storage:\n  links:\n  - path: /etc/x\n    target: /etc/kubeadm.yml\n    hard: true\n")),
			reason:  cabpiv1.OwnedPathConflictReason, message: "hard link at /etc/x to /etc/kubeadm.yml"},
		{name: "from a Secret: link to a drop-in", spec: snippetFromSecret("bu-link-dropin"),
			secrets: butaneData("bu-link-dropin", flatcar("storage:\n  links:\n  - path: /etc/systemd/system/kubeadm.service.d/10-x.conf\n    target: /opt/x.conf\n")),
			reason:  cabpiv1.OwnedPathConflictReason, message: "what a link points to cannot be checked"},
		// BUG (fails until fixed): as the admission cases "link at the ... directory" above.
		{name: "from a Secret: link at the kubeadm.service.d directory", spec: snippetFromSecret("bu-link-dropin-dir"),
			secrets: butaneData("bu-link-dropin-dir", linkedDropinDir("kubeadm.service.d")),
			reason:  cabpiv1.OwnedPathConflictReason, message: "link at /etc/systemd/system/kubeadm.service.d"},
		{name: "from a Secret: writes a file of spec.files",
			spec: func() cabpiv1.IgnitionConfigSpec {
				s := snippetFromSecret("bu-clash")
				s.Files = []cabpiv1.File{file("/etc/app.conf", "x")}
				return s
			}(),
			secrets: butaneData("bu-clash", fileWith("/etc/app.conf", "y")),
			reason:  cabpiv1.InvalidConfigReason, message: "writes /etc/app.conf, which files[0] writes too"},
		{name: "from a ConfigMap: directory at a file of spec.files",
			spec: func() cabpiv1.IgnitionConfigSpec {
				s := snippetFromConfigMap("bu-dir-clash")
				s.Files = []cabpiv1.File{file("/opt/app", "x")}
				return s
			}(),
			configMaps: butaneData("bu-dir-clash", flatcar("storage:\n  directories:\n  - path: /opt/app\n")),
			reason:     cabpiv1.InvalidConfigReason, message: "directory at /opt/app, where files[0] writes a file"},
		{name: "from a Secret: path with a semicolon", spec: snippetFromSecret("bu-semicolon"),
			secrets: butaneData("bu-semicolon", flatcar("storage:\n  directories:\n  - path: /opt/a;b\n")),
			reason:  cabpiv1.InvalidConfigReason, message: `directory path "/opt/a;b" contains ';'`},
		{name: "from a ConfigMap: needs a higher Ignition version than pinned",
			spec: func() cabpiv1.IgnitionConfigSpec {
				s := snippetFromConfigMap("bu-pin")
				s.IgnitionVersion = "3.3.0"
				return s
			}(),
			configMaps: butaneData("bu-pin", "variant: flatcar\nversion: 1.1.0\n"),
			reason:     cabpiv1.UnsupportedIgnitionVersionReason, message: "lower than 3.4.0"},

		// ---- Reconcile: file content the webhook does not read (files[].contentFrom). ----
		{name: "file from a Secret: drop-in running kubeadm as another user",
			spec:    files(secretFile("/etc/systemd/system/kubeadm.service.d/20-user.conf", "file-user")),
			secrets: map[string]map[string]string{"file-user": {"value": "[Service]\nUser=core\n"}},
			reason:  cabpiv1.OwnedPathConflictReason, message: "sets User=core in [Service]: kubeadm must run as root"},
		{name: "file from a Secret: drop-in that is not a unit file",
			spec:    files(secretFile("/etc/systemd/system/service.d/10-x.conf", "file-not-unit")),
			secrets: map[string]map[string]string{"file-not-unit": {"value": "[Service\nUser=core\n"}},
			reason:  cabpiv1.OwnedPathConflictReason, message: "not a systemd unit file"},
		{name: "file from a Secret: preset disabling kubeadm.service",
			spec:    files(secretFile("/etc/systemd/system-preset/10-x.preset", "file-preset")),
			secrets: map[string]map[string]string{"file-preset": {"value": "disable kubeadm.service\n"}},
			reason:  cabpiv1.OwnedPathConflictReason, message: "disables kubeadm.service"},
		{name: "files from Secrets: more than a Secret holds",
			spec:    files(secretFile("/opt/big-1", "file-big-1"), secretFile("/opt/big-2", "file-big-2")),
			secrets: map[string]map[string]string{"file-big-1": {"value": big}, "file-big-2": {"value": big}},
			reason:  cabpiv1.DataTooLargeReason, message: "over the 1048568 a Secret holds"},

		// ---- Reconcile: references that do not exist. ----
		{name: "missing Secret of the snippet", spec: snippetFromSecret("absent-secret"),
			reason: cabpiv1.ReferenceNotFoundReason, message: `spec.butane.contentFrom.secret: Secret "absent-secret" not found`},
		{name: "missing ConfigMap of the snippet", spec: snippetFromConfigMap("absent-configmap"),
			reason: cabpiv1.ReferenceNotFoundReason, message: `spec.butane.contentFrom.configMap: ConfigMap "absent-configmap" not found`},
		{name: "Secret of the snippet without the key", spec: snippetFromSecret("bu-no-key"),
			secrets: map[string]map[string]string{"bu-no-key": {"other.bu": flatcarHeader}},
			reason:  cabpiv1.ReferenceNotFoundReason, message: `Secret "bu-no-key" has no key "config.bu"`},
		{name: "ConfigMap of the snippet without the key", spec: snippetFromConfigMap("bu-cm-no-key"),
			configMaps: map[string]map[string]string{"bu-cm-no-key": {"other.bu": flatcarHeader}},
			reason:     cabpiv1.ReferenceNotFoundReason, message: `ConfigMap "bu-cm-no-key" has no key "config.bu"`},
		{name: "missing Secret of a file", spec: files(file("/etc/fine", "x"), secretFile("/etc/app.key", "absent-file-secret")),
			reason: cabpiv1.ReferenceNotFoundReason, message: `spec.files[1].contentFrom.secret: Secret "absent-file-secret" not found`},
		{name: "Secret of a file without the key", spec: files(secretFile("/etc/app.key", "file-no-key")),
			secrets: map[string]map[string]string{"file-no-key": {"other": "x"}},
			reason:  cabpiv1.ReferenceNotFoundReason, message: `Secret "file-no-key" has no key "value"`},

		// ---- Reconcile: the Machine, created after the config. ----
		{name: "Machine of Kubernetes v1.21", machine: func(m *clusterv1.Machine) { m.Spec.Version = "v1.21.3" },
			reason: cabpiv1.UnsupportedKubernetesVersionReason, message: "v1.21.3"},
		{name: "Machine version that is not a version", machine: func(m *clusterv1.Machine) { m.Spec.Version = "latest" },
			reason: cabpiv1.UnsupportedKubernetesVersionReason, message: "latest"},
		{name: "control-plane Machine of a config writing a certificate path", machine: controlPlaneMachine,
			spec:   files(file("/etc/kubernetes/pki/ca.key", "x")),
			reason: cabpiv1.OwnedPathConflictReason, message: "conflicts with /etc/kubernetes/pki/ca.key"},
		{name: "control-plane Machine of a snippet writing a certificate path", machine: controlPlaneMachine,
			spec:       snippetFromConfigMap("bu-cert"),
			configMaps: butaneData("bu-cert", fileWith("/etc/kubernetes/pki/sa.key", "x")),
			reason:     cabpiv1.OwnedPathConflictReason, message: "/etc/kubernetes/pki/sa.key"},

		// ---- Reconcile: the Cluster. ----
		{name: "cluster CA Secret without a certificate",
			cluster: &fixtures.ClusterSetup{CA: map[string][]byte{"tls.crt": []byte("not a certificate"), "tls.key": []byte("n0t-a-k3y")}},
			reason:  cabpiv1.InvalidClusterCertificateReason, message: "Secret c1-ca does not hold a PEM certificate in tls.crt",
			secret: "n0t-a-k3y"},
		{name: "cluster CA Secret with a truncated PEM",
			cluster: &fixtures.ClusterSetup{CA: map[string][]byte{"tls.crt": []byte("-----BEGIN CERTIFICATE-----\nMIIB\n"), "tls.key": []byte("x")}},
			reason:  cabpiv1.InvalidClusterCertificateReason, message: "Secret c1-ca does not hold a PEM certificate in tls.crt"},
		{name: "cluster CA Secret with an empty tls.crt",
			cluster: &fixtures.ClusterSetup{CA: map[string][]byte{"tls.crt": {}, "tls.key": []byte("x")}},
			reason:  cabpiv1.WaitingForClusterCAReason, message: "Secret c1-ca"},
		{name: "no cluster CA Secret", cluster: &fixtures.ClusterSetup{Certificates: fixtures.NoCertificates},
			reason: cabpiv1.WaitingForClusterCAReason, message: "Secret c1-ca"},
		{name: "no control-plane endpoint", cluster: &fixtures.ClusterSetup{Certificates: fixtures.AllCertificates, NoEndpoint: true},
			reason: cabpiv1.WaitingForControlPlaneEndpointReason, message: "spec.controlPlaneEndpoint"},

		// ---- Reconcile: a Secret with the data Secret's name that is not the config's. ----
		{name: "foreign Opaque Secret with the data Secret's name",
			foreign: &corev1.Secret{Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("cloud-config")}},
			reason:  cabpiv1.DataSecretConflictReason, message: "is not bootstrap data of this kind"},
		{name: "foreign Secret of the right type that is not Ignition",
			foreign: &corev1.Secret{Type: clusterv1.ClusterSecretType, Data: map[string][]byte{"value": []byte("#cloud-config\n"), "format": []byte("ignition")}},
			reason:  cabpiv1.DataSecretConflictReason, message: "is not bootstrap data of this kind"},
		{name: "foreign Secret controlled by another object",
			setup: func(t *testing.T, ns, name string) {
				owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-owner"}}
				require.NoError(t, env.Client.Create(t.Context(), owner))
				require.NoError(t, env.Client.Create(t.Context(), &corev1.Secret{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}},
					Type: clusterv1.ClusterSecretType,
					Data: map[string][]byte{"value": []byte(`{"ignition":{"version":"3.3.0"}}`), "format": []byte("ignition")},
				}))
			},
			reason: cabpiv1.DataSecretConflictReason, message: "-owner, not by this IgnitionConfig"},
	}
}

// TestBadInputCatalogue sends every bad input of the catalogue through the API server (with
// cabpi's webhooks) to cabpi's controller (with CAPI's Machine controller) and checks the
// outcome a user sees, and for every case that nothing panicked, that no data Secret was
// written (a foreign Secret is left unchanged) and that no join token was created. Last, the
// same manager still renders a good config.
func TestBadInputCatalogue(t *testing.T) {
	start := time.Now()
	cases := catalogue()
	require.GreaterOrEqual(t, len(cases), 60, "the catalogue keeps at least 60 bad inputs")
	admission, reconcile := 0, 0
	seen := map[string]bool{}
	for _, tc := range cases {
		require.False(t, seen[tc.name], "duplicate case name %q", tc.name)
		seen[tc.name] = true
		require.True(t, (len(tc.rejected) > 0) != (tc.reason != ""), "case %q: set exactly one of rejected and reason", tc.name)
		require.True(t, tc.reason == "" || tc.message != "", "case %q: say what the condition message must mention", tc.name)
		if len(tc.rejected) > 0 {
			admission++
		} else {
			reconcile++
		}
	}
	t.Logf("catalogue: %d cases, %d rejected at admission, %d refused by the controller", len(cases), admission, reconcile)

	shared := fx.NewCluster(t, fixtures.ClusterSetup{Certificates: fixtures.AllCertificates})
	panicsBefore := panics(t)

	// Every config a case created or tried to create, for the final sweep.
	type submitted struct {
		ns, name string
		foreign  *corev1.Secret // the Secret under the config's name before it was created
	}
	var all []submitted

	t.Run("cases", func(t *testing.T) {
		for i, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				f := shared
				if tc.cluster != nil {
					f = fx.NewCluster(t, *tc.cluster)
				}
				name := objectName(i, tc.name)
				ctx := t.Context()

				for obj, data := range tc.secrets {
					require.NoError(t, env.Client.Create(ctx, &corev1.Secret{
						ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: obj}, StringData: data}))
				}
				for obj, data := range tc.configMaps {
					require.NoError(t, env.Client.Create(ctx, &corev1.ConfigMap{
						ObjectMeta: metav1.ObjectMeta{Namespace: f.Namespace, Name: obj}, Data: data}))
				}
				if tc.foreign != nil {
					s := tc.foreign.DeepCopy()
					s.Namespace, s.Name = f.Namespace, name
					require.NoError(t, env.Client.Create(ctx, s))
				}
				if tc.setup != nil {
					tc.setup(t, f.Namespace, name)
				}
				foreign, _ := fx.DataSecret(t, f.Namespace, name)
				all = append(all, submitted{ns: f.Namespace, name: name, foreign: foreign})

				cfg := f.NewConfig(name, tc.spec)
				if tc.controlPlaneLabel {
					cfg.Labels[clusterv1.MachineControlPlaneLabel] = ""
				}
				if tc.ownerVersion != "" {
					m := testenv.NewMachine(f.Cluster, name, false)
					m.Spec.Version = tc.ownerVersion
					require.NoError(t, env.Client.Create(ctx, m))
					cfg.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID}}
				}
				err := env.Client.Create(ctx, cfg)

				if len(tc.rejected) > 0 {
					status := tc.status
					if status == "" {
						status = metav1.StatusReasonInvalid
					}
					testenv.RequireRejected(t, err, status, tc.rejected...)
					t.Logf("rejected: %v", err)
					assert.NotContains(t, err.Error(), "panic", "the webhook did not panic")
					if tc.secret != "" {
						assert.NotContains(t, err.Error(), tc.secret, "admission errors never echo a credential")
					}
					getErr := env.Client.Get(ctx, client.ObjectKeyFromObject(cfg), &cabpiv1.IgnitionConfig{})
					assert.True(t, apierrors.IsNotFound(getErr), "a rejected config is not stored: %v", getErr)
					assertNoData(t, f.Namespace, name, foreign)
					assert.Equal(t, panicsBefore, panics(t), "no panic since the catalogue started")
					return
				}

				require.NoError(t, err, "the webhook must let this config through: only the controller can see what is wrong with it")
				f.AddMachineFor(t, name, false, tc.machine)

				// The controller works on every submitted config at once; wait for the outcome
				// once all are submitted.
				t.Parallel()
				if got := waitForRefusal(t, f.Namespace, name, tc.reason); got != nil {
					cond := conditions.Get(got, cabpiv1.DataSecretAvailableCondition)
					t.Logf("%s: %s", cond.Reason, cond.Message)
					assert.Contains(t, cond.Message, tc.message)
					if tc.secret != "" {
						assert.NotContains(t, cond.Message, tc.secret, "condition messages never echo a credential")
					}
					if ready := conditions.Get(got, cabpiv1.ReadyCondition); assert.NotNil(t, ready, "Ready is set") {
						assert.Equal(t, "False/"+cabpiv1.NotReadyReason, string(ready.Status)+"/"+ready.Reason, ready.Message)
					}
					assert.Nil(t, got.Status.Initialization.DataSecretCreated, "no data Secret is reported")
					assert.Empty(t, got.Status.DataSecretName)
				}
				assertNoData(t, f.Namespace, name, foreign)
				assert.Equal(t, panicsBefore, panics(t), "no panic since the catalogue started")
			})
		}
	})

	// A join token created and removed again within a reconcile would slip between the checks
	// above: watch all cases' tokens (one List per poll) for a little while more.
	t.Run("no join token appears for any case", func(t *testing.T) {
		fixtures.Never(t, 2*time.Second, 200*time.Millisecond, func() bool {
			tokens := fx.JoinTokens(t)
			for _, s := range all {
				if ids := fixtures.TokenIDs(tokens[s.ns+"/"+s.name]); len(ids) > 0 {
					t.Logf("join tokens %v for IgnitionConfig %s/%s", ids, s.ns, s.name)
					return true
				}
			}
			return false
		}, "no join token for bad input")
		for _, s := range all {
			assertNoData(t, s.ns, s.name, s.foreign)
		}
	})

	t.Run("nothing panicked", func(t *testing.T) {
		assert.Equal(t, panicsBefore, panics(t), "controller-runtime counted recovered panics (reconcilers, webhooks)")
	})

	// The manager that saw all of the above still renders a good config into data with a join
	// token: it kept running, and the token check above looks where tokens are.
	t.Run("the manager still renders a good config", func(t *testing.T) {
		name := "good"
		require.NoError(t, env.Client.Create(t.Context(), shared.NewConfig(name, cabpiv1.IgnitionConfigSpec{
			Butane:             cabpiv1.ButaneSpec{Inline: fileWith("/etc/motd", "hello")},
			Files:              []cabpiv1.File{file("/etc/app.conf", "a=1")},
			PreKubeadmCommands: []string{"echo pre"},
		})))
		shared.AddMachineFor(t, name, false)
		fx.WaitForCondition(t, shared.Namespace, name, cabpiv1.ReadyCondition, metav1.ConditionTrue, cabpiv1.ReadyReason)
		s, ok := fx.DataSecret(t, shared.Namespace, name)
		require.True(t, ok, "the good config's data Secret exists")
		assert.Equal(t, "ignition", string(s.Data["format"]))
		id := s.Annotations[cabpiv1.BootstrapTokenIDAnnotation]
		assert.Equal(t, []string{id}, fixtures.TokenIDs(fx.TokensOf(t, shared.Namespace, name)), "its join token is found by its description")
	})
	t.Logf("catalogue ran in %s", time.Since(start).Round(time.Millisecond))
}

// assertNoData asserts that no data Secret exists for the config ns/name (or that foreign, the
// Secret that was there before the config, is unchanged: not adopted, not rewritten) and that no
// join token names the config.
func assertNoData(t *testing.T, ns, name string, foreign *corev1.Secret) {
	t.Helper()
	s, exists := fx.DataSecret(t, ns, name)
	if foreign == nil {
		assert.False(t, exists, "no data Secret for bad input")
	} else if assert.True(t, exists, "the foreign Secret stays") {
		assert.Equal(t, foreign.ResourceVersion, s.ResourceVersion, "the foreign Secret is not written")
		assert.Equal(t, foreign.Data, s.Data)
		assert.Equal(t, foreign.OwnerReferences, s.OwnerReferences, "the foreign Secret is not adopted")
	}
	assert.Empty(t, fixtures.TokenIDs(fx.TokensOf(t, ns, name)), "no join token for bad input")
}
