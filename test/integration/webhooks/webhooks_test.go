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

package webhooks_test

import (
	"context"
	"encoding/base64"
	"errors"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const flatcarButane = "variant: flatcar\nversion: 1.0.0\n"

// flatcarCLC is a Container Linux Config without warnings.
const flatcarCLC = "storage:\n  files:\n  - path: /etc/motd\n    mode: 0644\n    contents:\n      inline: hello\n" +
	"networkd:\n  units:\n  - name: 00-eth0.network\n    contents: \"[Match]\\nName=eth0\\n\"\n"

// cause is an admission error cause a case expects: the exact field and a substring of the
// message.
type cause = testenv.Cause

// newConfig returns an IgnitionConfig in ns with a generated name, edited by mutate.
func newConfig(ns string, mutate func(*cabpiv1.IgnitionConfig)) *cabpiv1.IgnitionConfig {
	c := &cabpiv1.IgnitionConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "config-"}}
	if mutate != nil {
		mutate(c)
	}
	return c
}

// withSpec returns a newConfig mutation that edits the spec only.
func withSpec(mutate func(*cabpiv1.IgnitionConfigSpec)) func(*cabpiv1.IgnitionConfig) {
	return func(c *cabpiv1.IgnitionConfig) { mutate(&c.Spec) }
}

// newTemplate returns an IgnitionConfigTemplate in ns with a generated name whose
// spec.template.spec is edited by mutate.
func newTemplate(ns string, mutate func(*cabpiv1.IgnitionConfigSpec)) *cabpiv1.IgnitionConfigTemplate {
	t := &cabpiv1.IgnitionConfigTemplate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "template-"}}
	if mutate != nil {
		mutate(&t.Spec.Template.Spec)
	}
	return t
}

// createMachine creates a Machine of Kubernetes version in ns (its infrastructure and cluster
// need not exist: no controller runs) and returns an owner reference to it.
func createMachine(t *testing.T, ns, name, version string, controlPlane bool) metav1.OwnerReference {
	t.Helper()
	m := testenv.NewMachine(&clusterv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cluster"}}, name, controlPlane)
	m.Spec.Version = version
	require.NoError(t, env.Client.Create(t.Context(), m))
	return metav1.OwnerReference{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID}
}

// requireInvalid asserts err is the API's Invalid error with (at least) the causes in want.
func requireInvalid(t *testing.T, err error, want ...cause) {
	t.Helper()
	testenv.RequireRejected(t, err, metav1.StatusReasonInvalid, want...)
}

// assertDiffLine asserts that the spec.template.spec cause of err has a line matching pattern
// (a line of the diff, anchored at its start).
func assertDiffLine(t *testing.T, err error, pattern string) {
	t.Helper()
	var status *apierrors.StatusError
	require.True(t, errors.As(err, &status), "not a StatusError: %v", err)
	require.NotNil(t, status.ErrStatus.Details)
	re := regexp.MustCompile(`(?m)^\s*` + pattern + `,?$`)
	for _, c := range status.ErrStatus.Details.Causes {
		if c.Field == "spec.template.spec" && re.MatchString(c.Message) {
			return
		}
	}
	t.Errorf("no diff line matching %s; causes: %s", re, testenv.FormatCauses(status.ErrStatus.Details.Causes))
}

// TestAdmission creates good and bad IgnitionConfigs and IgnitionConfigTemplates through the
// API server: bad ones are rejected by the CRD schema (where it can say it) or by the webhooks,
// with the field at fault; good ones are stored.
func TestAdmission(t *testing.T) {
	ns := env.CreateNamespace(t, "admission").Name
	secretFile := func(path string) cabpiv1.File {
		return cabpiv1.File{Path: path, ContentFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "files", Key: "data"}}}
	}
	cases := []struct {
		name string
		// obj returns the object to create; it may create what the object refers to.
		obj  func(t *testing.T) client.Object
		want []cause // empty: the object is accepted
	}{
		// Accepted.
		{
			name: "empty spec",
			obj:  func(*testing.T) client.Object { return newConfig(ns, nil) },
		},
		{
			name: "fcos with pinned version, snippet, inline and Secret files",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Variant = cabpiv1.VariantFCOS
					s.IgnitionVersion = "3.4.0"
					s.Butane = cabpiv1.ButaneSpec{Strict: true, Inline: "variant: fcos\nversion: 1.5.0\nstorage:\n  files:\n  - path: /etc/motd\n    contents:\n      inline: hello\n"}
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "a=1", Permissions: "0600", Owner: "core:core"}, secretFile("/etc/app.key")}
					s.PreKubeadmCommands = []string{"echo pre"}
				}))
			},
		},
		{
			name: "flatcar snippet from a ConfigMap is not read at admission",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.ContentFrom = &cabpiv1.ButaneSource{ConfigMap: &cabpiv1.KeyReference{Name: "butane", Key: "config.bu"}}
				}))
			},
		},
		{
			name: "worker writing a certificate path",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/kubernetes/pki/ca.crt", Content: "x"}}
				}))
			},
		},
		{
			name: "control-plane config with kubeadm configuration and a supported owner version",
			obj: func(t *testing.T) client.Object {
				owner := createMachine(t, ns, "cp-good", "v1.30.4", true)
				return newConfig(ns, func(c *cabpiv1.IgnitionConfig) {
					c.OwnerReferences = []metav1.OwnerReference{owner}
					c.Spec.ClusterConfiguration = kubeadmv1.ClusterConfiguration{CertificatesDir: "/etc/kubernetes/pki"}
					c.Spec.JoinConfiguration.ControlPlane = &kubeadmv1.JoinControlPlane{}
					c.Spec.Files = []cabpiv1.File{{Path: "/etc/kubernetes/audit.yaml", Content: "x"}}
				})
			},
		},
		{
			name: "control plane with external etcd",
			obj: func(t *testing.T) client.Object {
				owner := createMachine(t, ns, "cp-external-etcd", "v1.34.0", true)
				return newConfig(ns, func(c *cabpiv1.IgnitionConfig) {
					c.OwnerReferences = []metav1.OwnerReference{owner}
					c.Spec.ClusterConfiguration.Etcd.External = kubeadmv1.ExternalEtcd{
						Endpoints: []string{"https://etcd-0.example.internal:2379"},
						CAFile:    "/etc/kubernetes/pki/etcd/ca.crt",
						CertFile:  "/etc/kubernetes/pki/apiserver-etcd-client.crt",
						KeyFile:   "/etc/kubernetes/pki/apiserver-etcd-client.key",
					}
				})
			},
		},
		{
			name: "file discovery with an exec plugin",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.JoinConfiguration.Discovery.File = kubeadmv1.FileDiscovery{
						KubeConfigPath: "/etc/kubernetes/discovery.conf",
						KubeConfig: kubeadmv1.FileDiscoveryKubeConfig{User: kubeadmv1.KubeConfigUser{
							Exec: kubeadmv1.KubeConfigAuthExec{Command: "/opt/bin/cluster-token"},
						}},
					}
				}))
			},
		},
		{
			name: "the cloud providers' Flatcar drop-in for kubeadm.service",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.JoinConfiguration.NodeRegistration.Name = "${COREOS_EC2_HOSTNAME}"
					s.PreKubeadmCommands = []string{"envsubst < /etc/kubeadm.yml > /etc/kubeadm.yml.tmp", "mv /etc/kubeadm.yml.tmp /etc/kubeadm.yml"}
					s.Butane.Inline = flatcarButane + "systemd:\n  units:\n  - name: kubeadm.service\n    dropins:\n    - name: 10-flatcar.conf\n" +
						"      contents: |\n        [Unit]\n        Requires=coreos-metadata.service\n        After=coreos-metadata.service\n" +
						"        [Service]\n        EnvironmentFile=/run/metadata/flatcar\n"
				}))
			},
		},
		{
			name: "node name and provider ID from AWS metadata",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.NodeName = &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformAWS, ProviderID: true}
				}))
			},
		},
		{
			name: "template with snippet and files",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  directories:\n  - path: /opt/bin\n"
					s.Files = []cabpiv1.File{secretFile("/etc/app.key")}
				})
			},
		},
		{
			name: "multi-line commands, a preset enabling units and a directory above a file",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.PreKubeadmCommands = []string{"cat > /etc/x <<EOF\nhello\nEOF", "echo a \\\\", "if true; then\n  echo x\nfi"}
					s.PostKubeadmCommands = []string{`echo "it's done"`}
					s.Butane.Inline = flatcarButane + "storage:\n  directories:\n  - path: /opt/app\n  files:\n  - path: /etc/systemd/system-preset/10-x.preset\n    contents:\n      inline: \"enable *\\n\"\n"
					s.Files = []cabpiv1.File{{Path: "/opt/app/config", Content: "x"}}
				}))
			},
		},

		// Container Linux Config: webhook, field spec.containerLinuxConfig.inline, located.
		{
			name: "flatcar Container Linux Config",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{Strict: true, Inline: flatcarCLC}
				}))
			},
		},
		{
			name: "Container Linux Config from a Secret is not read at admission",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.ContainerLinuxConfig.ContentFrom = &cabpiv1.ButaneSource{Secret: &cabpiv1.KeyReference{Name: "clc", Key: "config"}}
				}))
			},
		},
		{
			name: "Container Linux Config with a wrongly typed value",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.ContainerLinuxConfig.Inline = "storage:\n  files:\n  - path: /etc/x\n    mode: abc\n"
				}))
			},
			want: []cause{{"spec.containerLinuxConfig.inline", "cannot unmarshal !!str `abc` into int (line 4)"}},
		},
		{
			name: "strict Container Linux Config with an unknown key",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{Strict: true, Inline: "storage:\n  filez: []\n"}
				}))
			},
			want: []cause{{"spec.containerLinuxConfig.inline", "Config has unrecognized key: filez (line 2, column 3)"}},
		},
		{
			name: "Container Linux Config for fcos",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Variant = cabpiv1.VariantFCOS
					s.ContainerLinuxConfig.Inline = flatcarCLC
				}))
			},
			want: []cause{{"spec.containerLinuxConfig.inline", "fcos nodes never read it: write the snippet in Butane"}},
		},
		{
			name: "Container Linux Config writing a file on a filesystem Ignition 2 mounted",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.ContainerLinuxConfig.Inline = "storage:\n  filesystems:\n  - name: oem\n    mount: {device: /dev/disk/by-label/OEM, format: btrfs}\n" +
						"  files:\n  - filesystem: oem\n    path: /grub.cfg\n    mode: 0644\n"
				}))
			},
			want: []cause{{"spec.containerLinuxConfig.inline", `mounted only to write it: Ignition 3 writes by path in the root`}, {"spec.containerLinuxConfig.inline", "(line 6, column 5)"}},
		},
		{
			name: "Container Linux Config writing /etc/kubeadm.sh and a spec file",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.ContainerLinuxConfig.Inline = "storage:\n  files:\n  - path: /etc/kubeadm.sh\n    mode: 0700\n"
					s.Files = []cabpiv1.File{{Path: "/etc/kubeadm.yml", Content: "x"}}
				}))
			},
			want: []cause{
				{"spec.containerLinuxConfig.inline", "the Container Linux Config writes a file at /etc/kubeadm.sh, which conflicts with /etc/kubeadm.sh"},
				{"spec.files[0].path", "conflicts with /etc/kubeadm.yml"},
			},
		},
		{
			name: "Butane and a Container Linux Config (CEL)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane
					s.ContainerLinuxConfig.Inline = flatcarCLC
				}))
			},
			want: []cause{{"spec", "set butane or containerLinuxConfig, not both"}},
		},
		{
			name: "template: Container Linux Config disabling kubeadm.service",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
					s.ContainerLinuxConfig.Inline = "systemd:\n  units:\n  - name: kubeadm.service\n    mask: true\n"
				})
			},
			want: []cause{{"spec.template.spec.containerLinuxConfig.inline", "masks unit kubeadm.service"}},
		},

		// Butane snippet: webhook, field spec.butane.inline, with Butane's location.
		{
			name: "snippet with a YAML syntax error",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  files: [\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "not valid YAML"}, {"spec.butane.inline", "(line 4)"}},
		},
		{
			name: "snippet with a wrongly typed value",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  files:\n  - path: /etc/x\n    mode: abc\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "line 6"}},
		},
		{
			name: "strict snippet with an unused key",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane = cabpiv1.ButaneSpec{Strict: true, Inline: flatcarButane + "storage:\n  filez:\n  - path: /etc/x\n"}
				}))
			},
			want: []cause{{"spec.butane.inline", "unused key filez (line 4, column 3)"}},
		},
		{
			name: "snippet of another variant",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = "variant: fcos\nversion: 1.5.0\n"
				}))
			},
			want: []cause{{"spec.butane.inline", `Butane variant "fcos" does not match the config's variant "flatcar" (line 1, column 10)`}},
		},
		{
			name: "snippet emitting an experimental Ignition version",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Variant = cabpiv1.VariantFCOS
					s.Butane.Inline = "variant: fcos\nversion: 1.8.0-experimental\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "not a stable version supported for fcos"}},
		},
		{
			name: "snippet writing /etc/kubeadm.yml",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  files:\n  - path: /etc/kubeadm.yml\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "conflicts with /etc/kubeadm.yml written by the provider"}},
		},
		{
			name: "snippet writing the bootstrap sentinel",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  links:\n  - path: /run/cluster-api/bootstrap-success.complete\n    target: /dev/null\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "conflicts with /run/cluster-api/bootstrap-success.complete"}},
		},
		{
			name: "snippet defining kubeadm.service",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "systemd:\n  units:\n  - name: kubeadm.service\n    enabled: false\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "disables unit kubeadm.service, which the provider owns"}},
		},
		{
			name: "snippet replacing the whole config",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "ignition:\n  config:\n    replace:\n      source: https://example.invalid/config.ign\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "would discard the bootstrap configuration"}},
		},
		{
			name: "snippet writing a file of spec.files",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  files:\n  - path: /etc/app.conf\n"
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "x"}}
				}))
			},
			want: []cause{{"spec.butane.inline", "writes /etc/app.conf, which files[0] writes too"}},
		},

		{
			name: "pre-kubeadm command with a password and an unclosed quote",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.PreKubeadmCommands = []string{"docker login -u ci -p s3cr3t 'registry.example.com"}
				}))
			},
			want: []cause{{"spec.preKubeadmCommands[0]", "not a complete shell command"}},
		},
		{
			name: "data larger than a Secret holds",
			obj: func(*testing.T) client.Object {
				// Random text: file contents are gzipped where that is smaller, and a repeated
				// byte would shrink to nothing.
				rnd := rand.New(rand.NewPCG(12, 1))
				big := func() string {
					raw := make([]byte, 450*1024)
					for i := range raw {
						raw[i] = byte(rnd.Uint32())
					}
					return base64.StdEncoding.EncodeToString(raw)
				}
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/opt/big-1", Content: big()}, {Path: "/opt/big-2", Content: big()}}
				}))
			},
			want: []cause{{"spec", "over the 1048568 a Secret holds"}},
		},
		{
			name: "join token that kubeadm would refuse",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.JoinConfiguration.Discovery.BootstrapToken.Token = "NOT-A-TOKEN-s3cr3t"
				}))
			},
			want: []cause{{"spec.joinConfiguration.discovery.bootstrapToken.token", "must match [a-z0-9]{6}.[a-z0-9]{16}"}},
		},
		{
			name: "node name from metadata and a node name",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.NodeName = &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformOpenStack}
					s.JoinConfiguration.NodeRegistration.Name = "node-1"
				}))
			},
			want: []cause{{"spec.nodeName", "joinConfiguration.nodeRegistration.name is set too"}},
		},
		{
			name: "provider ID from Azure metadata",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.NodeName = &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformAzure, ProviderID: true}
				}))
			},
			want: []cause{{"spec.nodeName", "leave providerID unset"}},
		},
		{
			name: "spec file drop-in running kubeadm as another user",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/systemd/system/kubeadm.service.d/20-user.conf", Content: "[Service]\nUser=core\n"}}
				}))
			},
			want: []cause{{"spec.files[0].content", "sets User=core in [Service]: kubeadm must run as root"}},
		},
		{
			name: "snippet writing a drop-in for every service",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  files:\n  - path: /etc/systemd/system/service.d/10-x.conf\n    contents:\n      inline: |\n        [Service]\n        ExecStart=\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "drop-in /etc/systemd/system/service.d/10-x.conf for kubeadm.service sets ExecStart= in [Service]"}},
		},
		{
			name: "snippet preset disabling kubeadm.service",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  files:\n  - path: /etc/systemd/system-preset/10-x.preset\n    contents:\n      inline: \"disable *\\n\"\n"
				}))
			},
			want: []cause{{"spec.butane.inline", `line "disable *" disables kubeadm.service`}},
		},
		{
			name: "snippet hard link to /etc/kubeadm.yml",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  links:\n  - path: /etc/x\n    target: /etc/kubeadm.yml\n    hard: true\n"
				}))
			},
			want: []cause{{"spec.butane.inline", "hard link at /etc/x to /etc/kubeadm.yml"}},
		},
		{
			name: "snippet directory at a file of spec.files",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  directories:\n  - path: /opt/app\n"
					s.Files = []cabpiv1.File{{Path: "/opt/app", Content: "x"}}
				}))
			},
			want: []cause{{"spec.butane.inline", "directory at /opt/app, where files[0] writes a file"}},
		},
		{
			name: "snippet file inside a file of spec.files",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  files:\n  - path: /opt/app/x\n"
					s.Files = []cabpiv1.File{{Path: "/opt/app", Content: "x"}}
				}))
			},
			want: []cause{{"spec.butane.inline", "is inside /opt/app, a file written by files[0]"}},
		},

		// Commands: webhook, each on its own index.
		{
			name: "pre-kubeadm command with an unclosed quote",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.PreKubeadmCommands = []string{"echo ok", "true", "echo 'x"}
				}))
			},
			want: []cause{{"spec.preKubeadmCommands[2]", "not a complete shell command: 1:6: reached EOF without closing quote"}},
		},
		{
			name: "pre- and post-kubeadm commands with line continuations, all reported",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.PreKubeadmCommands = []string{"echo pre \\", "echo fine"}
					s.PostKubeadmCommands = []string{"echo post &&"}
				}))
			},
			want: []cause{
				{"spec.preKubeadmCommands[0]", "ends with a line continuation"},
				{"spec.postKubeadmCommands[0]", "must be followed by a statement"},
			},
		},

		// Files: webhook (owned paths, owners, duplicates once cleaned) and schema.
		{
			name: "files at provider-owned paths, all reported",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{
						{Path: "/etc/kubeadm.yml", Content: "x"},
						{Path: "/etc/fine", Content: "x"},
						{Path: "/etc/systemd/system/kubeadm.service", Content: "x"},
						secretFile("/etc/kubeadm.sh"),
						{Path: "/run/cluster-api/bootstrap-success.complete", Content: "x"},
					}
				}))
			},
			want: []cause{
				{"spec.files[0].path", "conflicts with /etc/kubeadm.yml written by the provider"},
				{"spec.files[2].path", "conflicts with /etc/systemd/system/kubeadm.service"},
				{"spec.files[3].path", "conflicts with /etc/kubeadm.sh"},
				{"spec.files[4].path", "conflicts with /run/cluster-api/bootstrap-success.complete"},
			},
		},
		{
			name: "file at an owned path spelled differently",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/./kubeadm.yml", Content: "x"}}
				}))
			},
			want: []cause{{"spec.files[0].path", "conflicts with /etc/kubeadm.yml"}},
		},
		{
			name: "file at a parent directory of an owned path",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/run/cluster-api", Content: "x"}}
				}))
			},
			want: []cause{{"spec.files[0].path", "conflicts with /run/cluster-api/bootstrap-success.complete"}},
		},
		{
			name: "control-plane config (label) writing a certificate path",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, func(c *cabpiv1.IgnitionConfig) {
					c.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
					c.Spec.Files = []cabpiv1.File{{Path: "/etc/kubernetes/pki/ca.crt", Content: "x"}}
				})
			},
			want: []cause{{"spec.files[0].path", "conflicts with /etc/kubernetes/pki/ca.crt"}},
		},
		{
			name: "control-plane config (owner Machine) writing a certificate key path",
			obj: func(t *testing.T) client.Object {
				owner := createMachine(t, ns, "cp-owner", "v1.34.0", true)
				return newConfig(ns, func(c *cabpiv1.IgnitionConfig) {
					c.OwnerReferences = []metav1.OwnerReference{owner}
					c.Spec.Files = []cabpiv1.File{{Path: "/etc/kubernetes/pki/sa.key", Content: "x"}}
				})
			},
			want: []cause{{"spec.files[0].path", "conflicts with /etc/kubernetes/pki/sa.key"}},
		},
		{
			name: "two files at the same path once cleaned",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "x"}, {Path: "/etc//app.conf", Content: "y"}}
				}))
			},
			want: []cause{{"spec.files[1].path", "is also written by files[0]"}},
		},
		{
			name: "two files at the same path (schema)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "x"}, {Path: "/etc/app.conf", Content: "y"}}
				}))
			},
			want: []cause{{"spec.files[1]", "Duplicate value"}},
		},
		{
			name: "file owner with a slash",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "x", Owner: "core/x:core"}}
				}))
			},
			want: []cause{{"spec.files[0].owner", "must not contain spaces or slashes"}},
		},
		{
			name: "file content not base64 as its encoding says",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "not base64!", Encoding: cabpiv1.FileEncodingBase64}}
				}))
			},
			want: []cause{{"spec.files[0].content", "is not base64"}},
		},
		{
			name: "inline gzip content (CEL)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "x", Encoding: cabpiv1.FileEncodingGzip}}
				}))
			},
			want: []cause{{"spec.files[0]", "encoding gzip needs contentFrom"}},
		},
		{
			name: "append on CAPD",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Platform = cabpiv1.PlatformDocker
					s.Files = []cabpiv1.File{{Path: "/etc/hosts", Content: "x", Append: true}}
				}))
			},
			want: []cause{{"spec.files[0].append", "CAPD"}},
		},
		{
			name: "user with passwordHash and passwordHashFrom (CEL)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Users = []cabpiv1.User{{Name: "ops", PasswordHash: "$6$x",
						PasswordHashFrom: &cabpiv1.FileSource{Secret: cabpiv1.KeyReference{Name: "pw", Key: "hash"}}}}
				}))
			},
			want: []cause{{"spec.users[0]", "set either passwordHash or passwordHashFrom"}},
		},
		{
			name: "file permissions not octal (schema)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "x", Permissions: "0999"}}
				}))
			},
			want: []cause{{"spec.files[0].permissions", "should match"}},
		},
		{
			name: "file with inline and Secret content (CEL)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					f := secretFile("/etc/app.conf")
					f.Content = "x"
					s.Files = []cabpiv1.File{f}
				}))
			},
			want: []cause{{"spec.files[0]", "set exactly one of content or contentFrom"}},
		},
		{
			name: "snippet inline and from a ConfigMap (CEL)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane
					s.Butane.ContentFrom = &cabpiv1.ButaneSource{ConfigMap: &cabpiv1.KeyReference{Name: "butane", Key: "config.bu"}}
				}))
			},
			want: []cause{{"spec.butane", "set either inline or contentFrom, not both"}},
		},
		{
			name: "file inside another file",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/opt/a", Content: "a"}, {Path: "/opt/a/b", Content: "b"}}
				}))
			},
			want: []cause{{"spec.files[1].path", "file /opt/a/b (written by files[1]) is inside /opt/a, a file written by files[0]"}},
		},
		{
			name: "file path with shell metacharacters",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/a b", Content: "a"}, {Path: "/etc/$(reboot)", Content: "b"}}
				}))
			},
			want: []cause{
				{"spec.files[0].path", `file path "/etc/a b" contains ' '`},
				{"spec.files[1].path", `contains '$'`},
			},
		},

		// Variant and Ignition version.
		{
			name: "unknown variant (schema)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) { s.Variant = "ubuntu" }))
			},
			want: []cause{{"spec.variant", "Unsupported value"}},
		},
		{
			name: "Ignition 3.0.0 for flatcar",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) { s.IgnitionVersion = "3.0.0" }))
			},
			want: []cause{{"spec.ignitionVersion", `Ignition version "3.0.0" is not supported for flatcar`}},
		},
		{
			name: "Ignition 3.6.0 for flatcar",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Variant = cabpiv1.VariantFlatcar
					s.IgnitionVersion = "3.6.0"
				}))
			},
			want: []cause{{"spec.ignitionVersion", "supported: [3.3.0 3.4.0]"}},
		},
		{
			name: "Ignition 9.9.9 (schema)",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) { s.IgnitionVersion = "9.9.9" }))
			},
			want: []cause{{"spec.ignitionVersion", "should match"}},
		},
		{
			name: "pinned Ignition version lower than the snippet needs",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Variant = cabpiv1.VariantFCOS
					s.IgnitionVersion = "3.0.0"
					s.Butane.Inline = "variant: fcos\nversion: 1.5.0\n"
				}))
			},
			want: []cause{{"spec.ignitionVersion", "lower than 3.4.0, which the Butane snippet needs"}},
		},
		{
			name: "several errors at once",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.IgnitionVersion = "3.1.0"
					s.Butane.Inline = "variant: flatcar\nversion: 1.0.0\nstorage: [\n"
					s.Files = []cabpiv1.File{{Path: "/etc/kubeadm.sh", Content: "x"}}
				}))
			},
			want: []cause{
				{"spec.ignitionVersion", "not supported for flatcar"},
				{"spec.butane.inline", "(line 3)"},
				{"spec.files[0].path", "conflicts with /etc/kubeadm.sh"},
			},
		},

		// Kubernetes version, known from the owner.
		{
			name: "owner Machine with an unsupported Kubernetes version",
			obj: func(t *testing.T) client.Object {
				owner := createMachine(t, ns, "old", "v1.21.0", false)
				return newConfig(ns, func(c *cabpiv1.IgnitionConfig) { c.OwnerReferences = []metav1.OwnerReference{owner} })
			},
			want: []cause{{"metadata.ownerReferences[0]", "doesn't support Kubernetes version lower than v1.22.0"}},
		},

		// Templates: same rules under spec.template.spec.
		{
			name: "template: file at an owned path",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/kubeadm.yml", Content: "x"}}
				})
			},
			want: []cause{{"spec.template.spec.files[0].path", "conflicts with /etc/kubeadm.yml"}},
		},
		{
			name: "template: snippet with a YAML syntax error",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = "variant: flatcar\nversion: 1.0.0\n  storage: x\n"
				})
			},
			want: []cause{{"spec.template.spec.butane.inline", "(line 3)"}},
		},
		{
			name: "template: snippet writing /etc/kubeadm.sh",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
					s.Butane.Inline = flatcarButane + "storage:\n  files:\n  - path: /etc/kubeadm.sh\n"
				})
			},
			want: []cause{{"spec.template.spec.butane.inline", "conflicts with /etc/kubeadm.sh"}},
		},
		{
			name: "template: pre-kubeadm command with an unclosed quote",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
					s.PreKubeadmCommands = []string{"echo 'x"}
				})
			},
			want: []cause{{"spec.template.spec.preKubeadmCommands[0]", "not a complete shell command"}},
		},
		{
			name: "fcos sysext from the Flatcar bakery",
			obj: func(*testing.T) client.Object {
				return newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
					s.Variant = cabpiv1.VariantFCOS
					s.Kubernetes.Source = cabpiv1.KubernetesSourceSysext
				}))
			},
			want: []cause{{"spec.kubernetes.sysext.baseURL", "Flatcar"}},
		},
		{
			name: "template: binaries from an ftp baseURL",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
					s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: "ftp://x"}}
				})
			},
			want: []cause{{"spec.template.spec.kubernetes.binaries.baseURL", "ftp://x"}},
		},
		{
			name: "template: Ignition 3.0.0 for flatcar",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) { s.IgnitionVersion = "3.0.0" })
			},
			want: []cause{{"spec.template.spec.ignitionVersion", "not supported for flatcar"}},
		},
		{
			name: "template: permissions (schema)",
			obj: func(*testing.T) client.Object {
				return newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
					s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "x", Permissions: "rw-r--r--"}}
				})
			},
			want: []cause{{"spec.template.spec.files[0].permissions", "should match"}},
		},
		{
			name: "template: invalid metadata label",
			obj: func(*testing.T) client.Object {
				tpl := newTemplate(ns, nil)
				tpl.Spec.Template.ObjectMeta.Labels = map[string]string{"not a key!": "x"}
				return tpl
			},
			want: []cause{{"spec.template.metadata.labels", "not a key!"}},
		},
	}

	names := map[string]bool{}
	bad := 0
	for _, tc := range cases {
		require.False(t, names[tc.name], "duplicate case name %q", tc.name)
		names[tc.name] = true
		if len(tc.want) > 0 {
			bad++
		}
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj(t)
			err := env.Client.Create(t.Context(), obj)
			if len(tc.want) == 0 {
				require.NoError(t, err)
				return
			}
			requireInvalid(t, err, tc.want...)
			assert.NotContains(t, err.Error(), "s3cr3t", "admission errors never echo a token")
		})
	}
	require.GreaterOrEqual(t, bad, 20, "the table must keep at least 20 rejected objects")
}

// TestIgnitionConfigDefaulting: the variant defaults to flatcar and file permissions to 0644.
func TestIgnitionConfigDefaulting(t *testing.T) {
	ns := env.CreateNamespace(t, "defaulting").Name
	c := newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
		s.Files = []cabpiv1.File{{Path: "/etc/a", Content: "a"}, {Path: "/etc/b", Content: "b", Permissions: "0600"}}
	}))
	require.NoError(t, env.Client.Create(t.Context(), c))

	got := &cabpiv1.IgnitionConfig{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(c), got))
	assert.Equal(t, cabpiv1.VariantFlatcar, got.Spec.Variant)
	assert.Equal(t, "0644", got.Spec.Files[0].Permissions, "defaulted by the webhook")
	assert.Equal(t, "0600", got.Spec.Files[1].Permissions, "kept")

	fcos := newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) { s.Variant = cabpiv1.VariantFCOS }))
	require.NoError(t, env.Client.Create(t.Context(), fcos))
	assert.Equal(t, cabpiv1.VariantFCOS, fcos.Spec.Variant, "an explicit variant is kept")
}

// TestIgnitionConfigUpdate: updates are validated like creates; metadata-only updates are not
// held to the spec checks; spec changes after the data Secret exists are accepted with a warning.
func TestIgnitionConfigUpdate(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "update").Name
	c, rec, err := env.ClientWithWarnings()
	require.NoError(t, err)

	obj := newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
		s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "x"}}
	}))
	require.NoError(t, c.Create(ctx, obj))

	bad := obj.DeepCopy()
	bad.Spec.Files = append(bad.Spec.Files, cabpiv1.File{Path: "/etc/kubeadm.yml", Content: "x"})
	bad.Spec.Butane.Inline = flatcarButane + "systemd:\n  units:\n  - name: kubeadm.service\n    mask: true\n"
	requireInvalid(t, c.Update(ctx, bad),
		cause{"spec.files[1].path", "conflicts with /etc/kubeadm.yml"},
		cause{"spec.butane.inline", "kubeadm.service"})

	obj.Labels = map[string]string{"example.com/team": "a"}
	require.NoError(t, c.Update(ctx, obj), "metadata-only update")

	obj.Spec.PreKubeadmCommands = []string{"echo before the data exists"}
	require.NoError(t, c.Update(ctx, obj))
	assert.Empty(t, rec.Take(), "no warning before the data Secret exists")

	obj.Status.Initialization.DataSecretCreated = ptr.To(true)
	obj.Status.DataSecretName = obj.Name
	require.NoError(t, c.Status().Update(ctx, obj))

	obj.Spec.PreKubeadmCommands = []string{"echo after the data exists"}
	require.NoError(t, c.Update(ctx, obj), "in-place spec changes are allowed")
	warnings := rec.Take()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "is not rendered again")
	assert.Contains(t, warnings[0], "no effect on the Machine")

	bad = obj.DeepCopy()
	bad.Spec.IgnitionVersion = "3.0.0"
	requireInvalid(t, c.Update(ctx, bad), cause{"spec.ignitionVersion", "not supported for flatcar"})

	// A MachinePool's data is rendered again in place while the pool has not started
	// provisioning, and afterwards from the current spec at each token rotation: the warning
	// says which instead of "no effect".
	pool := &clusterv1.MachinePool{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pool"},
		Spec: clusterv1.MachinePoolSpec{ClusterName: "cluster", Template: clusterv1.MachineTemplateSpec{Spec: clusterv1.MachineSpec{
			ClusterName: "cluster", Version: "v1.34.0",
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: cabpiv1.GroupVersion.Group, Kind: "IgnitionConfig", Name: "pool"}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "GenericInfrastructureMachinePool", Name: "pool"},
		}}},
	}
	require.NoError(t, c.Create(ctx, pool))
	poolCfg := newConfig(ns, func(cfg *cabpiv1.IgnitionConfig) {
		cfg.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "MachinePool", Name: pool.Name, UID: pool.UID}}
	})
	require.NoError(t, c.Create(ctx, poolCfg))
	poolCfg.Status.Initialization.DataSecretCreated = ptr.To(true)
	poolCfg.Status.DataSecretName = poolCfg.Name
	require.NoError(t, c.Status().Update(ctx, poolCfg))
	rec.Take() // what came before
	poolCfg.Spec.PreKubeadmCommands = []string{"echo before provisioning"}
	require.NoError(t, c.Update(ctx, poolCfg))
	warnings = rec.Take()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "MachinePool has not started provisioning, so the data is rendered again in place")

	pool.Spec.ProviderIDList = []string{"test:///instance-0"}
	require.NoError(t, c.Update(ctx, pool))
	rec.Take() // what came before
	poolCfg.Spec.PreKubeadmCommands = []string{"echo for new instances"}
	require.NoError(t, c.Update(ctx, poolCfg))
	warnings = rec.Take()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "instances created after its next join-token rotation")
	assert.NotContains(t, warnings[0], "no effect")

	// A Machine's data likewise, until the Machine has a providerID; then never.
	machine := &clusterv1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "machine"},
		Spec: clusterv1.MachineSpec{ClusterName: "cluster", Version: "v1.34.0",
			Bootstrap: clusterv1.Bootstrap{ConfigRef: clusterv1.ContractVersionedObjectReference{
				APIGroup: cabpiv1.GroupVersion.Group, Kind: "IgnitionConfig", Name: "machine"}},
			InfrastructureRef: clusterv1.ContractVersionedObjectReference{APIGroup: "infrastructure.cluster.x-k8s.io", Kind: "GenericInfrastructureMachine", Name: "machine"},
		},
	}
	require.NoError(t, c.Create(ctx, machine))
	machineCfg := newConfig(ns, func(cfg *cabpiv1.IgnitionConfig) {
		cfg.Name = "machine"
		cfg.OwnerReferences = []metav1.OwnerReference{{APIVersion: clusterv1.GroupVersion.String(), Kind: "Machine", Name: machine.Name, UID: machine.UID}}
	})
	require.NoError(t, c.Create(ctx, machineCfg))
	machineCfg.Status.Initialization.DataSecretCreated = ptr.To(true)
	machineCfg.Status.DataSecretName = machineCfg.Name
	require.NoError(t, c.Status().Update(ctx, machineCfg))
	rec.Take() // what came before
	machineCfg.Spec.PreKubeadmCommands = []string{"echo before provisioning"}
	require.NoError(t, c.Update(ctx, machineCfg))
	warnings = rec.Take()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "Machine has not started provisioning, so the data is rendered again in place")

	machine.Spec.ProviderID = "test:///machine"
	require.NoError(t, c.Update(ctx, machine))
	rec.Take() // what came before
	machineCfg.Spec.PreKubeadmCommands = []string{"echo after provisioning"}
	require.NoError(t, c.Update(ctx, machineCfg))
	warnings = rec.Take()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "is not rendered again")
	assert.Contains(t, warnings[0], "no effect on the Machine")
}

// TestIgnitionConfigInPlaceUpdate: while Cluster API updates a config in place (annotation
// clusterv1.UpdateInProgressAnnotation), the spec may change only where the in-place update
// extension applies it to the node, the source's baseURL, and the new value is still checked;
// any other change is refused at its field. Without the annotation, changes are as before.
func TestIgnitionConfigInPlaceUpdate(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "inplace").Name
	c, rec, err := env.ClientWithWarnings()
	require.NoError(t, err)

	obj := newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
		s.Butane.Inline = flatcarButane
		s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext,
			Sysext:      &cabpiv1.SysextSource{BaseURL: "https://mirror-a.example/extensions"},
			DigestsFrom: &cabpiv1.DigestsSource{ConfigMap: &cabpiv1.KeyReference{Name: "mirror-digests", Key: "SHA256SUMS"}}}
	}))
	require.NoError(t, c.Create(ctx, obj))
	obj.Status.Initialization.DataSecretCreated = ptr.To(true)
	obj.Status.DataSecretName = obj.Name
	require.NoError(t, c.Status().Update(ctx, obj))

	obj.Annotations = map[string]string{clusterv1.UpdateInProgressAnnotation: ""}
	require.NoError(t, c.Update(ctx, obj), "the annotation alone")
	rec.Take() // what came before

	obj.Spec.Kubernetes.Sysext.BaseURL = "https://mirror-b.example/extensions"
	require.NoError(t, c.Update(ctx, obj), "an in-place update may change the source's baseURL")
	assert.Empty(t, rec.Take(), "no warning that the change is not rendered again: the extension applies it")

	butane := obj.DeepCopy()
	butane.Spec.Butane.Inline = flatcarButane + "passwd:\n  users:\n  - name: core\n"
	requireInvalid(t, c.Update(ctx, butane),
		cause{"spec.butane", "handles only the Kubernetes version and the source's baseURL"},
		cause{"spec.butane", "Cluster API rolls out other changes by replacing the Machine"})

	source := obj.DeepCopy()
	source.Spec.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
		Binaries: &cabpiv1.BinariesSource{BaseURL: "https://mirror-b.example/release"}}
	requireInvalid(t, c.Update(ctx, source),
		cause{"spec.kubernetes.source", "handles only the Kubernetes version"},
		cause{"spec.kubernetes.binaries.baseURL", "handles only the Kubernetes version"})

	badURL := obj.DeepCopy()
	badURL.Spec.Kubernetes.Sysext.BaseURL = "ftp://mirror-c.example/extensions"
	err = c.Update(ctx, badURL)
	requireInvalid(t, err, cause{"spec.kubernetes.sysext.baseURL", "ftp://mirror-c.example/extensions"})
	assert.NotContains(t, err.Error(), "handles only", "the baseURL may change in place, and is checked as always")

	// Once Cluster API removed the annotation, any change is admitted as before.
	delete(obj.Annotations, clusterv1.UpdateInProgressAnnotation)
	require.NoError(t, c.Update(ctx, obj))
	obj.Spec.Butane.Inline = butane.Spec.Butane.Inline
	require.NoError(t, c.Update(ctx, obj))
	warnings := rec.Take()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "is not rendered again")
}

// TestIgnitionConfigTemplateImmutable: spec.template.spec cannot change; the rejection shows a
// diff that redacts contents and password hashes; metadata changes are fine.
func TestIgnitionConfigTemplateImmutable(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "immutable").Name
	tpl := newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
		s.PreKubeadmCommands = []string{"echo old"}
		s.Files = []cabpiv1.File{{Path: "/etc/app.conf", Content: "old-secret-value"}}
	})
	require.NoError(t, env.Client.Create(ctx, tpl))

	changed := tpl.DeepCopy()
	changed.Spec.Template.Spec.PreKubeadmCommands = []string{"echo new"}
	changed.Spec.Template.Spec.Files[0].Content = "new-secret-value"
	err := env.Client.Update(ctx, changed)
	requireInvalid(t, err,
		cause{"spec.template.spec", "spec.template.spec is immutable"},
		cause{"spec.template.spec", "Diff (-old +new)"},
		cause{"spec.template.spec", "<redacted: changed>"})
	assertDiffLine(t, err, `-\s+"preKubeadmCommands":\s+string\("<redacted>"\)`)
	assertDiffLine(t, err, `\+\s+"preKubeadmCommands":\s+string\("<redacted: changed>"\)`)
	assert.NotContains(t, err.Error(), "secret-value", "file contents are not shown")

	// A user's password hash, added or changed, is named, never shown.
	const oldHash, newHash = "$6$oldsalt$0ldHashValue", "$6$newsalt$NewHashValue"
	withUser := newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) {
		s.Users = []cabpiv1.User{{Name: "ops", PasswordHash: oldHash}}
	})
	require.NoError(t, env.Client.Create(ctx, withUser))
	rehashed := withUser.DeepCopy()
	rehashed.Spec.Template.Spec.Users[0].PasswordHash = newHash
	rehashed.Spec.Template.Spec.Users = append(rehashed.Spec.Template.Spec.Users, cabpiv1.User{Name: "dev", PasswordHash: newHash})
	err = env.Client.Update(ctx, rehashed)
	requireInvalid(t, err, cause{"spec.template.spec", "immutable"})
	assertDiffLine(t, err, `\+\s+"passwordHash":\s+string\("<redacted: changed>"\)`)
	for _, hash := range []string{oldHash, newHash, "0ldHashValue", "NewHashValue", "oldsalt", "newsalt"} {
		assert.NotContains(t, err.Error(), hash, "a password hash is not shown")
	}

	variant := tpl.DeepCopy()
	variant.Spec.Template.Spec.Variant = cabpiv1.VariantFCOS
	err = env.Client.Update(ctx, variant)
	requireInvalid(t, err, cause{"spec.template.spec", "immutable"})
	assertDiffLine(t, err, `-\s+"variant":\s+string\("flatcar"\)`)
	assertDiffLine(t, err, `\+\s+"variant":\s+string\("fcos"\)`)

	tpl.Labels = map[string]string{"example.com/team": "a"}
	tpl.Spec.Template.ObjectMeta.Labels = map[string]string{"example.com/pool": "b"}
	require.NoError(t, env.Client.Update(ctx, tpl), "metadata changes are allowed")
}

// TestIgnitionConfigTemplateTopologyDryRun: Cluster API's topology controller may server-side
// apply a changed template as a dry-run with the dry-run annotation; without either, the same
// change is rejected.
func TestIgnitionConfigTemplateTopologyDryRun(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "dryrun").Name
	tpl := newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) { s.PreKubeadmCommands = []string{"echo old"} })
	require.NoError(t, env.Client.Create(ctx, tpl))

	apply := func(annotate bool, files []any, opts ...client.ApplyOption) error {
		metadata := map[string]any{"name": tpl.Name, "namespace": ns}
		if annotate {
			metadata["annotations"] = map[string]any{clusterv1.TopologyDryRunAnnotation: ""}
		}
		spec := map[string]any{"preKubeadmCommands": []any{"echo new"}}
		if files != nil {
			spec["files"] = files
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": cabpiv1.GroupVersion.String(),
			"kind":       "IgnitionConfigTemplate",
			"metadata":   metadata,
			"spec":       map[string]any{"template": map[string]any{"spec": spec}},
		}}
		opts = append([]client.ApplyOption{client.FieldOwner("capi-topology"), client.ForceOwnership}, opts...)
		return env.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), opts...)
	}
	stored := func(t *testing.T) []string {
		got := &cabpiv1.IgnitionConfigTemplate{}
		require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(tpl), got))
		return got.Spec.Template.Spec.PreKubeadmCommands
	}

	t.Run("dry-run with the annotation is accepted", func(t *testing.T) {
		require.NoError(t, apply(true, nil, client.DryRunAll))
		assert.Equal(t, []string{"echo old"}, stored(t), "a dry-run stores nothing")
	})
	t.Run("dry-run with the annotation is still validated", func(t *testing.T) {
		files := []any{map[string]any{"path": "/etc/kubeadm.yml", "content": "x"}}
		requireInvalid(t, apply(true, files, client.DryRunAll), cause{"spec.template.spec.files[0].path", "conflicts with /etc/kubeadm.yml"})
	})
	t.Run("the annotation without dry-run is rejected", func(t *testing.T) {
		err := apply(true, nil)
		requireInvalid(t, err, cause{"spec.template.spec", "immutable"})
		assertDiffLine(t, err, `\+\s+"preKubeadmCommands":\s+string\("<redacted: changed>"\)`)
		assert.Equal(t, []string{"echo old"}, stored(t))
	})
	t.Run("dry-run without the annotation is rejected", func(t *testing.T) {
		requireInvalid(t, apply(false, nil, client.DryRunAll), cause{"spec.template.spec", "immutable"})
	})
}

// TestContainerLinuxConfigWarningsAreAdmissionWarnings: the transpiler's warnings are admitted
// (not strict), printed with their place under spec.containerLinuxConfig.inline; strict rejects.
func TestContainerLinuxConfigWarningsAreAdmissionWarnings(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "clc-warnings").Name
	c, rec, err := env.ClientWithWarnings()
	require.NoError(t, err)

	const misspelt = "storage:\n  filez:\n  - path: /etc/motd\n"
	// A control-plane template renders twice (init and control-plane join).
	tpl := newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) { s.ContainerLinuxConfig.Inline = misspelt })
	tpl.Spec.Template.ObjectMeta.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
	require.NoError(t, c.Create(ctx, tpl))
	warnings := rec.Take()
	require.Len(t, warnings, 1, "one warning, even when rendered for two roles: %v", warnings)
	assert.Contains(t, warnings[0], "spec.template.spec.containerLinuxConfig.inline: line 2, column 3: Config has unrecognized key: filez")

	strict := newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
		s.ContainerLinuxConfig = cabpiv1.ContainerLinuxConfigSpec{Inline: misspelt, Strict: true}
	}))
	requireInvalid(t, c.Create(ctx, strict), cause{"spec.containerLinuxConfig.inline", "filez (line 2, column 3)"})
}

// TestButaneWarningsAreAdmissionWarnings: a misspelt key Butane drops is admitted (not strict)
// but kubectl prints where it is; with strict the same document is rejected at that place.
func TestButaneWarningsAreAdmissionWarnings(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "warnings").Name
	c, rec, err := env.ClientWithWarnings()
	require.NoError(t, err)

	// flatcarButane is two lines (variant, version): storage starts on line 3.
	misspelt := flatcarButane + "storage:\n  filez:\n  - path: /etc/motd\n"
	// A control-plane config renders twice (init and control-plane join).
	obj := newConfig(ns, func(c *cabpiv1.IgnitionConfig) {
		c.Labels = map[string]string{clusterv1.MachineControlPlaneLabel: ""}
		c.Spec.Butane.Inline = misspelt
	})
	require.NoError(t, c.Create(ctx, obj), "a warning does not reject")
	warnings := rec.Take()
	require.Len(t, warnings, 1, "one warning, even when rendered for two roles: %v", warnings)
	assert.Contains(t, warnings[0], "spec.butane.inline: line 4, column 3")
	assert.Contains(t, warnings[0], "filez")

	rec.Take() // what came before
	tpl := newTemplate(ns, func(s *cabpiv1.IgnitionConfigSpec) { s.Butane.Inline = misspelt })
	require.NoError(t, c.Create(ctx, tpl))
	warnings = rec.Take()
	require.Len(t, warnings, 1)
	assert.Contains(t, warnings[0], "spec.template.spec.butane.inline: line 4, column 3")

	strict := newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
		s.Butane.Inline, s.Butane.Strict = misspelt, true
	}))
	requireInvalid(t, c.Create(ctx, strict), cause{"spec.butane.inline", "filez"})
}

// Three independent mistakes in three parts of the spec (a Butane snippet that does not parse,
// a file at a path the provider owns, a TLS bootstrap token kubeadm refuses) are refused by the
// API server once, all three at their field paths, and nothing else.
func TestThreeMistakesRefusedAtOnce(t *testing.T) {
	ns := env.CreateNamespace(t, "mistakes").Name
	c := newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
		s.Butane.Inline = flatcarButane + "storage: [\n"
		s.Files = []cabpiv1.File{{Path: "/etc/kubeadm.sh", Content: "x"}}
		s.JoinConfiguration.Discovery.TLSBootstrapToken = "not-a-token"
	}))
	err := env.Client.Create(t.Context(), c)
	requireInvalid(t, err,
		cause{"spec.butane.inline", "line 3"},
		cause{"spec.files[0].path", "/etc/kubeadm.sh"},
		cause{"spec.joinConfiguration.discovery.tlsBootstrapToken", "not a kubeadm bootstrap token"})
	var status *apierrors.StatusError
	require.ErrorAs(t, err, &status)
	assert.Len(t, status.ErrStatus.Details.Causes, 3, "%s", testenv.FormatCauses(status.ErrStatus.Details.Causes))
}

// Bad inputs of issue 28 in one config, each refused at its field path in the one answer; the
// base URL's credentials are not in it.
func TestBadInputsRefusedAtOnce(t *testing.T) {
	ns := env.CreateNamespace(t, "mistakes").Name
	c := newConfig(ns, withSpec(func(s *cabpiv1.IgnitionConfigSpec) {
		s.Platform = cabpiv1.PlatformAzure
		s.NodeName = &cabpiv1.NodeNameSource{FromMetadata: cabpiv1.MetadataPlatformAWS}
		s.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
			Binaries: &cabpiv1.BinariesSource{BaseURL: "https://user:hunter2@mirror.example/release"}}
		s.Files = []cabpiv1.File{{Path: "/usr/local/bin/tool", Content: "x"}}
		s.Users = []cabpiv1.User{{Name: "ops", Gecos: "Ops:Team"}}
	}))
	err := env.Client.Create(t.Context(), c)
	requireInvalid(t, err,
		cause{"spec.nodeName.fromMetadata", "platform azure"},
		cause{"spec.kubernetes.binaries.baseURL", "user information"},
		cause{"spec.files[0].path", "read-only"},
		cause{"spec.users[0].gecos", "useradd"})
	assert.NotContains(t, err.Error(), "hunter2")
}
