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

package migration_test

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/convert"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootcheck"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/testenv"
)

const (
	timeout = 60 * time.Second
	tick    = 100 * time.Millisecond
)

// providerTemplate is the CAPA Flatcar flavor as clusterctl would hand it over: its variables
// set, clusterctl's "$$" escape turned into "$".
func providerTemplate(t *testing.T, clusterName string) []byte {
	t.Helper()
	root, err := testenv.RepoRoot()
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(root, "internal", "convert", "testdata", "capa-flatcar.yaml"))
	require.NoError(t, err)
	vars := map[string]string{"$": "$", "CLUSTER_NAME": clusterName, "KUBERNETES_VERSION": testenv.KubernetesVersion,
		"CONTROL_PLANE_MACHINE_COUNT": "1", "WORKER_MACHINE_COUNT": "1"}
	return []byte(os.Expand(string(raw), func(name string) string {
		v, ok := vars[name]
		if !ok {
			return "${" + name + "}" // a variable this test does not need stays as it is
		}
		return v
	}))
}

// convertedWorkerTemplate converts the flavor as `cabpi convert` does and returns the
// IgnitionConfigTemplate of its workers and the report convert prints on stderr.
func convertedWorkerTemplate(t *testing.T, ns, name string, src []byte) (*cabpiv1.IgnitionConfigTemplate, string) {
	t.Helper()
	res, err := convert.Convert(src)
	require.NoError(t, err)
	require.Zero(t, res.Lossy(), "findings: %v", res.Findings)
	var report strings.Builder
	for _, f := range res.Findings {
		report.WriteString(f.String() + "\n")
	}
	docs := strings.Split(string(res.Output), "\n---\n")
	for _, doc := range docs {
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal([]byte(doc), &meta))
		if meta.Kind != "IgnitionConfigTemplate" {
			continue
		}
		tpl := &cabpiv1.IgnitionConfigTemplate{}
		require.NoError(t, yaml.UnmarshalStrict([]byte(doc), tpl))
		if tpl.Name != name {
			continue
		}
		tpl.Namespace = ns
		return tpl, report.String()
	}
	require.FailNow(t, "convert wrote no IgnitionConfigTemplate "+name, string(res.Output))
	return nil, ""
}

func TestCABPKFlatcarWorkerTemplateMovesOver(t *testing.T) {
	ctx := t.Context()
	ns := env.CreateNamespace(t, "capa").Name
	const clusterName = "capa"
	const md = clusterName + "-md-0"

	tpl, report := convertedWorkerTemplate(t, ns, md, providerTemplate(t, clusterName))
	// What convert cannot carry over is on stderr, each with its object and path.
	assert.Contains(t, report, "MachineDeployment "+md+": spec.template.spec.bootstrap.configRef",
		"convert names the reference the user still has to change")
	require.NotEmpty(t, tpl.Spec.Template.Spec.ContainerLinuxConfig.Inline, "the Container Linux Config is carried over")

	c, rec, err := env.ClientWithWarnings()
	require.NoError(t, err)
	require.NoError(t, c.Create(ctx, tpl), "the converted template is admitted")
	warnings := rec.Take()
	t.Logf("admission warnings: %v", warnings)

	cluster, err := env.CreateJoinableCluster(ctx, ns, clusterName)
	require.NoError(t, err)
	require.NoError(t, env.Client.Create(ctx, testenv.NewGenericInfraMachineTemplate(ns, md)))
	require.NoError(t, env.Client.Create(ctx, testenv.NewMachineDeployment(cluster, md, 1)))

	// Cluster API clones the template for the Machine; cabpi renders it.
	var config *cabpiv1.IgnitionConfig
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		machines := &clusterv1.MachineList{}
		require.NoError(c, env.Client.List(ctx, machines, client.InNamespace(ns)))
		require.Len(c, machines.Items, 1)
		got := &cabpiv1.IgnitionConfig{}
		require.NoError(c, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: machines.Items[0].Spec.Bootstrap.ConfigRef.Name}, got))
		cond := conditions.Get(got, cabpiv1.DataSecretAvailableCondition)
		require.NotNil(c, cond)
		require.Equal(c, metav1.ConditionTrue, cond.Status, "%s: %s", cond.Reason, cond.Message)
		// Cluster API's patch helper writes the conditions before the rest of the status: the
		// contract's fields say the data is there.
		require.True(c, ptr.Deref(got.Status.Initialization.DataSecretCreated, false), "status.initialization.dataSecretCreated")
		require.NotEmpty(c, got.Status.DataSecretName)
		config = got
	}, timeout, tick)
	cond := conditions.Get(config, cabpiv1.DataSecretAvailableCondition)
	// Warnings the render found are on the condition (reason RenderedWithWarnings) and nowhere
	// hidden: the condition says so exactly when admission warned about the snippet.
	snippetWarned := slices.ContainsFunc(warnings, func(w string) bool {
		return strings.Contains(w, "containerLinuxConfig") || strings.Contains(w, "butane")
	})
	assert.Equal(t, snippetWarned, cond.Reason == cabpiv1.RenderedWithWarningsReason,
		"admission warnings %v, condition %s: %s", warnings, cond.Reason, cond.Message)

	secret := &corev1.Secret{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: config.Status.DataSecretName}, secret))
	// The data applied by the real ignition-apply; kubeadm.service checked by the host's real
	// systemd; the bootstrap script run on bash (test/framework/bootcheck). The boot itself is the
	// real-node suite's (docs/adr/029-one-way-to-boot-a-node.md).
	root := ignitionapply.Apply(t, secret.Data["value"])
	bootcheck.Verify(t, root, "kubeadm.service")
	assert.True(t, bootcheck.Enabled(t, root, "kubeadm.service"))
	unit := bootcheck.ReadUnit(t, root, "kubeadm.service")
	assert.Equal(t, []string{"/bin/bash " + bootcheck.ScriptPath}, unit.Values("Service", "ExecStart"))
	var dropins []string
	for _, f := range unit.Files[1:] {
		dropins = append(dropins, f.Path)
	}
	assert.Contains(t, dropins, "/etc/systemd/system/kubeadm.service.d/10-flatcar.conf", "the flavor's drop-in is on the node")
	assert.Contains(t, unit.Words("Unit", "After"), "coreos-metadata.service", "kubeadm waits for the metadata, as the flavor wants")
	assert.True(t, slices.ContainsFunc(unit.Values("Service", "EnvironmentFile"), func(file string) bool {
		matched, err := path.Match(strings.TrimPrefix(file, "-"), "/run/metadata/flatcar")
		return err == nil && matched
	}), "kubeadm reads the metadata coreos-metadata writes (%v), as the flavor wants", unit.Values("Service", "EnvironmentFile"))
	rep := bootcheck.RunScript(t, root, bootcheck.ScriptOptions{KubeadmDir: "/opt/bin",
		// What coreos-metadata, which the flavor's kubeadm.service drop-in waits for, wrote.
		Env: map[string]string{"COREOS_EC2_HOSTNAME": "ip-10-0-0-1.ec2.internal"}})
	require.Equal(t, 0, rep.ExitCode, rep.Output)
	require.Len(t, rep.KubeadmCalls, 1, "kubeadm joins once")
	assert.Contains(t, rep.KubeadmCalls[0].Config, "name: ip-10-0-0-1.ec2.internal", "the node is named from the metadata")
	assert.True(t, rep.SentinelExists)
}
