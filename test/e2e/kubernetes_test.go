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

package e2e_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/provider"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/releaseserver"
)

// The stock images: no Kubernetes in them, as Flatcar and Fedora CoreOS ship.
var (
	stockFlatcar = flavor{name: infrav1.FlavorFlatcarStock, variant: cabpiv1.VariantFlatcar, butaneVariant: "flatcar", butaneVersion: "1.0.0"}
	stockFCOS    = flavor{name: infrav1.FlavorFCOSStock, variant: cabpiv1.VariantFCOS, butaneVariant: "fcos", butaneVersion: "1.5.0"}
)

// Kubernetes at the Machine's version (spec.kubernetes), on images without it: a
// MachineDeployment of one worker at the previous minor joins with kubeadm and kubelet of that
// version; changing only the MachineDeployment's spec.version rolls out a node with the newer
// ones, no template edited. The Kubernetes system extension on the flatcar-like image (merged by
// systemd-sysext, not copied), the release binaries on the fcos-like one; side by side.
func TestKubernetesFollowsTheMachineVersion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		f          flavor
		kubernetes func() cabpiv1.KubernetesSpec
		// installed checks on the node how Kubernetes of the version got there.
		installed func(t *testing.T, inst *provider.Instance, version string)
	}{
		{stockFlatcar, func() cabpiv1.KubernetesSpec {
			return cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{BaseURL: releases.SysextURL()}}
		}, assertSysextMerged},
		{stockFCOS, func() cabpiv1.KubernetesSpec {
			return cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: releases.BinariesURL()}}
		}, assertBinariesInstalled},
	} {
		t.Run(string(tc.f.name), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			md := string(tc.f.name) + "-version"
			bootstrap := ignitionTemplate(tc.f, md, "v")
			bootstrap.Spec.Template.Spec.Kubernetes = tc.kubernetes()
			infra := infraTemplate(tc.f, md)
			create(t, bootstrap, infra)
			deployment := machineDeployment(md, 1, md, md)
			deployment.Spec.Template.Spec.Version = previousKubernetesVersion
			create(t, deployment)
			t.Cleanup(func() { deleteAndWait(t, deployment, 5*time.Minute) })

			var old []clusterv1.Machine
			ok := t.Run("joins at "+previousKubernetesVersion, func(t *testing.T) {
				old = waitDeployment(t, tc.f, md, 1, nil, joinWithin)
				assertWorkerJoined(t, &old[0], "v")
				tc.installed(t, instanceOf(t, &old[0]), previousKubernetesVersion)
			})
			require.True(t, ok, "the worker did not join: nothing to upgrade")

			t.Run("upgraded by spec.version alone", func(t *testing.T) {
				templates := []client.Object{&cabpiv1.IgnitionConfigTemplate{}, &infrav1.NspawnMachineTemplate{}}
				versions := map[client.Object]string{}
				for _, o := range templates {
					require.NoError(t, mgmt.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: md}, o))
					versions[o] = o.GetResourceVersion()
				}
				d := &clusterv1.MachineDeployment{}
				require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(deployment), d))
				before := d.DeepCopy()
				d.Spec.Template.Spec.Version = kubernetesVersion
				require.NoError(t, mgmt.Client.Patch(ctx, d, client.MergeFrom(before)))

				upgraded := waitDeployment(t, tc.f, md, 1, names(old), joinWithin+time.Minute)
				require.Equal(t, kubernetesVersion, upgraded[0].Spec.Version)
				assertWorkerJoined(t, &upgraded[0], "v")
				tc.installed(t, instanceOf(t, &upgraded[0]), kubernetesVersion)
				assertRemoved(t, old, nil)
				for _, o := range templates {
					cur := o.DeepCopyObject().(client.Object)
					require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(o), cur))
					assert.Equal(t, versions[o], cur.GetResourceVersion(), "%T %s is not edited", o, md)
				}
			})
		})
	}
}

// assertSysextMerged: systemd-sysext merged the extension of the version into /usr (an overlay
// whose lower layers are the image's /usr and the extension's), and kubeadm and the kubelet in
// use are the extension's.
func assertSysextMerged(t *testing.T, inst *provider.Instance, version string) {
	t.Helper()
	status, err := onNode(t, inst, "systemd-sysext", "status")
	require.NoError(t, err)
	t.Logf("systemd-sysext status:\n%s", status)
	merged := false
	for _, line := range strings.Split(status, "\n") {
		fields := strings.Fields(line)
		if len(fields) >= 2 && fields[0] == "/usr" && fields[1] == "kubernetes" {
			merged = true
		}
	}
	assert.True(t, merged, "systemd-sysext status lists the kubernetes extension on /usr")
	fs, err := onNode(t, inst, "findmnt", "--noheadings", "--output", "FSTYPE,OPTIONS", "/usr")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(fs, "overlay") && strings.Contains(fs, "/run/systemd/sysext/extensions/kubernetes/usr"),
		"/usr is systemd-sysext's overlay with the extension: %s", fs)
	link, err := onNode(t, inst, "readlink", "/etc/extensions/kubernetes.raw")
	require.NoError(t, err)
	assert.Equal(t, "/opt/extensions/kubernetes/kubernetes-"+version+"-x86-64.raw", link)
	assert.Equal(t, "/usr/bin/kubeadm", commandPath(t, inst), "kubeadm.service runs the extension's kubeadm")
	kubeadm, err := onNode(t, inst, "/usr/bin/kubeadm", "version", "-o", "short")
	require.NoError(t, err)
	assert.Equal(t, version, kubeadm)
	// Debian's /lib is /usr/lib: systemd may name either.
	fragment := unitProperty(t, inst, "kubelet.service", "FragmentPath")
	assert.Contains(t, []string{"/usr/lib/systemd/system/kubelet.service", "/lib/systemd/system/kubelet.service"}, fragment, "the extension's kubelet unit")
	assert.Positive(t, releases.Requests("/extensions/kubernetes-"+version+"-x86-64.raw"), "the image came from the release server")
}

// assertBinariesInstalled: the release binaries of the version are in /opt/bin, and the kubelet
// runs from there under the unit cabpi wrote.
func assertBinariesInstalled(t *testing.T, inst *provider.Instance, version string) {
	t.Helper()
	for _, name := range []string{"kubeadm", "kubelet"} {
		mode, err := onNode(t, inst, "stat", "--format", "%a", "/opt/bin/"+name)
		require.NoError(t, err)
		assert.Equal(t, "755", mode, "/opt/bin/%s", name)
		assert.Positive(t, releases.Requests("/release/"+version+"/bin/linux/amd64/"+name), "%s came from the release server", name)
		assert.Zero(t, releases.Requests("/release/"+version+"/bin/linux/amd64/"+name+".sha256"), "%s's digest is the user's pin, not the mirror's", name)
	}
	assert.False(t, exists(t, inst, "/usr/bin/kubeadm"), "the stock image has no kubeadm of its own")
	kubeadm, err := onNode(t, inst, "/opt/bin/kubeadm", "version", "-o", "short")
	require.NoError(t, err)
	assert.Equal(t, version, kubeadm)
	assert.Equal(t, "/etc/systemd/system/kubelet.service", unitProperty(t, inst, "kubelet.service", "FragmentPath"), "cabpi's kubelet unit")
	assert.Equal(t, "enabled", unitProperty(t, inst, "kubelet.service", "UnitFileState"), "the bootstrap enabled the kubelet")
	assert.Contains(t, unitProperty(t, inst, "kubelet.service", "ExecStart"), "path=/opt/bin/kubelet")
}

// commandPath is where kubeadm.service's PATH finds kubeadm on the node.
func commandPath(t *testing.T, inst *provider.Instance) string {
	t.Helper()
	p, err := onNode(t, inst, "bash", "-c", "export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/opt/bin; command -v kubeadm")
	require.NoError(t, err)
	return p
}

// A mirror that lies: it serves a changed kubelet with a .sha256 that matches the change, or a
// changed system extension image with a SHA256SUMS that matches it. The node never runs either:
// each download is pinned to the digest the user chose (spec.kubernetes.digestsFrom, the
// release server's genuine files), and Ignition refuses the file before anything runs. Here
// Ignition is the host's ignition-apply, as the initramfs on a node: its log (the NspawnMachine's
// condition, the node's first journal) names the pin that failed; the machine never boots, so
// no sentinel and no Node. The tampered layout was asked, so the refusal is the pin's.
func TestTamperedMirrorNeverRuns(t *testing.T) {
	t.Parallel()
	pins, err := nodelayout.ParseDigests([]byte(releases.Digests()))
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		f    flavor
		k    cabpiv1.KubernetesSpec
		// pin is the download whose pin fails; fetched, the path the tampered layout served it at.
		pin, fetched string
	}{
		{"tampered-binary", stockFCOS, cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceBinaries,
			Binaries: &cabpiv1.BinariesSource{BaseURL: releases.TamperedBinariesURL()}},
			kubernetesVersion + "/bin/linux/amd64/" + releaseserver.TamperedBinary,
			"/tampered/release/" + kubernetesVersion + "/bin/linux/amd64/" + releaseserver.TamperedBinary},
		{"tampered-sysext", stockFlatcar, cabpiv1.KubernetesSpec{DigestsFrom: suiteDigests, Source: cabpiv1.KubernetesSourceSysext,
			Sysext: &cabpiv1.SysextSource{BaseURL: releases.TamperedSysextURL()}},
			"kubernetes-" + kubernetesVersion + "-x86-64.raw",
			"/tampered/extensions/kubernetes-" + kubernetesVersion + "-x86-64.raw"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			require.Contains(t, pins, tc.pin)
			spec := workerSpec(tc.f, "tampered")
			spec.Kubernetes = tc.k
			labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
			config, infra, machine := standaloneMachine(clusterName, tc.name, kubernetesVersion, labels, spec, infrav1.NspawnMachineSpec{Flavor: tc.f.name})
			create(t, config, infra, machine)
			t.Cleanup(func() { deleteAndWait(t, machine, 3*time.Minute) })

			// cabpi stored the data, pinned to the user's digest.
			require.Eventually(t, func() bool {
				cur := &cabpiv1.IgnitionConfig{}
				return mgmt.Client.Get(ctx, client.ObjectKeyFromObject(config), cur) == nil && cur.Status.Initialization.DataSecretCreated != nil &&
					*cur.Status.Initialization.DataSecretCreated
			}, 2*time.Minute, time.Second, "the data Secret of %s is stored", tc.name)

			nm := &infrav1.NspawnMachine{}
			var message string
			require.Eventually(t, func() bool {
				if err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(infra), nm); err != nil {
					return false
				}
				c := conditions.Get(nm, infrav1.ReadyCondition)
				if c == nil || c.Reason != infrav1.BootstrapDataInvalidReason {
					return false
				}
				message = c.Message
				return true
			}, 3*time.Minute, time.Second, "Ignition refuses the data of %s", tc.name)
			t.Logf("Ignition: %s", message)
			assert.Contains(t, message, "hash verification failed", "Ignition's log says the check failed")
			assert.Contains(t, message, "but expected "+pins[tc.pin], "and names the pin")
			assert.Positive(t, releases.Requests(tc.fetched), "the tampered file was fetched, and refused")
			assert.Nil(t, instanceOf(t, machine), "the machine never boots: nothing of what the mirror served runs")
			assert.False(t, conditions.IsTrue(nm, infrav1.BootstrapSucceededCondition), "no sentinel")

			cur := &clusterv1.Machine{}
			require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), cur))
			assert.False(t, cur.Status.NodeRef.IsDefined(), "no nodeRef")
			assert.True(t, nodeGone(ctx, tc.name), "no Node")
		})
	}
}
