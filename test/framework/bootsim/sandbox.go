package bootsim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
)

// The sandbox is built by the child inside its private mount namespace (see setupSandbox). Its
// layout:
//
//	/           the host's root, read-only, so that nothing can appear at the top level
//	/etc        overlay: the applied root's etc over the host's, noexec,nosuid,nodev as on Flatcar
//	/usr        overlay, read-only once the stub is in place, as on Flatcar and Fedora CoreOS
//	/D          overlay for every other host directory D, with the applied root's D on top
//	/run, /tmp  clean tmpfs
//	/proc       fresh, for the new PID namespace
//
// The overlays' upper layers live on a tmpfs private to the namespace: what the unit writes
// vanishes with it and never reaches the host.

// notOverlaid are the top-level directories that are not layered: kernel filesystems, and the
// tmpfs mounts a node has at boot.
var notOverlaid = map[string]bool{"proc": true, "sys": true, "dev": true, "run": true, "tmp": true}

// sandbox is the state the child keeps after building the sandbox.
type sandbox struct {
	// scratch is the private tmpfs, kept open: it may end up hidden under an overlay or under
	// /tmp, and is then reached through /proc/self/fd.
	scratch  *os.File
	warnings []string
}

// scratchPath names a path on the private tmpfs that stays reachable whatever is mounted over it.
func (sb *sandbox) scratchPath(name string) string {
	return filepath.Join("/proc/self/fd", strconv.Itoa(int(sb.scratch.Fd())), name)
}

// outputFile creates the file a command's output is captured in.
func (sb *sandbox) outputFile() (*os.File, error) {
	return os.CreateTemp(sb.scratchPath("out"), "step-*.log")
}

// setupSandbox mounts the sandbox described above, writes the RunFiles and installs the stub.
// It runs in the child, already inside the new mount namespace with private propagation, so none
// of its mounts is visible outside.
func setupSandbox(p *plan) (*sandbox, error) {
	sb := &sandbox{}
	if err := syscall.Mount("tmpfs", p.ScratchDir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0700"); err != nil {
		return nil, fmt.Errorf("mounting the private tmpfs on %s: %w", p.ScratchDir, err)
	}
	scratch, err := os.Open(p.ScratchDir)
	if err != nil {
		return nil, err
	}
	sb.scratch = scratch
	for _, d := range []string{"upper", "work", "out"} {
		if err := os.Mkdir(filepath.Join(p.ScratchDir, d), 0o700); err != nil {
			return nil, err
		}
	}

	hostDirs, err := hostTopLevelDirs()
	if err != nil {
		return nil, err
	}
	applied, err := sb.appliedTopLevelDirs(p.Root, hostDirs)
	if err != nil {
		return nil, err
	}
	for _, d := range hostDirs {
		lowers := []string{"/" + d}
		if applied[d] {
			lowers = []string{filepath.Join(p.Root, d), "/" + d} // the applied files win
		}
		var flags uintptr
		if d == "etc" {
			flags = syscall.MS_NOEXEC | syscall.MS_NOSUID | syscall.MS_NODEV
		}
		err := overlay("/"+d, lowers, filepath.Join(p.ScratchDir, "upper", d), filepath.Join(p.ScratchDir, "work", d), flags)
		if err != nil && !applied[d] {
			// Some filesystems cannot be an overlay's lower layer. A directory the config does not
			// touch can still be protected by making it read-only instead.
			if roErr := readOnlyBind("/" + d); roErr != nil {
				return nil, fmt.Errorf("%w; making it read-only failed too: %w", err, roErr)
			}
			sb.warnings = append(sb.warnings, fmt.Sprintf("/%s is read-only in the sandbox: %v", d, err))
			continue
		}
		if err != nil {
			return nil, err
		}
	}

	if err := syscall.Mount("tmpfs", "/run", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=0755"); err != nil {
		return nil, fmt.Errorf("mounting a clean /run: %w", err)
	}
	if err := syscall.Mount("tmpfs", "/tmp", "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "mode=1777"); err != nil {
		return nil, fmt.Errorf("mounting a clean /tmp: %w", err)
	}
	if err := writeRunFiles(p.RunFiles); err != nil {
		return nil, err
	}
	if top := strings.Split(p.KubeadmDir, "/")[1]; !contains(hostDirs, top) && top != "run" && top != "tmp" {
		return nil, fmt.Errorf("KubeadmDir %s: /%s is not a directory on this host, and / is read-only in the sandbox", p.KubeadmDir, top)
	}
	if err := installStub(p.KubeadmDir, p.KubeadmExit); err != nil {
		return nil, err
	}

	if contains(hostDirs, "usr") {
		if err := remountReadOnly("/usr"); err != nil {
			return nil, err
		}
	}
	if err := remountReadOnly("/"); err != nil {
		return nil, err
	}
	return sb, nil
}

// hostTopLevelDirs lists the host's top-level directories to layer, sorted; links such as /bin
// are not directories and are left alone.
func hostTopLevelDirs() ([]string, error) {
	entries, err := os.ReadDir("/")
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() && !notOverlaid[e.Name()] {
			dirs = append(dirs, e.Name())
		}
	}
	sort.Strings(dirs)
	return dirs, nil
}

// appliedTopLevelDirs checks the applied root's top level and returns the directories to layer.
// Ignition's writes to /run and /tmp are hidden at boot by the tmpfs mounted there, so they are
// left out, as on a node.
func (sb *sandbox) appliedTopLevelDirs(root string, hostDirs []string) (map[string]bool, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("reading the applied root: %w", err)
	}
	applied := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		switch {
		case name == "run" || name == "tmp":
			sb.warnings = append(sb.warnings, fmt.Sprintf("the config writes below /%s, which a tmpfs hides at boot", name))
		case notOverlaid[name]:
			return nil, notSimulated("the config writes below /%s", name)
		case !e.IsDir():
			return nil, notSimulated("the config writes /%s, a file or link at the top level", name)
		case !contains(hostDirs, name):
			return nil, notSimulated("the config writes below /%s, which is not a directory on this host (a link, or missing)", name)
		default:
			applied[name] = true
		}
	}
	return applied, nil
}

// overlay mounts an overlay of lowers (first on top) on target. The upper directory gets the mode
// and owner of target, since an overlay's root takes them from its upper layer.
func overlay(target string, lowers []string, upper, work string, flags uintptr) error {
	var st syscall.Stat_t
	if err := syscall.Stat(target, &st); err != nil {
		return fmt.Errorf("overlay on %s: %w", target, err)
	}
	for _, d := range []string{upper, work} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	if err := syscall.Chmod(upper, st.Mode&0o7777); err != nil {
		return err
	}
	if err := os.Lchown(upper, int(st.Uid), int(st.Gid)); err != nil {
		return err
	}
	escaped := make([]string, len(lowers))
	for i, l := range lowers {
		escaped[i] = escapeOverlayPath(l)
	}
	data := "lowerdir=" + strings.Join(escaped, ":") + ",upperdir=" + escapeOverlayPath(upper) + ",workdir=" + escapeOverlayPath(work)
	if err := syscall.Mount("overlay", target, "overlay", flags, data); err != nil {
		return fmt.Errorf("mounting an overlay on %s (%s): %w", target, data, err)
	}
	return nil
}

// escapeOverlayPath escapes the characters overlayfs options give a meaning: "," separates
// options, ":" lower layers, "\" escapes. Temporary directories named after tests may hold commas.
func escapeOverlayPath(p string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `:`, `\:`).Replace(p)
}

// readOnlyBind bind-mounts dir onto itself and makes that mount read-only.
func readOnlyBind(dir string) error {
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind-mounting %s: %w", dir, err)
	}
	return remountReadOnly(dir)
}

// remountReadOnly makes the mount at target read-only in this namespace only, keeping its other
// per-mount flags.
func remountReadOnly(target string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(target, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", target, err)
	}
	flags := uintptr(syscall.MS_REMOUNT | syscall.MS_BIND | syscall.MS_RDONLY)
	kept := map[int64]uintptr{
		0x2: syscall.MS_NOSUID, 0x4: syscall.MS_NODEV, 0x8: syscall.MS_NOEXEC, // ST_NOSUID, ST_NODEV, ST_NOEXEC
		0x400: syscall.MS_NOATIME, 0x800: syscall.MS_NODIRATIME, 0x1000: syscall.MS_RELATIME, // ST_NOATIME, ST_NODIRATIME, ST_RELATIME
	}
	for statfsFlag, mountFlag := range kept {
		if st.Flags&statfsFlag != 0 {
			flags |= mountFlag
		}
	}
	if err := syscall.Mount("", target, "", flags, ""); err != nil {
		return fmt.Errorf("remounting %s read-only: %w", target, err)
	}
	return nil
}

// writeRunFiles writes the files that stand in for units that ran before this one.
func writeRunFiles(files map[string]string) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			return fmt.Errorf("RunFiles: %w", err)
		}
		if err := os.WriteFile(name, []byte(files[name]), 0o644); err != nil {
			return fmt.Errorf("RunFiles: %w", err)
		}
	}
	return nil
}

// staticHostname reads the /etc/hostname the config wrote, if any: systemd sets it early at boot,
// and it takes precedence over a transient hostname from DHCP or metadata.
func staticHostname(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "etc", "hostname"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if len(line) > 64 || strings.ContainsAny(line, whitespace) {
			return "", nil // systemd ignores an invalid static hostname
		}
		return line, nil
	}
	return "", nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
