package bootsim

import (
	_ "embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

//go:embed stub/kubeadm.sh
var kubeadmStub []byte

// stubRecordDir is where the stub records its calls and reads its exit status: in the sandbox's
// clean /run, the only place known to be writable whatever the unit does to the rest.
const stubRecordDir = "/run/bootsim-stub"

// kubeadmSearchDirs are where a kubeadm other than the stub could be found: the default PATH of
// services, the unmerged /bin and /sbin, and /opt/bin where Flatcar guides install binaries.
var kubeadmSearchDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", "/opt/bin"}

// installStub makes the stub the only kubeadm: it refuses to run when another one exists (from
// the host or from the config), since a test could then pass by running the wrong one.
func installStub(dir string, exit int) error {
	for _, d := range append(kubeadmSearchDirs, dir) {
		p := filepath.Join(d, "kubeadm")
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("a kubeadm already exists at %s (on the host or written by the config): "+
				"the simulation needs the stub in %s to be the only kubeadm", p, dir)
		}
	}
	if err := os.MkdirAll(filepath.Join(stubRecordDir, "calls"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(stubRecordDir, "exit"), []byte(strconv.Itoa(exit)+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating the stub's directory: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "kubeadm"), kubeadmStub, 0o755)
}

// readStubCalls reads the stub's records, in call order.
func readStubCalls() ([]KubeadmCall, error) {
	dir := filepath.Join(stubRecordDir, "calls")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("reading the stub's records (did the unit remove %s?): %w", stubRecordDir, err)
	}
	var numbers []int
	for _, e := range entries {
		if n, err := strconv.Atoi(e.Name()); err == nil {
			numbers = append(numbers, n)
		}
	}
	sort.Ints(numbers)
	calls := make([]KubeadmCall, 0, len(numbers))
	for _, n := range numbers {
		base := filepath.Join(dir, strconv.Itoa(n))
		field := func(name string) string {
			data, _ := os.ReadFile(base + "." + name) // a missing field is empty
			return string(data)
		}
		_, sentinelErr := os.Lstat(base + ".sentinel")
		call := KubeadmCall{
			Path:            field("path"),
			Config:          field("config"),
			SentinelExisted: sentinelErr == nil,
			PATH:            field("PATH"),
		}
		if !filepath.IsAbs(call.Path) {
			call.Path = filepath.Join(field("cwd"), call.Path)
		}
		if args := field("args"); args != "" {
			call.Args = strings.Split(strings.TrimSuffix(args, "\x00"), "\x00")
		}
		if sentinelErr != nil && !errors.Is(sentinelErr, fs.ErrNotExist) {
			return nil, sentinelErr
		}
		calls = append(calls, call)
	}
	return calls, nil
}
