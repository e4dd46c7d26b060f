package bootsim

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func TestDropinDirs(t *testing.T) {
	assert.Equal(t, []string{"service.d", "kubeadm.service.d"}, dropinDirs("kubeadm.service"))
	assert.Equal(t, []string{"service.d", "foo-.service.d", "foo-bar-.service.d", "foo-bar-baz.service.d"}, dropinDirs("foo-bar-baz.service"))
}

func TestReadUnitSources(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"etc/systemd/system/a-b.service":                 "[Service]\nExecStart=/bin/true\n",
		"etc/systemd/system/service.d/50-all.conf":       "x",
		"etc/systemd/system/service.d/20-same.conf":      "shadowed",
		"etc/systemd/system/a-.service.d/30-prefix.conf": "x",
		"etc/systemd/system/a-b.service.d/20-same.conf":  "unit",
		"etc/systemd/system/a-b.service.d/10-first.conf": "x",
		"etc/systemd/system/a-b.service.d/.hidden.conf":  "x",
		"etc/systemd/system/a-b.service.d/notes.txt":     "x",
		"etc/systemd/system/a-b.service.d/40-empty.conf": "",
	})
	require.NoError(t, os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system/a-b.service.d/50-all.conf")))

	sources, err := readUnitSources(root, "a-b.service")
	require.NoError(t, err)
	var paths []string
	for _, s := range sources {
		paths = append(paths, s.Path)
	}
	assert.Equal(t, []string{
		"/etc/systemd/system/a-b.service",
		"/etc/systemd/system/a-b.service.d/10-first.conf",
		"/etc/systemd/system/a-b.service.d/20-same.conf",
		"/etc/systemd/system/a-.service.d/30-prefix.conf",
	}, paths, "sorted by name; the unit's own 20-same.conf shadows service.d's; empty and /dev/null drop-ins mask")
	assert.Equal(t, "unit", string(sources[2].Content))

	_, err = readUnitSources(root, "missing.service")
	assert.ErrorIs(t, err, errNotSimulated)
	require.NoError(t, os.Symlink("/dev/null", filepath.Join(root, "etc/systemd/system/masked.service")))
	_, err = readUnitSources(root, "masked.service")
	assert.ErrorIs(t, err, errNotSimulated)
}

func parse(t *testing.T, contents ...string) *service {
	t.Helper()
	var sources []unitSource
	for i, c := range contents {
		sources = append(sources, unitSource{Path: filepath.Join("/src", string(rune('a'+i))), Content: []byte(c)})
	}
	s, err := parseService("kubeadm.service", sources)
	require.NoError(t, err)
	return s
}

func TestParseServiceMerging(t *testing.T) {
	s := parse(t,
		"[Unit]\nAfter=a.service b.service\nRequires=a.service\nConditionPathExists=/etc/x\n"+
			"AssertPathExists=/etc/y\n[Service]\nType=oneshot\nExecStart=/bin/one\nExecStart=/bin/two\n"+
			"EnvironmentFile=-/run/a\n[X-Custom]\nAnything=goes\n[Install]\nWantedBy=multi-user.target\n",
		"[Unit]\nAfter=\nAfter=c.service\nConditionFileNotEmpty=\n[Service]\nExecStart=\nExecStart=/bin/three\n"+
			"EnvironmentFile=\nEnvironmentFile=/run/b\n[Typo]\nKey=value\n",
	)
	assert.Equal(t, []string{"a.service", "b.service", "c.service"}, s.After, "dependencies are never reset")
	assert.Equal(t, []string{"a.service"}, s.Requires)
	assert.Empty(t, s.Conditions, "an empty Condition*= resets every condition")
	require.Len(t, s.Asserts, 1, "…but not the assertions")
	assert.Equal(t, "/etc/y", s.Asserts[0].Path)
	require.Len(t, s.Exec["ExecStart"], 1)
	assert.Equal(t, "/bin/three", s.Exec["ExecStart"][0].Path)
	assert.Equal(t, []string{"/run/b"}, s.EnvironmentFiles)
	assert.Equal(t, []string{"multi-user.target"}, s.WantedBy)
	assert.Equal(t, []string{"unknown section [Typo], ignored by systemd"}, s.Warnings)
	assert.Empty(t, s.BadSetting)
}

func TestParseServiceBadSettings(t *testing.T) {
	assert.Equal(t, "simple", parse(t, "[Service]\nExecStart=/bin/true\n").Type, "the default type")
	assert.Contains(t, parse(t, "[Service]\nExecStart=/bin/a\nExecStart=/bin/b\n").BadSetting, "more than one ExecStart=")
	assert.Contains(t, parse(t, "[Service]\nType=oneshot\n").BadSetting, "no ExecStart=")
	assert.Contains(t, parse(t, "[Service]\nType=oneshot\nExecStart=bin/true\n").BadSetting, "neither a valid executable name nor an absolute path")
	assert.Empty(t, parse(t, "[Service]\nType=oneshot\nExecStart=-bin/true\nExecStart=/bin/true\n").BadSetting, "\"-\" turns it into a warning")
}

func TestParseServiceNotSimulated(t *testing.T) {
	for _, content := range []string{
		"[Service]\nExecStart=/bin/true\nExecStopPost=/bin/true\n",
		"[Service]\nExecStart=/bin/true\nExecCondition=/bin/true\n",
		"[Service]\nType=notify\nExecStart=/bin/true\n",
		"[Service]\nExecStart=/bin/true\nUser=core\n",
		"[Service]\nExecStart=/bin/true\nRestart=on-failure\n",
		"[Service]\nExecStart=/bin/true\nSuccessExitStatus=1\n",
		"[Service]\nExecStart=/bin/true\nTimeoutStartSec=10\n",
		"[Service]\nExecStart=/bin/true\nStandardOutput=file:/tmp/x\n",
		"[Unit]\nConditionHost=node\n[Service]\nExecStart=/bin/true\n",
		"[Unit]\nAssertVirtualization=kvm\n[Service]\nExecStart=/bin/true\n",
		"[Unit]\nBindsTo=x.service\n[Service]\nExecStart=/bin/true\n",
		"[Unit]\nConditionPathExistsGlob=/etc/{a,b}\n[Service]\nExecStart=/bin/true\n",
	} {
		_, err := parseService("kubeadm.service", []unitSource{{Path: "/u", Content: []byte(content)}})
		assert.ErrorIs(t, err, errNotSimulated, content)
	}
}

func TestConditionChecks(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"file": "x", "empty": "", "full/a": "x", "hidden/.a": "x", "hidden/b~": "x"})
	require.NoError(t, os.Chmod(filepath.Join(dir, "file"), 0o755))
	require.NoError(t, os.Symlink("file", filepath.Join(dir, "link")))
	p := func(name string) string { return filepath.Join(dir, name) }

	for typ, cases := range map[string]map[string]bool{
		"PathExists":         {p("file"): true, p("missing"): false, p("link"): true},
		"PathIsDirectory":    {p("full"): true, p("file"): false},
		"PathIsSymbolicLink": {p("link"): true, p("file"): false},
		"FileNotEmpty":       {p("file"): true, p("empty"): false, p("full"): false, p("link"): true},
		"FileIsExecutable":   {p("file"): true, p("empty"): false},
		"DirectoryNotEmpty":  {p("full"): true, p("hidden"): false, p("missing"): false, p("file"): false},
		"PathExistsGlob":     {p("fu*"): true, p("*/a"): true, p("hidden/a*"): false, p("hidden/.a*"): true, p("nothing*"): false},
	} {
		for path, want := range cases {
			assert.Equal(t, want, conditionTests[typ](path), "%s=%s", typ, path)
		}
	}

	ok, _ := checkConditions([]condition{
		{Type: "PathExists", Path: p("file")},
		{Type: "PathExists", Path: p("missing"), Negate: true},
		{Type: "PathExists", Path: p("missing"), Trigger: true},
		{Type: "PathIsDirectory", Path: p("full"), Trigger: true},
	})
	assert.True(t, ok, "regular conditions hold and one trigger does")
	ok, why := checkConditions([]condition{
		{Type: "PathExists", Path: p("missing"), Trigger: true, Setting: "ConditionPathExists=|missing"},
		{Type: "PathExists", Path: p("file"), Trigger: true, Negate: true, Setting: "ConditionPathExists=|!file"},
	})
	assert.False(t, ok)
	assert.Equal(t, "none of the triggering conditions was met: ConditionPathExists=|missing, ConditionPathExists=|!file", why)
}

func TestPresetEnabled(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{
		"etc/systemd/system-preset/20-ignition.preset": "enable kubeadm.service\ndisable other.service\n",
		"etc/systemd/system-preset/90-default.preset":  "# comment\nenable *\n",
		"etc/systemd/system-preset/05-notes.txt":       "disable *\n",
	})
	enabled, by, _, err := presetEnabled(root, "kubeadm.service")
	require.NoError(t, err)
	assert.True(t, enabled)
	assert.Equal(t, "20-ignition.preset: enable kubeadm.service", by)
	enabled, _, _, err = presetEnabled(root, "other.service")
	require.NoError(t, err)
	assert.False(t, enabled)

	writeFiles(t, root, map[string]string{"etc/systemd/system-preset/10-site.preset": "bogus line\ndisable kube*\n"})
	enabled, by, warnings, err := presetEnabled(root, "kubeadm.service")
	require.NoError(t, err)
	assert.False(t, enabled)
	assert.Equal(t, "10-site.preset: disable kube*", by)
	assert.Len(t, warnings, 1)

	enabled, by, _, err = presetEnabled(t.TempDir(), "kubeadm.service")
	require.NoError(t, err)
	assert.False(t, enabled, "no preset line: not enabled")
	assert.Empty(t, by)
}

func TestParseServiceContinuation(t *testing.T) {
	s := parse(t, "[Service]\nType=oneshot\nExecStart=/bin/echo a \\\n  b\\\n\"c d\"\nEnvironment=A=1 \\\n B=2\n")
	require.Len(t, s.Exec["ExecStart"], 1)
	assert.Equal(t, []string{"/bin/echo", "a", "b", "c d"}, s.Exec["ExecStart"][0].Argv)
	assert.Equal(t, []string{"A=1", "B=2"}, s.Environment)
}
