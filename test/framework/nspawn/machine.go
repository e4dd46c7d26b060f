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

package nspawn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// Instance is what the infrastructure hands the machine, as a cloud's metadata service would
// answer it; the image's platform agent (coreos-metadata, afterburn stand-ins) writes it under
// the variant's names.
type Instance struct {
	Hostname string
	UUID     string
}

// Spec is one machine to boot.
type Spec struct {
	// Name is the machine's name (systemd-nspawn -M) and its hostname.
	Name string
	// Image is a node image's root file system (nodeimage); it is never written.
	Image string
	// Dir holds the machine's upper layer, work directory and merged root; it is created.
	Dir string
	// Network and Address put the machine on the suite's bridge.
	Network Network
	Address netip.Addr
	// Instance is the metadata handed to the machine.
	Instance Instance
	// Ignition is the bootstrap data (the data Secret's value); nil boots the image as it is.
	Ignition []byte
	// Console receives the machine's console; nil discards it.
	Console io.Writer
	// CopiedDirs are directories of the image the machine gets a copy of on the host's file
	// system, bound over its root: what cannot live on overlayfs, such as containerd's state
	// (its snapshotter's overlay mounts need an upper layer that is not overlayfs).
	CopiedDirs []string
	// Init is the program the machine runs as PID 1, a path in its root, which must become
	// systemd (exec); empty lets systemd-nspawn find systemd (--boot). Either way systemd is
	// PID 1 and the machine powers off on SIGRTMIN+3, as on --boot.
	Init string
	// DiskSize gives the machine a disk of its own of that many bytes (disk.go): a sparse file
	// beside Dir, mounted at Dir, so that everything the machine writes, and what its kubelet
	// reads of its free space, is on it. 0 leaves the machine on the host's file system.
	DiskSize int64
	// LoopDevices gives the machine /dev/loop-control and that many loop devices (/dev/loop0 on),
	// which systemd-sysext attaches extension images to; systemd-nspawn gives a machine none. The
	// kernel's loop devices are shared with the host: each machine that merges an image holds one
	// while it runs.
	LoopDevices int
}

// ErrIgnition: ignition-apply refused the machine's Ignition (as the initramfs would fail the
// boot); the machine is not made.
var ErrIgnition = errors.New("applying the Ignition")

// Machine is a booted (or powered off) machine.
type Machine struct {
	Spec
	root string

	// mu guards boot and cgroups: a test powers a machine off and boots it again while a
	// reconciler asks whether it runs (Running, Booted) or runs a command in it (Exec), each in
	// its own goroutine. A boot is replaced whole under mu, never changed in place, so that a
	// reader holds one consistent boot (its command and its end) without holding mu.
	mu      sync.Mutex
	boot    *boot
	cgroups *machineCgroups
	// disk is the machine's own disk (Spec.DiskSize), nil on the host's file system.
	disk *disk
}

// cgroupName names the machine's own cgroups (cgroups.go): its name, and its directory's hash
// so that two suites' machines of one name do not meet.
func (m *Machine) cgroupName() string {
	return fmt.Sprintf("%s%s-%08x", machineCgroupPrefix, m.Name, crc32.ChecksumIEEE([]byte(m.Dir)))
}

// boot is one run of systemd-nspawn. err is written before done is closed, and read after.
type boot struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// current is the machine's last boot, nil before the first.
func (m *Machine) current() *boot {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.boot
}

// up is the current boot while it runs, else nil.
func (m *Machine) up() *boot {
	b := m.current()
	if b == nil {
		return nil
	}
	select {
	case <-b.done:
		return nil
	default:
		return b
	}
}

// Prepare mounts the machine's root over the image and writes into it what the infrastructure
// provides (the network configuration of host0, the instance metadata) and the Ignition, as
// the initramfs applies it. Boot boots it.
func Prepare(ctx context.Context, s Spec) (*Machine, error) {
	m := &Machine{Spec: s, root: filepath.Join(s.Dir, "root")}
	if s.DiskSize > 0 {
		d, err := createDisk(ctx, s.Dir+diskSuffix, s.Dir, s.DiskSize)
		if err != nil {
			return nil, fmt.Errorf("the disk of %s: %w", s.Name, err)
		}
		m.disk = d
	}
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.MkdirAll(filepath.Join(s.Dir, d), 0o755); err != nil {
			return nil, errors.Join(err, m.Remove(ctx))
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", s.Image, filepath.Join(s.Dir, "upper"), filepath.Join(s.Dir, "work"))
	if err := syscall.Mount("overlay", m.root, "overlay", 0, opts); err != nil {
		return nil, errors.Join(fmt.Errorf("mounting the root of %s: %w", s.Name, err), m.Remove(ctx))
	}
	if err := m.provide(); err != nil {
		_ = m.Remove(ctx)
		return nil, err
	}
	for _, d := range s.CopiedDirs {
		if err := m.copyDir(ctx, d); err != nil {
			_ = m.Remove(ctx)
			return nil, err
		}
	}
	if s.Ignition != nil {
		// Remote contents (a system extension, release binaries) are fetched from the suite's
		// own network only, as a node's initramfs would fetch them from its provider's.
		if err := ignitionapply.ApplyInto(m.root, s.Ignition, ignitionapply.Options{RemoteWithin: s.Network.Prefix}); err != nil {
			_ = m.Remove(ctx)
			return nil, fmt.Errorf("%w of %s: %w", ErrIgnition, s.Name, err)
		}
	}
	return m, nil
}

// provide writes what the infrastructure hands the machine: its address on host0, the gateway
// of its default route (Network.Gateway) and its
// metadata, for the image's network and platform agents (shell-quoted values).
func (m *Machine) provide() error {
	env := fmt.Appendf(nil, "ADDRESS=%s\nGATEWAY=%s\nHOSTNAME=%s\nINSTANCE_UUID=%s\n",
		strconv.Quote(netip.PrefixFrom(m.Address, m.Network.Prefix.Bits()).String()),
		strconv.Quote(m.Network.Gateway().String()),
		strconv.Quote(m.Instance.Hostname), strconv.Quote(m.Instance.UUID))
	full := filepath.Join(m.root, "etc/cabpi-test/instance.env")
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		return err
	}
	return os.WriteFile(full, env, 0o644)
}

// copiedDir is where the host keeps the machine's copy of an image directory.
func (m *Machine) copiedDir(d string) string {
	return filepath.Join(m.Dir, "copied", strings.ReplaceAll(strings.Trim(d, "/"), "/", "_"))
}

func (m *Machine) copyDir(ctx context.Context, d string) error {
	to := m.copiedDir(d)
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	from := filepath.Join(m.Image, d)
	if _, err := os.Stat(from); err != nil {
		return nil // nothing to copy: an empty directory
	}
	if out, err := exec.CommandContext(ctx, "cp", "-a", from+"/.", to).CombinedOutput(); err != nil {
		return fmt.Errorf("copying %s of %s: %w: %s", d, m.Name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Boot starts systemd-nspawn: systemd as PID 1, the machine's own network namespace with a
// veth into the bridge, writable /proc/sys (kubelet and kubeadm set sysctls), /dev/kmsg (the
// kubelet reads it), every capability and the keyring system calls (kubelet, containerd and
// runc need them), no resolver from the host.
func (m *Machine) Boot(ctx context.Context) error {
	if m.up() != nil {
		return fmt.Errorf("%s is running", m.Name)
	}
	// With an init of the image's, nspawn runs it as PID 1 rather than looking for systemd, and
	// is told the signal systemd powers off on (--boot implies it).
	args := []string{"systemd-nspawn", "--quiet", "--boot"}
	if m.Init != "" {
		args = []string{"systemd-nspawn", "--quiet", "--kill-signal=SIGRTMIN+3"}
	}
	args = append(args,
		"--directory="+m.root, "--machine="+m.Name, "--hostname="+m.Name,
		"--register=no", "--keep-unit", "--resolv-conf=off",
		"--network-bridge="+m.Network.Bridge,
		"--bind=/dev/kmsg", "--capability=all",
		// runc joins a session keyring for each container: systemd-nspawn's default seccomp
		// filter refuses the keyring calls ("unable to join session keyring").
		"--system-call-filter=@keyring")
	for _, d := range m.CopiedDirs {
		args = append(args, "--bind="+m.copiedDir(d)+":"+d)
	}
	if m.LoopDevices > 0 {
		binds, err := m.loopDeviceNodes()
		if err != nil {
			return fmt.Errorf("booting %s: %w", m.Name, err)
		}
		args = append(args, binds...)
	}
	if m.Init != "" {
		args = append(args, m.Init)
	}
	groups, err := newMachineCgroups(m.cgroupName())
	if err != nil {
		return fmt.Errorf("booting %s: %w", m.Name, err)
	}
	m.mu.Lock()
	m.cgroups = groups
	m.mu.Unlock()
	return m.start(groups.wrap(args))
}

// start runs argv as the machine's boot: in a process group of its own (the suite's signals are
// not the machine's), its output to the console.
func (m *Machine) start(argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "SYSTEMD_NSPAWN_API_VFS_WRITABLE=1")
	out := m.Console
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("booting %s: %w", m.Name, err)
	}
	b := &boot{cmd: cmd, done: make(chan struct{})}
	m.mu.Lock()
	m.boot = b
	m.mu.Unlock()
	go func() {
		b.err = cmd.Wait()
		close(b.done)
	}()
	return nil
}

// errNoInit: systemd-nspawn runs, but has not started the machine's init yet (or it has gone):
// the machine has no namespaces of its own at that moment.
var errNoInit = errors.New("no init yet")

// pid1 is the host PID of the machine's systemd: the one child of systemd-nspawn.
func (m *Machine) pid1() (int, error) {
	b := m.up()
	if b == nil {
		return 0, fmt.Errorf("%s is not running", m.Name)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", b.cmd.Process.Pid, b.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, fmt.Errorf("%s: %w", m.Name, errNoInit)
	}
	return strconv.Atoi(fields[0])
}

// Exec runs a command inside the machine (all its namespaces) and returns its output.
func (m *Machine) Exec(ctx context.Context, name string, args ...string) ([]byte, error) {
	return m.ExecInput(ctx, nil, name, args...)
}

// ExecInput runs a command inside the machine with input as its standard input (an image
// archive for `ctr images import -`, as `kind load` does) and returns its output.
func (m *Machine) ExecInput(ctx context.Context, input io.Reader, name string, args ...string) ([]byte, error) {
	pid, err := m.pid1()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"--target", strconv.Itoa(pid), "--all", "--", name}, args...)...)
	cmd.Stdin = input
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), fmt.Errorf("%s on %s: %w: %s", name, m.Name, err, strings.TrimSpace(out.String()))
	}
	return out.Bytes(), nil
}

// WaitBooted waits until systemd in the machine has finished starting up (running, or degraded
// when a unit failed) and returns the state.
func (m *Machine) WaitBooted(ctx context.Context) (string, error) {
	b := m.current()
	if b == nil {
		return "", fmt.Errorf("%s was never booted", m.Name)
	}
	for {
		out, _ := m.Exec(ctx, "systemctl", "is-system-running")
		switch state := strings.TrimSpace(string(out)); state {
		case "running", "degraded":
			return state, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for %s to boot: %w", m.Name, ctx.Err())
		case <-b.done:
			return "", fmt.Errorf("%s stopped while booting: %v", m.Name, b.err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Journal is the machine's journal of units (journalctl -u each), for a test's artifacts: of
// every boot, whatever machine ID each had (--merge). A first boot's machine ID is transient
// until systemd commits it; a boot whose power was cut before that wrote its journal under an
// ID the next boot does not have, and journalctl shows only the current ID's files by default.
func (m *Machine) Journal(ctx context.Context, units ...string) ([]byte, error) {
	args := []string{"--no-pager", "--merge"} // every boot
	for _, u := range units {
		args = append(args, "-u", u)
	}
	return m.Exec(ctx, "journalctl", args...)
}

// JournalOffline reads the journal of units from the machine's root (its persistent journal)
// while it is powered off.
func (m *Machine) JournalOffline(ctx context.Context, units ...string) ([]byte, error) {
	args := []string{"--no-pager", "--directory=" + filepath.Join(m.root, "var/log/journal")}
	for _, u := range units {
		args = append(args, "-u", u)
	}
	out, err := exec.CommandContext(ctx, "journalctl", args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("journalctl of %s: %w: %s", m.Name, err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// LastBootEnd reads the last lines of the machine's last boot from its root while it is powered
// off, with monotonic times: what its shutdown stopped, and when.
func (m *Machine) LastBootEnd(ctx context.Context, lines int) ([]byte, error) {
	out, err := exec.CommandContext(ctx, "journalctl", "--no-pager", "--directory="+filepath.Join(m.root, "var/log/journal"),
		"--boot=0", "--output=short-monotonic", fmt.Sprintf("--lines=%d", lines)).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("journalctl of %s: %w: %s", m.Name, err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// Running says whether the machine is up (booted and not powered off).
func (m *Machine) Running() bool { return m.up() != nil }

// Booted says whether the machine was ever booted (it may be powered off since).
func (m *Machine) Booted() bool { return m.current() != nil }

// PowerOff shuts the machine down as a power button would: systemd-nspawn passes SIGTERM on to
// its init as the poweroff signal. A machine still up after timeout is killed.
func (m *Machine) PowerOff(timeout time.Duration) error {
	b := m.up()
	if b == nil {
		return nil
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
		return nil
	case <-time.After(timeout):
	}
	// The machine's init is not in nspawn's process group: killing nspawn alone would leave the
	// machine running on, orphaned, in its cgroups.
	if pid, err := m.pid1(); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	<-b.done
	return fmt.Errorf("%s did not power off within %s: killed", m.Name, timeout)
}

// Kill cuts the machine's power: its init (PID 1 of its PID namespace, so every process of
// the machine with it) and systemd-nspawn are killed at once, nothing shuts down cleanly. A
// frozen machine (Freeze), and any group of it that froze itself, is thawed after the signals
// are sent: each process dies on the pending SIGKILL before it runs on.
func (m *Machine) Kill() error {
	b := m.up()
	if b == nil {
		return nil
	}
	// systemd-nspawn killed removes nothing: the host's end of the machine's veth goes when the
	// kernel has torn the machine's network namespace down, and a boot before that fails ("Failed
	// to add new veth interfaces: File exists"). Its name is read while the machine is there.
	veth, vethErr := m.hostVeth()
	if pid, err := m.pid1(); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	_ = syscall.Kill(-b.cmd.Process.Pid, syscall.SIGKILL)
	if err := m.thaw(); err != nil {
		return fmt.Errorf("thawing %s to let it die: %w", m.Name, err)
	}
	select {
	case <-b.done:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("%s: systemd-nspawn did not exit after SIGKILL", m.Name)
	}
	if vethErr != nil {
		return fmt.Errorf("finding the host end of the veth of %s: %w", m.Name, vethErr)
	}
	return waitLinkGone(veth, 30*time.Second)
}

// Remove powers the machine off if needed, removes its cgroups, unmounts its root and its disk
// and deletes its directory.
func (m *Machine) Remove(ctx context.Context) error {
	errs := []error{m.PowerOff(30 * time.Second)}
	m.mu.Lock()
	groups := m.cgroups
	m.cgroups = nil
	m.mu.Unlock()
	if groups != nil {
		errs = append(errs, groups.remove())
	}
	if err := syscall.Unmount(m.root, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
		errs = append(errs, fmt.Errorf("unmounting the root of %s: %w", m.Name, err))
	}
	if m.disk != nil {
		// Its file goes whole: nothing on it is deleted file by file.
		errs = append(errs, m.disk.remove())
	}
	errs = append(errs, os.RemoveAll(m.Dir))
	return errors.Join(errs...)
}

// Root is the machine's root as the host sees it (for reading what is on the node).
func (m *Machine) Root() string { return m.root }

// diagnosisLines bounds the journal a Diagnosis carries.
const diagnosisLines = 150

// Diagnosis is what a test that gave up waiting on the machine logs, so that a failure says why
// without the artifacts (CI keeps none): while it runs, the units that are not where they should
// be (failed, or still starting or stopping), systemd's queued jobs and the end of this boot's
// journal; once powered off (a shutdown that hung and was cut), the end of its persistent
// journal, which says which stop job held it. Nothing it fails to read stops it: it says so.
func (m *Machine) Diagnosis(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var b strings.Builder
	section := func(title string, out []byte, err error) {
		fmt.Fprintf(&b, "--- %s of %s", title, m.Name)
		if err != nil {
			fmt.Fprintf(&b, " (%v)", err)
		}
		b.WriteString(":\n")
		b.Write(bytes.TrimSpace(out))
		b.WriteString("\n")
	}
	if !m.Running() {
		out, err := m.JournalOffline(ctx)
		section("powered off; the end of its journal", tail(out, diagnosisLines), err)
		return b.String()
	}
	out, err := m.Exec(ctx, "systemctl", "list-units", "--all", "--no-pager", "--plain", "--no-legend",
		"--state=failed,activating,deactivating,reloading")
	section("units failed, starting or stopping", out, err)
	out, err = m.Exec(ctx, "systemctl", "list-jobs", "--no-pager", "--plain", "--no-legend")
	section("systemd's queued jobs", out, err)
	out, err = m.Exec(ctx, "journalctl", "--no-pager", "-b", "-o", "short-monotonic", "-n", strconv.Itoa(diagnosisLines))
	section("the end of this boot's journal", out, err)
	return b.String()
}

// tail is the last n lines of out.
func tail(out []byte, n int) []byte {
	lines := bytes.Split(bytes.TrimRight(out, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return bytes.Join(lines, []byte("\n"))
}
