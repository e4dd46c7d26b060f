package bootsim_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/test/framework/bootsim"
)

// ignitionConfig is a hand-made Ignition 3.3.0 config: files and units, marshalled from typed
// structs so that the tests depend on nothing of the project's renderer.
type ignitionConfig struct {
	files []ignitionFile
	units []ignitionUnit
}

type ignitionFile struct {
	path     string
	mode     int
	contents string
}

type ignitionUnit struct {
	name     string
	enabled  bool
	contents string
	dropins  []ignitionDropin
}

type ignitionDropin struct{ name, contents string }

func (c ignitionConfig) marshal(t *testing.T) []byte {
	t.Helper()
	type contents struct {
		Source string `json:"source"`
	}
	type file struct {
		Path      string   `json:"path"`
		Mode      int      `json:"mode"`
		Overwrite bool     `json:"overwrite"`
		Contents  contents `json:"contents"`
	}
	type dropin struct {
		Name     string `json:"name"`
		Contents string `json:"contents"`
	}
	type unit struct {
		Name     string   `json:"name"`
		Enabled  *bool    `json:"enabled,omitempty"`
		Contents string   `json:"contents,omitempty"`
		Dropins  []dropin `json:"dropins,omitempty"`
	}
	var cfg struct {
		Ignition struct {
			Version string `json:"version"`
		} `json:"ignition"`
		Storage struct {
			Files []file `json:"files"`
		} `json:"storage"`
		Systemd struct {
			Units []unit `json:"units"`
		} `json:"systemd"`
	}
	cfg.Ignition.Version = "3.3.0"
	for _, f := range c.files {
		src := "data:;base64," + base64.StdEncoding.EncodeToString([]byte(f.contents))
		cfg.Storage.Files = append(cfg.Storage.Files, file{Path: f.path, Mode: f.mode, Overwrite: true, Contents: contents{Source: src}})
	}
	for _, u := range c.units {
		out := unit{Name: u.name, Contents: u.contents}
		if u.enabled {
			out.Enabled = &u.enabled
		}
		for _, d := range u.dropins {
			out.Dropins = append(out.Dropins, dropin{Name: d.name, Contents: d.contents})
		}
		cfg.Systemd.Units = append(cfg.Systemd.Units, out)
	}
	data, err := json.Marshal(cfg)
	require.NoError(t, err)
	return data
}

// oneshot is a kubeadm.service of Type=oneshot with the given [Unit] and [Service] lines.
func oneshot(unitLines, serviceLines string) string {
	return "[Unit]\nDescription=bootsim test\n" + unitLines + "[Service]\nType=oneshot\nRemainAfterExit=yes\n" + serviceLines +
		"[Install]\nWantedBy=multi-user.target\n"
}

// kubeadmUnit is an enabled kubeadm.service with the given content and drop-ins.
func kubeadmUnit(contents string, dropins ...ignitionDropin) ignitionUnit {
	return ignitionUnit{name: "kubeadm.service", enabled: true, contents: contents, dropins: dropins}
}

func boot(t *testing.T, cfg ignitionConfig, opts bootsim.Options) bootsim.Report {
	t.Helper()
	opts.Config = cfg.marshal(t)
	if opts.KubeadmDir == "" {
		opts.KubeadmDir = "/usr/bin"
	}
	return bootsim.Boot(t, opts)
}

// /etc is noexec, as on current Flatcar: systemd cannot execute a script there (203/EXEC,
// "Permission denied"), neither can a shell (126); bash reading the script works.
func TestEtcIsNoexec(t *testing.T) {
	script := ignitionFile{path: "/etc/x.sh", mode: 0o755, contents: "#!/bin/bash\necho ran\n"}

	direct := boot(t, ignitionConfig{files: []ignitionFile{script}, units: []ignitionUnit{kubeadmUnit(oneshot("", "ExecStart=/etc/x.sh\n"))}}, bootsim.Options{})
	assert.Equal(t, bootsim.ResultFailed, direct.Result)
	require.Len(t, direct.Steps, 1)
	assert.Equal(t, 203, direct.Steps[0].ExitCode)
	assert.Contains(t, direct.Steps[0].Output, "Failed to locate executable /etc/x.sh: Permission denied")
	assert.Contains(t, direct.FailedStep, "ExecStart[0]: exit status 203/EXEC")
	assert.Contains(t, direct.FailedStep, "Permission denied")

	viaShell := boot(t, ignitionConfig{files: []ignitionFile{script}, units: []ignitionUnit{kubeadmUnit(oneshot("",
		"ExecStart=/bin/bash -c /etc/x.sh\n"))}}, bootsim.Options{})
	assert.Equal(t, bootsim.ResultFailed, viaShell.Result)
	require.Len(t, viaShell.Steps, 1)
	assert.Equal(t, 126, viaShell.Steps[0].ExitCode)
	assert.Contains(t, viaShell.Steps[0].Output, "/etc/x.sh: Permission denied")
	assert.Equal(t, "ExecStart[0]: exit status 126", viaShell.FailedStep)

	read := boot(t, ignitionConfig{files: []ignitionFile{script}, units: []ignitionUnit{kubeadmUnit(oneshot("", "ExecStart=/bin/bash /etc/x.sh\n"))}}, bootsim.Options{})
	assert.Equal(t, bootsim.ResultSuccess, read.Result, read.FailedStep)
	require.Len(t, read.Steps, 1)
	assert.Equal(t, []string{"/bin/bash", "/etc/x.sh"}, read.Steps[0].Argv)
	assert.Equal(t, "ran\n", read.Steps[0].Output)
}

// A bootstrap script that runs kubeadm by name finds it on the default PATH of services only in
// /usr/bin; /opt/bin needs the script or the unit to add it.
func TestKubeadmLookup(t *testing.T) {
	const config = "kind: JoinConfiguration\nnodeRegistration:\n  name: n1\n"
	files := func(prologue string) []ignitionFile {
		return []ignitionFile{
			{path: "/etc/k.yml", mode: 0o600, contents: config},
			{path: "/etc/kubeadm.sh", mode: 0o644, contents: "#!/bin/bash\nset -e\n" + prologue +
				"type -ap kubeadm || true\nkubeadm join --config /etc/k.yml\nmkdir -p /run/cluster-api\ntouch " + bootsim.SentinelPath + "\n"},
		}
	}
	unit := kubeadmUnit(oneshot("", "ExecStart=/bin/bash /etc/kubeadm.sh\n"))
	inspect := []string{"/usr/bin/kubeadm", "/opt/bin/kubeadm"}

	t.Run("in /usr/bin on the default PATH", func(t *testing.T) {
		rep := boot(t, ignitionConfig{files: files(""), units: []ignitionUnit{unit}}, bootsim.Options{KubeadmDir: "/usr/bin", Inspect: inspect})
		require.Equal(t, bootsim.ResultSuccess, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
		assert.Equal(t, "/usr/bin/kubeadm\n", rep.Steps[0].Output, "the stub is the only kubeadm")
		require.Len(t, rep.KubeadmCalls, 1)
		call := rep.KubeadmCalls[0]
		assert.Equal(t, "/usr/bin/kubeadm", call.Path)
		assert.Equal(t, []string{"join", "--config", "/etc/k.yml"}, call.Args)
		assert.Equal(t, config, call.Config)
		assert.False(t, call.SentinelExisted)
		assert.Equal(t, "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", call.PATH)
		assert.True(t, rep.SentinelExists)
		assert.True(t, rep.Files["/usr/bin/kubeadm"].Exists)
		assert.False(t, rep.Files["/opt/bin/kubeadm"].Exists)
	})

	t.Run("in /opt/bin, not on the default PATH", func(t *testing.T) {
		rep := boot(t, ignitionConfig{files: files(""), units: []ignitionUnit{unit}}, bootsim.Options{KubeadmDir: "/opt/bin", Inspect: inspect})
		assert.Equal(t, bootsim.ResultFailed, rep.Result)
		assert.Equal(t, "ExecStart[0]: exit status 127", rep.FailedStep)
		assert.Contains(t, rep.Steps[0].Output, "kubeadm: command not found")
		assert.Empty(t, rep.KubeadmCalls)
		assert.False(t, rep.SentinelExists)
		assert.True(t, rep.Files["/opt/bin/kubeadm"].Exists)
		assert.Equal(t, os.FileMode(0o755), rep.Files["/opt/bin/kubeadm"].Mode)
		assert.False(t, rep.Files["/usr/bin/kubeadm"].Exists)
	})

	t.Run("in /opt/bin, the script adds it to PATH", func(t *testing.T) {
		rep := boot(t, ignitionConfig{files: files("export PATH=/opt/bin:$PATH\n"), units: []ignitionUnit{unit}}, bootsim.Options{KubeadmDir: "/opt/bin"})
		require.Equal(t, bootsim.ResultSuccess, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
		assert.Equal(t, "/opt/bin/kubeadm\n", rep.Steps[0].Output, "the stub is the only kubeadm")
		require.Len(t, rep.KubeadmCalls, 1)
		assert.Equal(t, "/opt/bin/kubeadm", rep.KubeadmCalls[0].Path)
		assert.Equal(t, "/opt/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin", rep.KubeadmCalls[0].PATH)
		assert.True(t, rep.SentinelExists)
	})

	t.Run("in /opt/bin, the unit adds it to PATH", func(t *testing.T) {
		path := ignitionDropin{name: "10-path.conf", contents: "[Service]\nEnvironment=PATH=/opt/bin:/usr/bin\n"}
		rep := boot(t, ignitionConfig{files: files(""), units: []ignitionUnit{kubeadmUnit(unit.contents, path)}}, bootsim.Options{KubeadmDir: "/opt/bin"})
		require.Equal(t, bootsim.ResultSuccess, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
		require.Len(t, rep.KubeadmCalls, 1)
		assert.Equal(t, "/opt/bin/kubeadm", rep.KubeadmCalls[0].Path)
		assert.Equal(t, "/opt/bin:/usr/bin", rep.KubeadmCalls[0].PATH)
		assert.Contains(t, rep.Environment, "PATH=/opt/bin:/usr/bin")
	})

	t.Run("records every call, the --config= form and an early sentinel", func(t *testing.T) {
		cfg := ignitionConfig{
			files: []ignitionFile{
				{path: "/etc/k.yml", mode: 0o600, contents: config},
				{path: "/etc/kubeadm.sh", mode: 0o644, contents: "#!/bin/bash\nset -e\nkubeadm version\nmkdir -p /run/cluster-api\n" +
					"touch " + bootsim.SentinelPath + "\nkubeadm init '--config=/etc/k.yml' 'arg with space'\n"},
			},
			units: []ignitionUnit{unit},
		}
		rep := boot(t, cfg, bootsim.Options{KubeadmDir: "/usr/bin"})
		require.Equal(t, bootsim.ResultSuccess, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
		require.Len(t, rep.KubeadmCalls, 2)
		assert.Equal(t, []string{"version"}, rep.KubeadmCalls[0].Args)
		assert.Equal(t, "", rep.KubeadmCalls[0].Config)
		assert.False(t, rep.KubeadmCalls[0].SentinelExisted)
		assert.Equal(t, []string{"init", "--config=/etc/k.yml", "arg with space"}, rep.KubeadmCalls[1].Args)
		assert.Equal(t, config, rep.KubeadmCalls[1].Config)
		assert.True(t, rep.KubeadmCalls[1].SentinelExisted, "the script wrote the sentinel before kubeadm ran")
	})
}

// The stub's exit status is kubeadm's: a failing kubeadm fails the unit.
func TestKubeadmFails(t *testing.T) {
	cfg := ignitionConfig{
		files: []ignitionFile{{path: "/etc/kubeadm.sh", mode: 0o644, contents: "#!/bin/bash\nset -e\nkubeadm join\n" +
			"mkdir -p /run/cluster-api\ntouch " + bootsim.SentinelPath + "\n"}},
		units: []ignitionUnit{kubeadmUnit(oneshot("", "ExecStart=/bin/bash /etc/kubeadm.sh\nExecStartPost=/bin/echo never\n"))},
	}
	rep := boot(t, cfg, bootsim.Options{KubeadmDir: "/usr/bin", KubeadmExit: 1})
	assert.Equal(t, bootsim.ResultFailed, rep.Result)
	assert.Equal(t, "ExecStart[0]: exit status 1", rep.FailedStep)
	require.Len(t, rep.Steps, 1, "ExecStartPost= does not run after a failure")
	assert.Len(t, rep.KubeadmCalls, 1)
	assert.False(t, rep.SentinelExists)
}

// Environment= with systemd's quoting and EnvironmentFile= from a file in /run reach the
// commands, and nothing of the test process's environment does.
func TestEnvironment(t *testing.T) {
	t.Setenv("BOOTSIM_LEAK", "from the test process")
	service := "Environment=\"A=with space\" 'B=single q' C=from-unit D=\\x41\\n\n" +
		"EnvironmentFile=/run/metadata/flatcar\nEnvironmentFile=-/run/metadata/optional\n" +
		"ExecStart=/bin/bash -c 'printf \"%%s|\" \"$A\" \"$B\" \"$C\" \"$COREOS_EC2_HOSTNAME\" \"$BOOTSIM_LEAK\"'\n" +
		"ExecStart=/bin/echo $COREOS_SPLIT ${A}-x $$A\nExecStart=/usr/bin/env -0\n"
	cfg := ignitionConfig{units: []ignitionUnit{kubeadmUnit(oneshot("", service))}}
	run := map[string]string{"/run/metadata/flatcar": "# written by coreos-metadata\nCOREOS_EC2_HOSTNAME=ip-10-0-0-1.ec2.internal\n" +
		"C=\"from file\"\nCOREOS_SPLIT='one two'  \n; another comment\n"}

	rep := boot(t, cfg, bootsim.Options{RunFiles: run})
	require.Equal(t, bootsim.ResultSuccess, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
	require.Len(t, rep.Steps, 3)
	assert.Equal(t, "with space|single q|from file|ip-10-0-0-1.ec2.internal||", rep.Steps[0].Output, "EnvironmentFile= overrides Environment=")
	assert.Equal(t, []string{"/bin/echo", "one", "two", "with space-x", "$A"}, rep.Steps[1].Argv)
	assert.Equal(t, []string{
		"A=with space", "B=single q", "C=from file", "COREOS_EC2_HOSTNAME=ip-10-0-0-1.ec2.internal", "COREOS_SPLIT=one two",
		"D=A\n", "INVOCATION_ID=b00751b00751b00751b00751b0075100", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin",
	}, rep.Environment)
	seen := strings.Split(strings.TrimSuffix(rep.Steps[2].Output, "\x00"), "\x00")
	sort.Strings(seen)
	assert.Equal(t, rep.Environment, seen, "the process got exactly the reported environment")

	missing := boot(t, cfg, bootsim.Options{})
	assert.Equal(t, bootsim.ResultFailed, missing.Result)
	assert.Equal(t, "ExecStart[0]: Failed to load environment files: No such file or directory", missing.FailedStep)
}

// Drop-ins apply after the unit, sorted by file name across kubeadm.service.d and service.d, the
// unit's own shadowing a same-named one in service.d; an empty Environment= resets the list.
func TestDropins(t *testing.T) {
	cfg := ignitionConfig{
		files: []ignitionFile{
			{path: "/etc/systemd/system/service.d/10-all.conf", mode: 0o644, contents: "[Service]\nEnvironment=ORDER=10 FROM10=yes\n"},
			{path: "/etc/systemd/system/service.d/25-same.conf", mode: 0o644, contents: "[Service]\nEnvironment=SHADOW=service.d\n"},
			{path: "/etc/systemd/system/service.d/30-all.conf", mode: 0o644, contents: "[Service]\nEnvironment=ORDER=30\n"},
		},
		units: []ignitionUnit{kubeadmUnit(oneshot("After=network-online.target\n", "Environment=UNIT=yes\nExecStart=/bin/true\n"),
			ignitionDropin{name: "20-reset.conf", contents: "[Unit]\nRequires=coreos-metadata.service\nAfter=coreos-metadata.service\n" +
				"After=\n[Service]\nEnvironment=\nEnvironment=ORDER=20 FROM20=yes\n"},
			ignitionDropin{name: "25-same.conf", contents: "[Service]\nEnvironment=SHADOW=kubeadm.service.d\n"},
		)},
	}
	rep := boot(t, cfg, bootsim.Options{})
	require.Equal(t, bootsim.ResultSuccess, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
	assert.Equal(t, []string{
		"/etc/systemd/system/kubeadm.service",
		"/etc/systemd/system/service.d/10-all.conf",
		"/etc/systemd/system/kubeadm.service.d/20-reset.conf",
		"/etc/systemd/system/kubeadm.service.d/25-same.conf",
		"/etc/systemd/system/service.d/30-all.conf",
	}, rep.UnitFiles)
	assert.Contains(t, rep.Environment, "ORDER=30")
	assert.Contains(t, rep.Environment, "FROM20=yes")
	assert.Contains(t, rep.Environment, "SHADOW=kubeadm.service.d")
	assert.NotContains(t, rep.Environment, "UNIT=yes", "the empty Environment= reset the unit's")
	assert.NotContains(t, rep.Environment, "FROM10=yes", "the empty Environment= reset the earlier drop-in's")
	assert.Equal(t, []string{"coreos-metadata.service"}, rep.Requires)
	assert.Equal(t, []string{"network-online.target", "coreos-metadata.service"}, rep.After, "an empty After= resets nothing")
}

// Conditions are checked in the sandbox before anything runs; a failed one skips the unit.
func TestConditions(t *testing.T) {
	present := ignitionFile{path: "/etc/present", mode: 0o644, contents: "x"}
	cases := map[string]struct {
		unitLines, dropin string
		result, why       string
	}{
		"missing path":                           {unitLines: "ConditionPathExists=/etc/missing\n", result: bootsim.ResultSkipped, why: "ConditionPathExists=/etc/missing was not met"},
		"negated missing path, a file not empty": {unitLines: "ConditionPathExists=!/etc/missing\nConditionFileNotEmpty=/etc/present\n", result: bootsim.ResultSuccess},
		"negated present path":                   {unitLines: "ConditionPathExists=!/etc/present\n", result: bootsim.ResultSkipped, why: "ConditionPathExists=!/etc/present was not met"},
		"no trigger holds":                       {unitLines: "ConditionPathExists=|/etc/missing\nConditionPathIsDirectory=|/etc/present\n", result: bootsim.ResultSkipped, why: "none of the triggering conditions was met"},
		"one trigger holds":                      {unitLines: "ConditionPathExists=|/etc/missing\nConditionPathExistsGlob=|/etc/pres*\n", result: bootsim.ResultSuccess},
		"reset by any condition":                 {unitLines: "ConditionPathExists=/etc/missing\n", dropin: "[Unit]\nConditionDirectoryNotEmpty=\n", result: bootsim.ResultSuccess},
		"assertion fails instead":                {unitLines: "AssertPathExists=/etc/missing\n", result: bootsim.ResultFailed, why: "assertion failed: AssertPathExists=/etc/missing was not met"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := kubeadmUnit(oneshot(tc.unitLines, "ExecStart=/bin/true\n"))
			if tc.dropin != "" {
				u.dropins = []ignitionDropin{{name: "10-reset.conf", contents: tc.dropin}}
			}
			rep := boot(t, ignitionConfig{files: []ignitionFile{present}, units: []ignitionUnit{u}}, bootsim.Options{})
			assert.Equal(t, tc.result, rep.Result, rep.FailedStep)
			assert.Contains(t, rep.FailedStep, tc.why)
			if tc.result == bootsim.ResultSuccess {
				assert.Len(t, rep.Steps, 1)
			} else {
				assert.Empty(t, rep.Steps, "nothing runs")
			}
		})
	}
}

// The unit runs with the sandbox's hostname: the transient one of Options.Hostname, unless the
// config wrote a static /etc/hostname.
func TestHostname(t *testing.T) {
	u := kubeadmUnit(oneshot("", "ExecStart=/bin/bash -c 'echo \"$(</proc/sys/kernel/hostname) $(hostname)\"'\n"))
	rep := boot(t, ignitionConfig{units: []ignitionUnit{u}}, bootsim.Options{Hostname: "ip-10-0-0-7"})
	require.Equal(t, bootsim.ResultSuccess, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
	assert.Equal(t, "ip-10-0-0-7 ip-10-0-0-7\n", rep.Steps[0].Output)
	assert.Equal(t, "ip-10-0-0-7", rep.Hostname)

	static := ignitionFile{path: "/etc/hostname", mode: 0o644, contents: "# set by the config\nworker-3\n"}
	rep = boot(t, ignitionConfig{files: []ignitionFile{static}, units: []ignitionUnit{u}}, bootsim.Options{})
	assert.Equal(t, "worker-3 worker-3\n", rep.Steps[0].Output)
	host, err := os.Hostname()
	require.NoError(t, err)
	assert.NotEqual(t, "worker-3", host, "the host's hostname is untouched")
}

// What the unit writes stays in the sandbox; /usr is read-only and / accepts nothing new.
func TestHostIsUntouched(t *testing.T) {
	probe := "/var/tmp/bootsim-probe-" + strings.ReplaceAll(t.Name(), "/", "-")
	script := "#!/bin/bash\ntouch " + probe + " /opt/bootsim-probe /etc/bootsim-probe /root/bootsim-probe\n" +
		"touch /usr/bootsim-probe 2>&1 || true\nmkdir /bootsim-probe 2>&1 || true\necho done\n"
	cfg := ignitionConfig{
		files: []ignitionFile{{path: "/etc/probe.sh", mode: 0o644, contents: script}},
		units: []ignitionUnit{kubeadmUnit(oneshot("", "ExecStart=/bin/bash /etc/probe.sh\n"))},
	}
	rep := boot(t, cfg, bootsim.Options{Inspect: []string{probe, "/etc/probe.sh", "/usr/bootsim-probe"}})
	require.Equal(t, bootsim.ResultSuccess, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
	assert.Contains(t, rep.Steps[0].Output, "touch: cannot touch '/usr/bootsim-probe': Read-only file system")
	assert.Contains(t, rep.Steps[0].Output, "mkdir: cannot create directory '/bootsim-probe': Read-only file system")
	assert.True(t, rep.Files[probe].Exists, "the write succeeded inside")
	assert.Equal(t, script, rep.Files["/etc/probe.sh"].Content)
	assert.Equal(t, os.FileMode(0o644), rep.Files["/etc/probe.sh"].Mode)
	for _, p := range []string{probe, "/opt/bootsim-probe", "/etc/bootsim-probe", "/root/bootsim-probe", "/etc/probe.sh", "/usr/bin/kubeadm"} {
		_, err := os.Lstat(p)
		assert.True(t, os.IsNotExist(err), "%s must not exist on the host: %v", p, err)
	}
}

// The presets decide Enabled: the first matching line, files sorted by name.
func TestPresets(t *testing.T) {
	u := kubeadmUnit(oneshot("", "ExecStart=/bin/true\n"))
	rep := boot(t, ignitionConfig{units: []ignitionUnit{u}}, bootsim.Options{})
	assert.True(t, rep.Enabled)
	assert.Equal(t, "20-ignition.preset: enable kubeadm.service", rep.EnabledBy)
	assert.Equal(t, []string{"multi-user.target"}, rep.WantedBy)
	assert.Equal(t, bootsim.DefaultHostname, rep.Hostname)

	early := ignitionFile{path: "/etc/systemd/system-preset/10-early.preset", mode: 0o644, contents: "# site policy\ndisable kube*\n"}
	rep = boot(t, ignitionConfig{files: []ignitionFile{early}, units: []ignitionUnit{u}}, bootsim.Options{})
	assert.False(t, rep.Enabled)
	assert.Equal(t, "10-early.preset: disable kube*", rep.EnabledBy)

	u.enabled = false
	rep = boot(t, ignitionConfig{units: []ignitionUnit{u}}, bootsim.Options{})
	assert.False(t, rep.Enabled, "no preset line: not enabled")
}

// Settings the simulator does not simulate make Boot fail instead of being ignored.
func TestNotSimulated(t *testing.T) {
	cases := map[string]string{
		"ExecStopPost":            oneshot("", "ExecStart=/bin/true\nExecStopPost=/bin/true\n"),
		"Type=forking":            "[Service]\nType=forking\nExecStart=/bin/true\n",
		"ConditionVirtualization": oneshot("ConditionVirtualization=kvm\n", "ExecStart=/bin/true\n"),
		"the specifier \"%H\"":    oneshot("", "ExecStart=/bin/echo %H\n"),
		"is not an absolute path": oneshot("", "ExecStart=true\n"),
	}
	for want, contents := range cases {
		t.Run(want, func(t *testing.T) {
			cfg := ignitionConfig{units: []ignitionUnit{kubeadmUnit(contents)}}
			_, err := bootsim.BootErr(t, bootsim.Options{Config: cfg.marshal(t), KubeadmDir: "/usr/bin"})
			require.Error(t, err)
			assert.Contains(t, err.Error(), "not simulated: ")
			assert.Contains(t, err.Error(), want)
		})
	}
}

// Exec prefixes, service types and the order of the start job.
func TestStartJob(t *testing.T) {
	cases := map[string]struct {
		service string
		result  string
		why     string
		steps   []string // Directive: ExitCode
	}{
		"\"-\" ignores a failure and a missing executable": {
			service: "Type=oneshot\nExecStartPre=-/bin/false\nExecStartPre=-/no/such/binary\nExecStart=/bin/true\n",
			result:  bootsim.ResultSuccess, steps: []string{"ExecStartPre[0]: 1", "ExecStartPre[1]: 0", "ExecStart[0]: 0"},
		},
		"a missing executable fails with 203": {
			service: "Type=oneshot\nExecStart=/no/such/binary\nExecStart=/bin/true\n",
			result:  bootsim.ResultFailed, why: "ExecStart[0]: exit status 203/EXEC (Failed to locate executable /no/such/binary: No such file or directory)",
			steps: []string{"ExecStart[0]: 203"},
		},
		"an ExecStartPre= writes the EnvironmentFile= ExecStart= reads": {
			service: "Type=oneshot\nEnvironmentFile=/run/late.env\nExecStartPre=/bin/bash -c 'echo X=late >/run/late.env'\n" +
				"ExecStart=/bin/test ${X} = late\n",
			result: bootsim.ResultFailed, why: "ExecStartPre[0]: Failed to load environment files: No such file or directory",
			steps: []string{"ExecStartPre[0]: -1"},
		},
		"an optional EnvironmentFile= written by ExecStartPre=": {
			service: "Type=oneshot\nEnvironmentFile=-/run/late.env\nExecStartPre=/bin/bash -c 'echo X=late >/run/late.env'\n" +
				"ExecStart=/bin/test ${X} = late\n",
			result: bootsim.ResultSuccess, steps: []string{"ExecStartPre[0]: 0", "ExecStart[0]: 0"},
		},
		"simple: ExecStartPost= runs, the main process fails the unit": {
			service: "Type=simple\nExecStart=/bin/bash -c 'sleep 0.2; exit 3'\nExecStartPost=/bin/true\n",
			result:  bootsim.ResultFailed, why: "ExecStart[0]: exit status 3", steps: []string{"ExecStart[0]: 3", "ExecStartPost[0]: 0"},
		},
		"exec: a main process that cannot start skips ExecStartPost=": {
			service: "Type=exec\nExecStart=/no/such/binary\nExecStartPost=/bin/true\n",
			result:  bootsim.ResultFailed, why: "ExecStart[0]: exit status 203/EXEC", steps: []string{"ExecStart[0]: 203"},
		},
		"simple refuses a second ExecStart=": {
			service: "ExecStart=/bin/true\nExecStart=/bin/true\n",
			result:  bootsim.ResultFailed, why: "bad-setting: Service has more than one ExecStart= setting",
		},
		"a background process does not hold the unit up": {
			service: "Type=oneshot\nExecStart=/bin/bash -c 'sleep 600 & echo started'\n",
			result:  bootsim.ResultSuccess, steps: []string{"ExecStart[0]: 0"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := kubeadmUnit("[Service]\n" + tc.service + "[Install]\nWantedBy=multi-user.target\n")
			rep := boot(t, ignitionConfig{units: []ignitionUnit{u}}, bootsim.Options{})
			assert.Equal(t, tc.result, rep.Result, "%s %+v", rep.FailedStep, rep.Steps)
			assert.Contains(t, rep.FailedStep, tc.why)
			var steps []string
			for _, s := range rep.Steps {
				steps = append(steps, fmt.Sprintf("%s: %d", s.Directive, s.ExitCode))
			}
			assert.Equal(t, tc.steps, steps)
		})
	}
}

// A kubeadm other than the stub, here one the config installs, would make a test pass for the
// wrong reason: the simulation refuses to run.
func TestRefusesAnotherKubeadm(t *testing.T) {
	cfg := ignitionConfig{
		files: []ignitionFile{{path: "/opt/bin/kubeadm", mode: 0o755, contents: "#!/bin/bash\nexit 0\n"}},
		units: []ignitionUnit{kubeadmUnit(oneshot("", "ExecStart=/bin/true\n"))},
	}
	_, err := bootsim.BootErr(t, bootsim.Options{Config: cfg.marshal(t), KubeadmDir: "/usr/bin"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "a kubeadm already exists at /opt/bin/kubeadm")
}
