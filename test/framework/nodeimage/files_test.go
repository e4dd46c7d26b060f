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

package nodeimage

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"

	"github.com/coreos/go-systemd/v22/unit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
)

// byPath indexes a flavor's files.
func byPath(t *testing.T, f infrav1.Flavor) map[string]File {
	t.Helper()
	files, err := Files(f)
	require.NoError(t, err)
	m := map[string]File{}
	for _, file := range files {
		require.NotContains(t, m, file.Path, "a path written twice")
		m[file.Path] = file
	}
	return m
}

// option is the last value of section.name in a unit (a later assignment wins in systemd).
func option(t *testing.T, data []byte, section, name string) []string {
	t.Helper()
	opts, err := unit.Deserialize(bytes.NewReader(data))
	require.NoError(t, err)
	var values []string
	for _, o := range opts {
		if o.Section == section && o.Name == name {
			values = append(values, o.Value)
		}
	}
	return values
}

// The two flavors differ where Flatcar and Fedora CoreOS do, and only there.
func TestFlavorsDifferAsTheSystemsDo(t *testing.T) {
	for _, tc := range []struct {
		flavor                            infrav1.Flavor
		kubelet, unitDir, agent, agentOut string
		etcNoexec                         bool
	}{
		{infrav1.FlavorFlatcar, "/opt/bin/kubelet", "/etc/systemd/system", "coreos-metadata.service", "/run/metadata/flatcar COREOS_OPENSTACK", true},
		{infrav1.FlavorFCOS, "/usr/bin/kubelet", "/usr/lib/systemd/system", "afterburn.service", "/run/metadata/afterburn AFTERBURN_OPENSTACK", false},
	} {
		t.Run(string(tc.flavor), func(t *testing.T) {
			files := byPath(t, tc.flavor)
			unitFile, ok := files[tc.unitDir+"/kubelet.service"]
			require.True(t, ok, "the kubelet's unit in %s", tc.unitDir)
			assert.Equal(t, []string{tc.kubelet}, option(t, unitFile.Data, "Service", "ExecStart"))
			assert.Equal(t, []string{"multi-user.target"}, option(t, unitFile.Data, "Install", "WantedBy"))
			assert.Equal(t, tc.unitDir+"/kubelet.service", files["/etc/systemd/system/multi-user.target.wants/kubelet.service"].LinkTarget, "enabled")

			dropIn := files[tc.unitDir+"/kubelet.service.d/10-kubeadm.conf"]
			exec := option(t, dropIn.Data, "Service", "ExecStart")
			require.Len(t, exec, 2, "ExecStart reset, then kubeadm's")
			assert.Empty(t, exec[0])
			assert.True(t, strings.HasPrefix(exec[1], tc.kubelet+" $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS"), exec[1])
			assert.Contains(t, option(t, dropIn.Data, "Service", "EnvironmentFile"), "-/var/lib/kubelet/kubeadm-flags.env")

			agent, ok := files["/usr/lib/systemd/system/"+tc.agent]
			require.True(t, ok, "the platform agent %s", tc.agent)
			assert.Equal(t, []string{"/bin/bash /usr/libexec/cabpi-test/metadata.sh " + tc.agentOut}, option(t, agent.Data, "Service", "ExecStart"))

			_, noexec := files["/etc/systemd/system/sysinit.target.wants/cabpi-etc-noexec.service"]
			assert.Equal(t, tc.etcNoexec, noexec, "/etc noexec only where Flatcar has it")
			_, script := files["/usr/libexec/cabpi-test/etc-noexec.sh"]
			assert.Equal(t, tc.etcNoexec, script)

			// Common to both: first boot, forwarding, the CNI plugins where containerd looks.
			assert.Equal(t, "uninitialized\n", string(files["/etc/machine-id"].Data))
			assert.Equal(t, "disable *\n", string(files["/usr/lib/systemd/system-preset/99-default.preset"].Data), "units off unless enabled")
			assert.Equal(t, "net.ipv4.ip_forward = 1\n", string(files["/etc/sysctl.d/50-cabpi-test-forward.conf"].Data))
			assert.Equal(t, "/usr/lib/cni", files["/opt/cni/bin"].LinkTarget)
			// host0 configured before network-online.target by the image's agent; networkd, which
			// waits for udev when /sys is writable, masked.
			assert.Equal(t, "/etc/systemd/system/cabpi-network.service",
				files["/etc/systemd/system/network-online.target.wants/cabpi-network.service"].LinkTarget)
			assert.Contains(t, option(t, files["/etc/systemd/system/cabpi-network.service"].Data, "Unit", "Before"), "network-online.target network.target")
			for _, masked := range []string{"systemd-networkd.service", "systemd-networkd.socket", "systemd-networkd-wait-online.service"} {
				assert.Equal(t, "/dev/null", files["/etc/systemd/system/"+masked].LinkTarget, masked)
			}
			// PID 1 makes the cgroup controllers writable before systemd starts: no unit does.
			assert.Equal(t, fs.FileMode(0o755), files[Init].Mode, "the init is executable")
			assert.Contains(t, string(files[Init].Data), "exec /lib/systemd/systemd \"$@\"", "the init becomes systemd, with the arguments it was given")
			_, unitDoes := files["/etc/systemd/system/sysinit.target.wants/cabpi-cgroups-writable.service"]
			assert.False(t, unitDoes)
		})
	}
}

// The CNI configuration is a bridge with host-local addresses and portmap, readable as a list.
func TestCNIConfig(t *testing.T) {
	data, err := cniConfig()
	require.NoError(t, err)
	var list struct {
		CNIVersion string `json:"cniVersion"`
		Plugins    []struct {
			Type string `json:"type"`
			IPAM struct {
				Type   string                `json:"type"`
				Ranges [][]map[string]string `json:"ranges"`
			} `json:"ipam"`
		} `json:"plugins"`
	}
	require.NoError(t, json.Unmarshal(data, &list))
	require.Len(t, list.Plugins, 2)
	assert.Equal(t, "bridge", list.Plugins[0].Type)
	assert.Equal(t, "host-local", list.Plugins[0].IPAM.Type)
	assert.Equal(t, PodSubnet, list.Plugins[0].IPAM.Ranges[0][0]["subnet"])
	assert.Equal(t, "portmap", list.Plugins[1].Type)
}
