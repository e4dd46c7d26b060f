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
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	"github.com/coreos/go-systemd/v22/unit"

	infrav1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/infrastructure/api/v1alpha1"
)

//go:embed scripts/*.sh
var scripts embed.FS

// File is one file the image adds to the Debian root.
type File struct {
	// Path is absolute, inside the root.
	Path string
	Mode fs.FileMode
	Data []byte
	// LinkTarget, when set, makes the file a symbolic link to it (Data and Mode unused).
	LinkTarget string
}

// where kubeadm and kubelet are, and where the kubelet's unit is, per flavor: Flatcar's
// documented manual install puts the binaries in /opt/bin (not on systemd's default PATH) and the
// unit in /etc; the Kubernetes sysext or a layered Fedora CoreOS image puts both under /usr.
func binDir(f infrav1.Flavor) string {
	if system(f) == infrav1.FlavorFlatcar {
		return "/opt/bin"
	}
	return "/usr/bin"
}

func unitDir(f infrav1.Flavor) string {
	if system(f) == infrav1.FlavorFlatcar {
		return "/etc/systemd/system"
	}
	return "/usr/lib/systemd/system"
}

// metadataAgent is the unit that writes the platform's metadata for the variant, and what it
// writes: Flatcar's coreos-metadata.service writes /run/metadata/flatcar with COREOS_OPENSTACK_*,
// Fedora CoreOS' afterburn.service /run/metadata/afterburn with AFTERBURN_OPENSTACK_*.
func metadataAgent(f infrav1.Flavor) (unitName, output, prefix string) {
	if system(f) == infrav1.FlavorFlatcar {
		return "coreos-metadata.service", "/run/metadata/flatcar", "COREOS_OPENSTACK"
	}
	return "afterburn.service", "/run/metadata/afterburn", "AFTERBURN_OPENSTACK"
}

// scriptDir holds the image's own boot steps (not part of what the real systems ship).
const scriptDir = "/usr/libexec/cabpi-test"

// Init is what a node runs as PID 1 (nspawn.Spec.Init): it makes the cgroup v1 controllers
// writable and then becomes systemd, so that systemd starts with controllers it can write
// (scripts/init.sh says why not a unit).
const Init = scriptDir + "/init.sh"

// Files are the files the flavor adds to the base root, besides kubeadm and kubelet: the
// kubelet's unit and kubeadm's drop-in for it, the CNI configuration, the sysctl kubeadm's
// preflight wants, the boot steps that make this container behave like the real system, and
// the first-boot machine-id. A stock flavor has no kubelet unit: it merges system extensions at
// boot instead (extensions.go). Sorted by path.
func Files(f infrav1.Flavor) ([]File, error) {
	var files []File
	if f.Stock() {
		files = append(files, sysextFiles()...)
	} else {
		bin := binDir(f)
		files = append(files,
			File{Path: path.Join(unitDir(f), "kubelet.service"), Mode: 0o644, Data: kubeletUnit(bin)},
			File{Path: path.Join(unitDir(f), "kubelet.service.d", "10-kubeadm.conf"), Mode: 0o644, Data: kubeadmDropIn(bin)},
			File{Path: "/etc/systemd/system/multi-user.target.wants/kubelet.service", LinkTarget: path.Join(unitDir(f), "kubelet.service")})
	}
	files = append(files, []File{
		// kubeadm's preflight refuses a node that does not forward IPv4; Flatcar ships this.
		{Path: "/etc/sysctl.d/50-cabpi-test-forward.conf", Mode: 0o644, Data: []byte("net.ipv4.ip_forward = 1\n")},
		// Debian installs the CNI plugins in /usr/lib/cni; containerd 1.6 looks in /opt/cni/bin.
		{Path: "/opt/cni/bin", LinkTarget: "/usr/lib/cni"},
		// A fresh image: systemd applies presets (Ignition's 20-ignition.preset enables
		// kubeadm.service) only on first boot, which an uninitialized machine-id marks.
		{Path: "/etc/machine-id", Mode: 0o444, Data: []byte("uninitialized\n")},
		// Units are off unless something enables them, as on Flatcar and Fedora CoreOS (their
		// 99-default.preset): Debian has no such preset, and its first boot would enable every
		// unit with an [Install] section, the kubelet among them, whoever meant to. First boot
		// applies presets in enable-only mode: what the image enabled stays enabled.
		{Path: "/usr/lib/systemd/system-preset/99-default.preset", Mode: 0o644, Data: []byte("disable *\n")},
		// No resolver: a node reaches only the suite's own addresses.
		{Path: "/etc/resolv.conf", Mode: 0o644, Data: []byte("# no name servers: the node reaches only the test's own network\n")},
	}...)
	conflist, err := cniConfig()
	if err != nil {
		return nil, err
	}
	files = append(files, File{Path: "/etc/cni/net.d/10-cabpi-test-bridge.conflist", Mode: 0o644, Data: conflist})

	names := []string{"init.sh", "metadata.sh", "network.sh"}
	files = append(files,
		unitFile("/etc/systemd/system/cabpi-network.service", networkUnit()),
		unitLink("network-online.target", "/etc/systemd/system/cabpi-network.service"),
		File{Path: "/etc/systemd/system/systemd-networkd.service", LinkTarget: "/dev/null"},
		File{Path: "/etc/systemd/system/systemd-networkd-wait-online.service", LinkTarget: "/dev/null"},
		File{Path: "/etc/systemd/system/systemd-networkd.socket", LinkTarget: "/dev/null"})
	agent, output, prefix := metadataAgent(f)
	files = append(files,
		unitFile(path.Join("/usr/lib/systemd/system", agent), metadataUnit(output, prefix)))
	if system(f) == infrav1.FlavorFlatcar {
		names = append(names, "etc-noexec.sh")
		files = append(files,
			unitFile("/etc/systemd/system/cabpi-etc-noexec.service", etcNoexecUnit()),
			unitLink("sysinit.target", "/etc/systemd/system/cabpi-etc-noexec.service"))
	}
	for _, name := range names {
		data, err := scripts.ReadFile("scripts/" + name)
		if err != nil {
			return nil, fmt.Errorf("reading embedded %s: %w", name, err)
		}
		files = append(files, File{Path: path.Join(scriptDir, name), Mode: 0o755, Data: data})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files, nil
}

func unitFile(p string, opts []*unit.UnitOption) File {
	return File{Path: p, Mode: 0o644, Data: serialize(opts)}
}

// unitLink enables the unit at p for target, as systemctl enable would.
func unitLink(target, p string) File {
	return File{Path: path.Join("/etc/systemd/system", target+".wants", path.Base(p)), LinkTarget: p}
}

func serialize(opts []*unit.UnitOption) []byte {
	b, err := io.ReadAll(unit.Serialize(opts))
	if err != nil {
		panic(fmt.Sprintf("serializing a unit from memory: %v", err)) // a bytes.Reader does not fail
	}
	return b
}

// kubeletUnit is the kubelet's unit as the Kubernetes documentation gives it for kubeadm
// ("Installing kubeadm": the kubelet restarts every few seconds until kubeadm configures it).
func kubeletUnit(bin string) []byte {
	return serialize([]*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", "kubelet: The Kubernetes Node Agent"),
		unit.NewUnitOption("Unit", "Documentation", "https://kubernetes.io/docs/"),
		unit.NewUnitOption("Unit", "Wants", "network-online.target"),
		unit.NewUnitOption("Unit", "After", "network-online.target"),
		unit.NewUnitOption("Service", "ExecStart", path.Join(bin, "kubelet")),
		unit.NewUnitOption("Service", "Restart", "always"),
		unit.NewUnitOption("Service", "StartLimitInterval", "0"),
		unit.NewUnitOption("Service", "RestartSec", "10"),
		unit.NewUnitOption("Install", "WantedBy", "multi-user.target"),
	})
}

// kubeadmDropIn is kubeadm's drop-in for the kubelet, as the Kubernetes documentation gives it:
// the kubeconfigs kubeadm writes, the configuration it writes, the flags it computes at
// kubeadm init/join (kubeadm-flags.env) and the user's (KUBELET_EXTRA_ARGS).
func kubeadmDropIn(bin string) []byte {
	return serialize([]*unit.UnitOption{
		unit.NewUnitOption("Service", "Environment",
			`"KUBELET_KUBECONFIG_ARGS=--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf --kubeconfig=/etc/kubernetes/kubelet.conf"`),
		unit.NewUnitOption("Service", "Environment", `"KUBELET_CONFIG_ARGS=--config=/var/lib/kubelet/config.yaml"`),
		unit.NewUnitOption("Service", "EnvironmentFile", "-/var/lib/kubelet/kubeadm-flags.env"),
		unit.NewUnitOption("Service", "EnvironmentFile", "-/etc/default/kubelet"),
		unit.NewUnitOption("Service", "ExecStart", ""),
		unit.NewUnitOption("Service", "ExecStart",
			path.Join(bin, "kubelet")+" $KUBELET_KUBECONFIG_ARGS $KUBELET_CONFIG_ARGS $KUBELET_KUBEADM_ARGS $KUBELET_EXTRA_ARGS"),
	})
}

// earlyOneshot is a oneshot unit that runs a script of the image before the rest of the boot.
func earlyOneshot(description, script string, args ...string) []*unit.UnitOption {
	exec := "/bin/bash " + path.Join(scriptDir, script)
	for _, a := range args {
		exec += " " + a
	}
	return []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", description),
		unit.NewUnitOption("Unit", "DefaultDependencies", "no"),
		unit.NewUnitOption("Unit", "Before", "sysinit.target"),
		unit.NewUnitOption("Service", "Type", "oneshot"),
		unit.NewUnitOption("Service", "RemainAfterExit", "yes"),
		unit.NewUnitOption("Service", "ExecStart", exec),
	}
}

// networkUnit configures host0 before network-online.target, which kubeadm.service and the
// kubelet wait for.
func networkUnit() []*unit.UnitOption {
	return []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", "cabpi test node: host0 with the address the infrastructure assigned"),
		unit.NewUnitOption("Unit", "Before", "network-online.target network.target"),
		unit.NewUnitOption("Unit", "Wants", "network.target"),
		unit.NewUnitOption("Service", "Type", "oneshot"),
		unit.NewUnitOption("Service", "RemainAfterExit", "yes"),
		unit.NewUnitOption("Service", "ExecStart", "/bin/bash "+path.Join(scriptDir, "network.sh")),
	}
}

func etcNoexecUnit() []*unit.UnitOption {
	opts := earlyOneshot("cabpi test node: /etc noexec, as on Flatcar 4628 and later", "etc-noexec.sh")
	return append(opts, unit.NewUnitOption("Unit", "After", "local-fs.target"))
}

// metadataUnit is the platform agent of the variant: started by what requires it (the
// providers' kubeadm.service drop-in, cabpi's nodeName.fromMetadata), as on the real systems.
func metadataUnit(output, prefix string) []*unit.UnitOption {
	return []*unit.UnitOption{
		unit.NewUnitOption("Unit", "Description", "cabpi test node: the platform's metadata ("+prefix+"_*)"),
		unit.NewUnitOption("Service", "Type", "oneshot"),
		unit.NewUnitOption("Service", "RemainAfterExit", "yes"),
		unit.NewUnitOption("Service", "ExecStart", "/bin/bash "+path.Join(scriptDir, "metadata.sh")+" "+output+" "+prefix),
	}
}

// cniPlugin is one plugin of a CNI network configuration list; only what the bridge and
// host-local plugins read.
type cniPlugin struct {
	Type        string   `json:"type"`
	Bridge      string   `json:"bridge,omitempty"`
	IsGateway   bool     `json:"isGateway,omitempty"`
	IPMasq      bool     `json:"ipMasq,omitempty"`
	HairpinMode bool     `json:"hairpinMode,omitempty"`
	IPAM        *cniIPAM `json:"ipam,omitempty"`
	// Capabilities of the portmap plugin.
	Capabilities map[string]bool `json:"capabilities,omitempty"`
}

type cniIPAM struct {
	Type   string       `json:"type"`
	Ranges [][]cniRange `json:"ranges"`
	Routes []cniRoute   `json:"routes"`
}

type cniRange struct {
	Subnet string `json:"subnet"`
}

type cniRoute struct {
	Dst string `json:"dst"`
}

type cniConfList struct {
	CNIVersion string      `json:"cniVersion"`
	Name       string      `json:"name"`
	Plugins    []cniPlugin `json:"plugins"`
}

// PodSubnet is the node-local range pods get addresses from: a plain bridge per node, so a Node
// becomes Ready without a network add-on (pods on different nodes do not reach each other).
const PodSubnet = "10.244.0.0/24"

func cniConfig() ([]byte, error) {
	b, err := json.MarshalIndent(cniConfList{
		CNIVersion: "0.4.0",
		Name:       "cabpi-test",
		Plugins: []cniPlugin{
			{Type: "bridge", Bridge: "cni0", IsGateway: true, IPMasq: true, HairpinMode: true, IPAM: &cniIPAM{
				Type:   "host-local",
				Ranges: [][]cniRange{{{Subnet: PodSubnet}}},
				Routes: []cniRoute{{Dst: "0.0.0.0/0"}},
			}},
			{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
		},
	}, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the CNI configuration: %w", err)
	}
	return append(b, '\n'), nil
}
