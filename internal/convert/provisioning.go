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
	"io"
	"strings"

	butanebase "github.com/coreos/butane/base/v0_4"
	"github.com/coreos/go-systemd/v22/unit"
	"k8s.io/utils/ptr"
	kubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
)

// timesyncdDropin carries ntp.servers; Flatcar keeps time with systemd-timesyncd.
const (
	timesyncdDropin = "/etc/systemd/timesyncd.conf.d/10-cluster-api-ntp.conf"
	timesyncdUnit   = "systemd-timesyncd.service"
)

// ignitionFormats are the filesystem formats Ignition creates.
var ignitionFormats = map[string]bool{"ext4": true, "xfs": true, "btrfs": true, "vfat": true, "swap": true}

// partitionTypeGUIDs are the GPT types of cloud-init's (MBR) partition type names.
var partitionTypeGUIDs = map[string]string{
	kubeadmv1.PartitionTypeLinux:     "0FC63DAF-8483-4772-8E79-3D69D8477DE4",
	kubeadmv1.PartitionTypeLinuxSwap: "0657FD6D-A4AB-43C4-84E5-0933C84B4F4F",
	kubeadmv1.PartitionTypeLinuxRAID: "A19D880F-05FC-4D3B-A006-743F0F84911E",
	kubeadmv1.PartitionTypeLVM:       "E6D6D379-F507-44C2-A23C-238F2A3DF928",
	kubeadmv1.PartitionTypeFat32:     "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7",
	kubeadmv1.PartitionTypeNTFS:      "EBD0A0A2-B9E5-4433-87C0-68B6B72699C7",
}

// provisioning is what ntp, diskSetup and mounts become: storage and units in Butane's typed
// form (base v0_4, Butane flatcar 1.0.0, Ignition 3.3.0), expressed as a Butane document, or as
// Container Linux Config when the source has one (the spec takes one of the two).
type provisioning struct {
	disks       []butanebase.Disk
	filesystems []butanebase.Filesystem
	// fsSources are the diskSetup.filesystems entries behind filesystems, for mounts to find.
	fsSources []kubeadmv1.Filesystem
	files     []butanebase.File
	units     []butanebase.Unit
}

func (p *provisioning) empty() bool {
	return len(p.disks)+len(p.filesystems)+len(p.files)+len(p.units) == 0
}

func convertProvisioning(src *kubeadmv1.KubeadmConfigSpec, cloudConfig bool, f *findings) (*provisioning, error) {
	p := &provisioning{}
	if err := p.addNTP(src.NTP, cloudConfig, f); err != nil {
		return nil, err
	}
	for i, part := range src.DiskSetup.Partitions {
		p.addPartition(fmt.Sprintf("diskSetup.partitions[%d]", i), part, f)
	}
	for i, fs := range src.DiskSetup.Filesystems {
		p.addFilesystem(fmt.Sprintf("diskSetup.filesystems[%d]", i), fs, f)
	}
	for i, m := range src.Mounts {
		p.addMount(fmt.Sprintf("mounts[%d]", i), m, cloudConfig, f)
	}
	return p, nil
}

func (p *provisioning) addNTP(ntp kubeadmv1.NTP, cloudConfig bool, f *findings) error {
	if !ntp.IsDefined() || (ntp.Enabled != nil && !*ntp.Enabled) {
		return nil // nothing configured, as in the source
	}
	if len(ntp.Servers) > 0 {
		if ntp.Enabled == nil && !cloudConfig {
			f.note("ntp.enabled", "unset: CABPK's Ignition ignored ntp unless enabled was true; the converted config sets the servers")
		}
		contents, err := serializeUnit([]*unit.UnitOption{unit.NewUnitOption("Time", "NTP", strings.Join(ntp.Servers, " "))})
		if err != nil {
			return err
		}
		p.files = append(p.files, butanebase.File{Path: timesyncdDropin, Mode: ptr.To(0o644), Contents: butanebase.Resource{Inline: &contents}})
	} else if ntp.Enabled == nil {
		return nil
	}
	p.units = append(p.units, butanebase.Unit{Name: timesyncdUnit, Enabled: ptr.To(true)})
	return nil
}

func (p *provisioning) addPartition(path string, part kubeadmv1.Partition, f *findings) {
	var partition butanebase.Partition
	switch {
	case ptr.Deref(part.Layout, false):
		partition = butanebase.Partition{Number: 1}
	case len(part.DiskLayout) == 1 && part.DiskLayout[0].Percentage == 100:
		partition = butanebase.Partition{Number: 1}
		if t := part.DiskLayout[0].PartitionType; t != "" {
			guid, ok := partitionTypeGUIDs[t]
			if !ok && len(t) == 36 {
				guid, ok = t, true // a GPT type GUID already
			}
			if !ok {
				f.lossy(path+".diskLayout[0].partitionType", "%s has no GPT type (Ignition writes GPT): the partition gets Linux's", t)
			} else {
				partition.TypeGUID = &guid
			}
		}
	case len(part.DiskLayout) > 0:
		f.lossy(path+".diskLayout", "Ignition sizes partitions in MiB, not in percent of the disk: the disk is not partitioned (write the sizes in spec.butane)")
		return
	default:
		return // layout false: cloud-init leaves the disk as it is, and so does Ignition
	}
	if !strings.HasPrefix(part.Device, "/") {
		f.lossy(path+".device", "%q is a cloud-init device alias; Ignition needs a device path: the disk is not partitioned", part.Device)
		return
	}
	if part.TableType == "mbr" {
		f.lossy(path+".tableType", "Ignition writes GPT partition tables only: the disk gets a GPT table")
	}
	p.disks = append(p.disks, butanebase.Disk{
		Device:     part.Device,
		WipeTable:  ptr.To(ptr.Deref(part.Overwrite, false)),
		Partitions: []butanebase.Partition{partition},
	})
}

func (p *provisioning) addFilesystem(path string, fs kubeadmv1.Filesystem, f *findings) {
	if !strings.HasPrefix(fs.Device, "/") {
		f.lossy(path+".device", "%q is a cloud-init device alias; Ignition needs a device path: the filesystem is not created", fs.Device)
		return
	}
	if !ignitionFormats[fs.Filesystem] {
		f.lossy(path+".filesystem", "Ignition does not create %q filesystems (it does ext4, xfs, btrfs, vfat, swap): the filesystem is not created", fs.Filesystem)
		return
	}
	device := fs.Device
	switch fs.Partition {
	case "", "none":
	case "auto", "any", "auto|any":
		f.lossy(path+".partition", "%q lets cloud-init pick a partition; Ignition names one exactly: the filesystem is not created (set the partition number)", fs.Partition)
		return
	default:
		if strings.Trim(fs.Partition, "0123456789") != "" {
			f.lossy(path+".partition", "%q is not a partition number: the filesystem is not created", fs.Partition)
			return
		}
		device = partitionDevice(fs.Device, fs.Partition)
	}
	if fs.ReplaceFS != "" {
		f.lossy(path+".replaceFS", "Ignition has no conditional format: the filesystem is created when the device has none, whatever %q says", fs.ReplaceFS)
	}
	out := butanebase.Filesystem{
		Device:         device,
		Format:         ptr.To(fs.Filesystem),
		WipeFilesystem: ptr.To(ptr.Deref(fs.Overwrite, false)),
		Options:        fs.ExtraOpts,
	}
	if fs.Label != "" && fs.Label != "None" {
		out.Label = ptr.To(fs.Label)
	}
	p.filesystems = append(p.filesystems, out)
	p.fsSources = append(p.fsSources, fs)
}

// partitionDevice names partition n of device the way udev and the kernel do: "-partN" for the
// /dev/disk symlinks, "pN" after a name ending in a digit (nvme0n1p1), "N" otherwise (sdb1).
func partitionDevice(device, n string) string {
	switch {
	case strings.HasPrefix(device, "/dev/disk/"):
		return device + "-part" + n
	case strings.IndexAny(device[len(device)-1:], "0123456789") == 0:
		return device + "p" + n
	}
	return device + n
}

// addMount gives a diskSetup filesystem a mount point. cloud-init's entry is [what, where,
// type, options, dump, pass]; CABPK's Ignition read [label, where, options...], so the source's
// format decides how the rest is read.
func (p *provisioning) addMount(path string, m kubeadmv1.MountPoints, cloudConfig bool, f *findings) {
	if len(m) < 2 {
		f.lossy(path, "a mount needs a device and a mount point: not carried")
		return
	}
	what, where := m[0], m[1]
	if !strings.HasPrefix(where, "/") {
		f.lossy(path, "mount point %q is not a path (swap and none have no Ignition mount): not carried", where)
		return
	}
	i := p.filesystemFor(what)
	if i < 0 {
		f.lossy(path, "%q names no filesystem of diskSetup.filesystems (by label, LABEL= or device); Ignition mounts the filesystems it creates: not carried (add the filesystem to diskSetup)", what)
		return
	}
	fs := &p.filesystems[i]
	if fs.Path != nil {
		f.lossy(path, "%s is mounted at %s already: not carried", what, *fs.Path)
		return
	}
	var options []string
	if cloudConfig {
		if len(m) > 2 && m[2] != "" && m[2] != "auto" && m[2] != *fs.Format {
			f.lossy(path, "mount type %q is not the filesystem's format %q: mounted as %s", m[2], *fs.Format, *fs.Format)
		}
		if len(m) > 3 {
			options = mountOptions(m[3:4])
		}
		if len(m) > 4 {
			f.lossy(path, "dump and fsck pass (%s) have no meaning for a systemd mount unit, which checks the filesystem before mounting: not carried", strings.Join(m[4:], ", "))
		}
	} else {
		options = mountOptions(m[2:])
	}
	fs.Path = ptr.To(where)
	fs.WithMountUnit = ptr.To(true)
	fs.MountOptions = options
}

// filesystemFor finds the diskSetup filesystem a mount names: "LABEL=x", a label, or a device.
func (p *provisioning) filesystemFor(what string) int {
	label, byLabel := strings.CutPrefix(what, "LABEL=")
	for i, src := range p.fsSources {
		if (byLabel && src.Label == label) || (!byLabel && (src.Label == what || src.Device == what || p.filesystems[i].Device == what)) {
			return i
		}
	}
	return -1
}

// mountOptions splits comma-separated option fields; "defaults" is what no option means.
func mountOptions(fields []string) []string {
	var out []string
	for _, field := range fields {
		for o := range strings.SplitSeq(field, ",") {
			if o = strings.TrimSpace(o); o != "" && o != "defaults" {
				out = append(out, o)
			}
		}
	}
	return out
}

// serializeUnit writes systemd INI options with go-systemd's serializer.
func serializeUnit(opts []*unit.UnitOption) (string, error) {
	b, err := io.ReadAll(unit.Serialize(opts))
	if err != nil {
		return "", fmt.Errorf("writing a systemd unit: %w", err)
	}
	return string(b), nil
}
