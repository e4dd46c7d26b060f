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
			return cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceSysext, Sysext: &cabpiv1.SysextSource{BaseURL: releases.SysextURL()}}
		}, assertSysextMerged},
		{stockFCOS, func() cabpiv1.KubernetesSpec {
			return cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries, Binaries: &cabpiv1.BinariesSource{BaseURL: releases.BinariesURL()}}
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
		assert.Positive(t, releases.Requests("/release/"+version+"/bin/linux/amd64/"+name+".sha256"), "%s's SHA-256 came from the release server", name)
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

// A release binary that does not match its published SHA-256 never runs: kubeadm.service fails
// before kubeadm, with no sentinel at any 200 ms look, nothing installed in /opt/bin, no kubelet
// enabled, and no Node.
func TestTamperedReleaseBinaryNeverRuns(t *testing.T) {
	t.Parallel()
	f := stockFCOS
	ctx := t.Context()
	name := "tampered-binary"
	spec := workerSpec(f, "tampered")
	spec.Kubernetes = cabpiv1.KubernetesSpec{Source: cabpiv1.KubernetesSourceBinaries,
		Binaries: &cabpiv1.BinariesSource{BaseURL: releases.TamperedBinariesURL()}}
	labels := map[string]string{clusterv1.ClusterNameLabel: clusterName}
	config, infra, machine := standaloneMachine(clusterName, name, kubernetesVersion, labels, spec, infrav1.NspawnMachineSpec{Flavor: f.name})
	create(t, config, infra, machine)
	t.Cleanup(func() { deleteAndWait(t, machine, 3*time.Minute) })

	var inst *provider.Instance
	require.Eventually(t, func() bool { inst = instanceOf(t, machine); return inst != nil && inst.Running() },
		3*time.Minute, time.Second, "the node of %s boots", name)
	// Never a sentinel while kubeadm runs, nor after it failed.
	requireKubeadmFailsWithoutSentinel(t, inst, "with a tampered kubelet")
	assert.Equal(t, "exit-code", unitProperty(t, inst, "kubeadm.service", "Result"))
	journal, _ := onNode(t, inst, "journalctl", "--no-pager", "-u", "kubeadm.service", "-o", "cat")
	assert.Contains(t, journal, releaseserver.TamperedBinary+" "+kubernetesVersion+" does not match its published SHA-256", "the bootstrap names the binary")
	assert.NotContains(t, journal, "[preflight]", "kubeadm never ran")
	for _, bin := range []string{"kubeadm", "kubelet"} {
		assert.False(t, exists(t, inst, "/opt/bin/"+bin), "/opt/bin/%s is not installed", bin)
	}
	// The bootstrap enables the kubelet only once every binary matched (the images disable what
	// nothing enables, as Flatcar's and Fedora's presets do).
	assert.Equal(t, "disabled", unitProperty(t, inst, "kubelet.service", "UnitFileState"), "the kubelet is not enabled")
	assert.NotEqual(t, "active", unitProperty(t, inst, "kubelet.service", "ActiveState"), "no kubelet runs")
	assert.Positive(t, releases.Requests("/tampered/release/"+kubernetesVersion+"/bin/linux/amd64/"+releaseserver.TamperedBinary))

	cur := &clusterv1.Machine{}
	require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(machine), cur))
	assert.False(t, cur.Status.NodeRef.IsDefined(), "no nodeRef")
	assert.True(t, nodeGone(ctx, name), "no Node")
	nm := &infrav1.NspawnMachine{}
	require.NoError(t, mgmt.Client.Get(ctx, client.ObjectKeyFromObject(infra), nm))
	assert.False(t, conditions.IsTrue(nm, infrav1.BootstrapSucceededCondition), "the infrastructure saw no sentinel")
}
