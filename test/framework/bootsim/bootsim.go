// Package bootsim simulates the first boot of a node for tests: it applies a rendered Ignition
// config with the real Ignition engine into a scratch root, then starts the enabled unit
// (kubeadm.service) the way systemd would, inside a sandbox whose filesystem is the host's with
// the applied files layered on top, /etc mounted noexec as on current Flatcar, /usr read-only as
// on Flatcar and Fedora CoreOS, and a clean /run and /tmp. A stub kubeadm records how it was
// called.
//
// The sandbox is a set of Linux namespaces (mount, UTS, PID) entered with unshare(1): the test
// binary re-executes itself inside them, and this package, when it is initialized in that
// process, runs the simulation instead of the tests (child.go): a test package that calls Boot
// needs no TestMain for it. Nothing the simulated boot writes reaches the
// host: every writable top-level directory is an overlay whose upper layer lives on a tmpfs that
// disappears with the namespace.
//
// The simulator is strict: a unit setting it does not simulate makes Boot fail the test with
// "not simulated: ...", instead of being ignored and possibly changing the outcome.
package bootsim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/ignitionapply"
)

// DefaultUnit is the unit Boot starts unless Options.Unit says otherwise.
const DefaultUnit = "kubeadm.service"

// DefaultHostname is the transient hostname of the sandbox unless Options.Hostname is set.
const DefaultHostname = "bootsim"

// SentinelPath is the file Cluster API reads to learn that the bootstrap succeeded.
const SentinelPath = "/run/cluster-api/bootstrap-success.complete"

// Results of a simulated start, as systemd would report them.
const (
	ResultSuccess = "success"
	ResultFailed  = "failed"
	ResultSkipped = "skipped"
)

// bootTimeout bounds one simulated boot, so that a unit that hangs fails the test instead of the
// whole test binary timing out.
const bootTimeout = 2 * time.Minute

// Options describe one simulated boot.
type Options struct {
	Config      []byte            // rendered Ignition JSON (any 3.x spec)
	Unit        string            // unit to start; default "kubeadm.service"
	KubeadmDir  string            // "/opt/bin" or "/usr/bin": where the stub kubeadm is installed (required)
	KubeadmExit int               // exit code of the stub
	RunFiles    map[string]string // files written into the clean /run before the unit starts, standing in for units that ran before it (a metadata service)
	Hostname    string            // transient hostname inside the sandbox (UTS namespace); default "bootsim"; a static /etc/hostname from the config wins, as on a node
	Inspect     []string          // absolute paths whose state after the run goes into Report.Files
	// Apply are ignition-apply's options: a config with disks or filesystems, which cannot be
	// applied to a directory, is applied without them (IgnoreUnsupported); files owned by name
	// need the image's accounts (ImageAccounts).
	Apply ignitionapply.Options
}

// Report is what the simulated boot observed.
type Report struct {
	// Enabled reports whether a preset line enables the unit: the *.preset files in
	// /etc/systemd/system-preset sorted by name, first line matching the unit wins. A unit no line
	// matches is not enabled (Flatcar and Fedora CoreOS end their presets with "disable *").
	Enabled   bool
	EnabledBy string // "file: line" of the preset line that decided, or ""

	// Dependencies and ordering, merged from the unit file and its drop-ins.
	Requires, Wants, After, Before []string
	// WantedBy and RequiredBy come from [Install]: a preset only enables a unit that has them.
	WantedBy, RequiredBy []string

	Environment []string // the environment the last Exec line got (KEY=VALUE, sorted)
	Result      string   // "success", "failed", or "skipped" (a Condition* failed)
	FailedStep  string   // e.g. "ExecStart[0]: exit status 1" when failed; the condition when skipped
	Steps       []Step   // every Exec line run, in order

	KubeadmCalls   []KubeadmCall        // one per stub invocation
	SentinelExists bool                 // /run/cluster-api/bootstrap-success.complete exists after the run
	Files          map[string]FileState // for Options.Inspect

	Hostname  string   // hostname the unit ran with
	UnitFiles []string // the unit file and the drop-ins applied, in order
	Warnings  []string // what systemd would log and ignore (invalid assignments, unknown sections)
}

// Step is one Exec line as it ran.
type Step struct {
	Directive string   // "ExecStartPre[0]", "ExecStart[1]", ...
	Argv      []string // after environment variable expansion
	ExitCode  int      // exit status; 203 when it could not be executed (systemd's EXIT_EXEC); -1 when killed by a signal or not spawned
	Signal    string   // the signal that killed it ("SIGKILL"), or ""
	Output    string   // stdout and stderr, or systemd's message when it could not be executed; truncated to a few KiB
}

// KubeadmCall is one invocation of the stub kubeadm.
type KubeadmCall struct {
	Path            string   // the stub's own path ($0): which copy ran
	Args            []string // its arguments
	Config          string   // content of the file given with --config (or "--config=FILE"), read at call time; "" if none
	SentinelExisted bool     // whether the sentinel existed when the stub started (it must not)
	PATH            string   // PATH the stub saw
}

// FileState is the state of an inspected path after the run, as lstat(2) sees it.
type FileState struct {
	Exists     bool
	Mode       os.FileMode
	Content    string // regular files only
	LinkTarget string // symbolic links only
	IsDir      bool
}

// Boot applies opts.Config with the real ignition-apply and simulates the boot; it fails the test
// (t.Fatal) on harness errors and on settings it does not simulate, never on the unit failing
// (that is Report.Result).
func Boot(t testing.TB, opts Options) Report {
	t.Helper()
	rep, err := boot(t, opts)
	if err != nil {
		t.Fatalf("boot simulation: %v", err)
	}
	return rep
}

// boot is Boot returning its error, so that the simulator's own tests can check refusals.
func boot(t testing.TB, opts Options) (Report, error) {
	t.Helper()
	p, err := newPlan(opts)
	if err != nil {
		return Report{}, err
	}
	p.Root = ignitionapply.ApplyWith(t, opts.Config, opts.Apply)

	work := t.TempDir()
	p.ScratchDir = filepath.Join(work, "scratch")
	if err := os.Mkdir(p.ScratchDir, 0o700); err != nil {
		return Report{}, err
	}
	planPath := filepath.Join(work, "plan.json")
	data, err := json.Marshal(p)
	if err != nil {
		return Report{}, fmt.Errorf("encoding the plan: %w", err)
	}
	if err := os.WriteFile(planPath, data, 0o600); err != nil {
		return Report{}, err
	}

	report, err := runChild(planPath)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	if err := json.Unmarshal(report, &rep); err != nil {
		if bytes.Contains(report, []byte("PASS")) || bytes.Contains(report, []byte("no tests to run")) {
			return Report{}, errors.New("the re-executed test binary ran its tests instead of the simulation: " +
				"bootsim's init did not take it over (was " + planEnv + " passed on?)")
		}
		return Report{}, fmt.Errorf("decoding the report: %w\n%s", err, report)
	}
	return rep, nil
}

// runChild re-executes the test binary inside new mount, UTS and PID namespaces and returns the
// report it printed. The PID namespace makes sure nothing the unit left running survives the
// simulation: when the child (PID 1 there) exits, the kernel kills the rest.
func runChild(planPath string) ([]byte, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("locating the test binary: %w", err)
	}
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		return nil, fmt.Errorf("the boot simulator needs unshare(1) (util-linux): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare,
		"--mount", "--propagation", "private", "--uts", "--pid", "--fork", "--kill-child", "--mount-proc",
		"--", self, "-test.run=^$")
	cmd.Env = append(withoutEnv(os.Environ(), planEnv), planEnv+"="+planPath)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("the simulated boot did not finish within %s\n%s", bootTimeout, stderr.String())
	}
	if err != nil {
		var exitErr *exec.ExitError
		if errors.As(err, &exitErr) && exitErr.ExitCode() == childRefused {
			return nil, errors.New(strings.TrimSpace(stderr.String()))
		}
		return nil, fmt.Errorf("the sandbox failed (%v):\n%s%s", err, stderr.String(), stdout.String())
	}
	return stdout.Bytes(), nil
}

func withoutEnv(env []string, name string) []string {
	kept := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, name+"=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// newPlan checks opts and fills in the defaults.
func newPlan(opts Options) (*plan, error) {
	p := &plan{
		Unit:        opts.Unit,
		KubeadmDir:  opts.KubeadmDir,
		KubeadmExit: opts.KubeadmExit,
		RunFiles:    opts.RunFiles,
		Hostname:    opts.Hostname,
		Inspect:     opts.Inspect,
	}
	if p.Unit == "" {
		p.Unit = DefaultUnit
	}
	if strings.ContainsAny(p.Unit, "/@") || !strings.HasSuffix(p.Unit, ".service") || p.Unit == ".service" {
		return nil, fmt.Errorf("not simulated: unit %q (only plain, non-template .service units are)", p.Unit)
	}
	if p.Hostname == "" {
		p.Hostname = DefaultHostname
	}
	if p.KubeadmDir == "" {
		return nil, errors.New("Options.KubeadmDir is required (\"/opt/bin\" or \"/usr/bin\")")
	}
	if !path.IsAbs(p.KubeadmDir) || path.Clean(p.KubeadmDir) != p.KubeadmDir || p.KubeadmDir == "/" {
		return nil, fmt.Errorf("Options.KubeadmDir %q must be a clean absolute directory below /", p.KubeadmDir)
	}
	if p.KubeadmExit < 0 || p.KubeadmExit > 255 {
		return nil, fmt.Errorf("Options.KubeadmExit %d is not an exit status (0-255)", p.KubeadmExit)
	}
	for name := range p.RunFiles {
		if path.Clean(name) != name || !strings.HasPrefix(name, "/run/") {
			return nil, fmt.Errorf("Options.RunFiles: %q is not a clean path below /run", name)
		}
		if strings.HasPrefix(name, stubRecordDir+"/") || name == stubRecordDir {
			return nil, fmt.Errorf("Options.RunFiles: %s is where the stub kubeadm records its calls", name)
		}
	}
	for _, name := range p.Inspect {
		if !path.IsAbs(name) {
			return nil, fmt.Errorf("Options.Inspect: %q is not absolute", name)
		}
	}
	return p, nil
}
