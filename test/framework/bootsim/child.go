package bootsim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// The simulator re-executes the test binary inside the namespaces; that process is the child. It
// is taken over here, when this package is initialized: before the test package's own
// initialization and TestMain, so that no test package has anything to remember, and nothing of
// the test binary runs in the sandbox but the simulation. In any other process this does nothing.
func init() { runChildIfRequested() }

// runChildIfRequested runs the child side and exits when the environment says this process is
// the child; otherwise it returns at once.
func runChildIfRequested() {
	planPath := os.Getenv(planEnv)
	if planPath == "" {
		return
	}
	if err := runChildSide(planPath); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(childRefused)
	}
	os.Exit(0)
}

// runChildSide builds the sandbox, starts the unit and writes the report. It runs as PID 1 of a
// new PID namespace, in new mount (private propagation) and UTS namespaces.
func runChildSide(planPath string) error {
	data, err := os.ReadFile(planPath)
	if err != nil {
		return fmt.Errorf("reading the plan: %w", err)
	}
	var p plan
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("decoding the plan: %w", err)
	}
	syscall.Umask(0o022) // systemd's default UMask= for services
	if err := os.Chdir("/"); err != nil {
		return err
	}
	hostname, err := staticHostname(p.Root)
	if err != nil {
		return err
	}
	if hostname == "" {
		hostname = p.Hostname
	}
	sb, err := setupSandbox(&p)
	if err != nil {
		return err
	}
	if err := syscall.Sethostname([]byte(hostname)); err != nil {
		return fmt.Errorf("setting the hostname: %w", err)
	}

	rep, err := simulate(&p, sb)
	if err != nil {
		return err
	}
	rep.Hostname = hostname
	// The report goes to stdout, which is the parent's alone: the unit's commands write to files.
	// (A report file on the host would hold the root mount busy and keep it from turning
	// read-only.)
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil {
		return fmt.Errorf("writing the report: %w", err)
	}
	return nil
}

// simulate loads the unit from the sandbox's /etc/systemd/system, starts it and collects what
// happened.
func simulate(p *plan, sb *sandbox) (Report, error) {
	sources, err := readUnitSources("/", p.Unit)
	if err != nil {
		return Report{}, err
	}
	svc, err := parseService(p.Unit, sources)
	if err != nil {
		return Report{}, err
	}
	enabled, enabledBy, presetWarnings, err := presetEnabled("/", p.Unit)
	if err != nil {
		return Report{}, err
	}

	r := &runner{svc: svc, outputFile: sb.outputFile}
	result, why, err := r.start()
	if err != nil {
		return Report{}, err
	}

	calls, err := readStubCalls()
	if err != nil {
		return Report{}, err
	}
	_, sentinelErr := os.Lstat(SentinelPath)
	if sentinelErr != nil && !errors.Is(sentinelErr, fs.ErrNotExist) {
		return Report{}, sentinelErr
	}
	rep := Report{
		Enabled:        enabled,
		EnabledBy:      enabledBy,
		Requires:       svc.Requires,
		Wants:          svc.Wants,
		After:          svc.After,
		Before:         svc.Before,
		WantedBy:       svc.WantedBy,
		RequiredBy:     svc.RequiredBy,
		Environment:    r.env,
		Result:         result,
		FailedStep:     why,
		Steps:          r.steps,
		KubeadmCalls:   calls,
		SentinelExists: sentinelErr == nil,
		Warnings:       append(append(sb.warnings, svc.Warnings...), presetWarnings...),
	}
	for _, src := range sources {
		rep.UnitFiles = append(rep.UnitFiles, src.Path)
	}
	if len(p.Inspect) > 0 {
		rep.Files = map[string]FileState{}
		for _, name := range p.Inspect {
			st, err := inspect(name)
			if err != nil {
				return Report{}, err
			}
			rep.Files[name] = st
		}
	}
	return rep, nil
}

// inspect reports the state of a path after the run, without following a final link.
func inspect(name string) (FileState, error) {
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return FileState{}, nil
	}
	if err != nil {
		return FileState{}, fmt.Errorf("inspecting %s: %w", name, err)
	}
	st := FileState{Exists: true, Mode: fi.Mode(), IsDir: fi.IsDir()}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		if st.LinkTarget, err = os.Readlink(name); err != nil {
			return FileState{}, err
		}
	case fi.Mode().IsRegular():
		data, err := os.ReadFile(name)
		if err != nil {
			return FileState{}, fmt.Errorf("inspecting %s: %w", name, err)
		}
		st.Content = string(data)
	}
	return st, nil
}
