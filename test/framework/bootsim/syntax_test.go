package bootsim

import (
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cases below are systemd's own (src/test/test-load-fragment.c, test-env-util.c,
// test-env-file.c), so that the port is checked against the original's behaviour.

func TestParseExecLine(t *testing.T) {
	type command struct {
		path   string
		argv   []string
		ignore bool
	}
	cases := []struct {
		line string
		want []command
		bad  bool // systemd refuses to load the unit
	}{
		{line: "/RValue r1", want: []command{{"/RValue", []string{"/RValue", "r1"}, false}}},
		{line: "/RValue///slashes r1///", want: []command{{"/RValue/slashes", []string{"/RValue///slashes", "r1///"}, false}}},
		{line: "/RValue/ argv0 r1", bad: true},
		{line: "@/RValue///slashes2 ///argv0 r1", want: []command{{"/RValue/slashes2", []string{"///argv0", "r1"}, false}}},
		{line: "@/RValue", bad: true},
		{line: "-@/RValue///slashes3 argv0a r1", want: []command{{"/RValue/slashes3", []string{"argv0a", "r1"}, true}}},
		{line: "@-/RValue///slashes4 argv0b r1", want: []command{{"/RValue/slashes4", []string{"argv0b", "r1"}, true}}},
		{line: "--/RValue argv0 r1"},  // ignored with a warning
		{line: "-@-/RValue argv0 r1"}, // ignored with a warning
		{line: "-@/RValue argv0 r1 ; /goo/goo boo", want: []command{
			{"/RValue", []string{"argv0", "r1"}, true}, {"/goo/goo", []string{"/goo/goo", "boo"}, false}}},
		{line: "-@/RValue argv0 r1 ; ; /goo/goo boo", want: []command{
			{"/RValue", []string{"argv0", "r1"}, true}, {"/goo/goo", []string{"/goo/goo", "boo"}, false}}},
		{line: "-@/RValue argv0 r1 ; ", want: []command{{"/RValue", []string{"argv0", "r1"}, true}}},
		{line: "-@/RValue argv0 r1 ;", want: []command{{"/RValue", []string{"argv0", "r1"}, true}}},
		{line: "-@/RValue argv0 r1 ';'", want: []command{{"/RValue", []string{"argv0", "r1", ";"}, true}}},
		{line: `/bin/find \;`, want: []command{{"/bin/find", []string{"/bin/find", ";"}, false}}},
		{line: `/sbin/find \; /x`, want: []command{{"/sbin/find", []string{"/sbin/find", ";", "/x"}, false}}},
		{line: `/sbin/find \;x`, want: []command{{"/sbin/find", []string{"/sbin/find", `\;x`}, false}}},
		{line: `/bin/find \073`, want: []command{{"/bin/find", []string{"/bin/find", ";"}, false}}},
		{line: `/bin/find ";"`, want: []command{{"/bin/find", []string{"/bin/find", ";"}, false}}},
		{line: `/sbin/find ";" /x`, want: []command{{"/sbin/find", []string{"/sbin/find", ";", "/x"}, false}}},
		{line: `"/PATH WITH SPACES/daemon" -1 -2`, want: []command{
			{"/PATH WITH SPACES/daemon", []string{"/PATH WITH SPACES/daemon", "-1", "-2"}, false}}},
		{line: `"/PATH WITH SPACES/daemon -1 -2"`, want: []command{
			{"/PATH WITH SPACES/daemon -1 -2", []string{"/PATH WITH SPACES/daemon -1 -2"}, false}}},
		{line: `"/PATH WITH SPACES/daemon" "-1" '-2'`, want: []command{
			{"/PATH WITH SPACES/daemon", []string{"/PATH WITH SPACES/daemon", "-1", "-2"}, false}}},
		{line: `"/PATH\sWITH\sSPACES/daemon" '-1 -2'`, want: []command{
			{"/PATH WITH SPACES/daemon", []string{"/PATH WITH SPACES/daemon", "-1 -2"}, false}}},
		{line: `"/PATH\x20WITH\x20SPACES/daemon" "-1 -2"`, want: []command{
			{"/PATH WITH SPACES/daemon", []string{"/PATH WITH SPACES/daemon", "-1 -2"}, false}}},
		{line: `/path\a`, bad: true},
		{line: `/path\b`, bad: true},
		{line: `/path\n`, bad: true},
		{line: `/path\\`, bad: true},
		{line: `/path\'`, bad: true},
		{line: `/path\"`, bad: true},
		{line: `/path\x`, bad: true},
		{line: `/path\s`, want: []command{{"/path ", []string{"/path "}, false}}},
		{line: `/bin/grep '\w+\K'`, want: []command{{"/bin/grep", []string{"/bin/grep", `\w+\K`}, false}}},
		{line: `/path\`, bad: true},
		{line: `/path 'foo`, bad: true},
		{line: `/path 'foo\`, bad: true},
		{line: "- /path"}, // ignored with a warning
		{line: "-"},       // ignored with a warning
		{line: "/bin/echo 100%% $$HOME ${X}", want: []command{{"/bin/echo", []string{"/bin/echo", "100%", "$$HOME", "${X}"}, false}}},
		{line: ":+/bin/true", want: []command{{"/bin/true", []string{"/bin/true"}, false}}},
		{line: "!!/bin/true", want: []command{{"/bin/true", []string{"/bin/true"}, false}}},
		{line: "+!/bin/true", bad: true}, // "+" and "!" exclude each other
	}
	for _, tc := range cases {
		t.Run(tc.line, func(t *testing.T) {
			cmds, _, bad, err := parseExecLine(tc.line)
			require.NoError(t, err)
			assert.Equal(t, tc.bad, bad != "", "bad setting: %q", bad)
			var got []command
			for _, c := range cmds {
				got = append(got, command{c.Path, c.Argv, c.IgnoreFailure})
			}
			assert.Equal(t, tc.want, got)
		})
	}

	for _, line := range []string{"|/bin/sh -c true", "/bin/echo %n", "true"} {
		_, _, _, err := parseExecLine(line)
		assert.ErrorIs(t, err, errNotSimulated, line)
	}
	cmds, _, _, err := parseExecLine(":/bin/echo $HOME")
	require.NoError(t, err)
	assert.True(t, cmds[0].NoEnvExpand)
}

func TestReplaceEnvArgv(t *testing.T) {
	env := []string{"FOO=BAR BAR", "BAR=waldo"}
	line := []string{
		"FOO$FOO", "FOO$FOOFOO", "FOO${FOO}$FOO", "FOO${FOO}", "${FOO}", "$FOO", "$FOO$FOO", "${FOO}${BAR}",
		"${FOO", "FOO$$${FOO}", "$$FOO${FOO}", "${FOO:-${BAR}}", "${QUUX:-${FOO}}", "${FOO:+${BAR}}",
		"${QUUX:+${BAR}}", "${FOO:+|${BAR}|}}", "${FOO:+|${BAR}{|}",
	}
	assert.Equal(t, []string{
		"FOO$FOO", "FOO$FOOFOO", "FOOBAR BAR$FOO", "FOOBAR BAR", "BAR BAR", "BAR", "BAR", "BAR BARwaldo",
		"${FOO", "FOO$BAR BAR", "$FOOBAR BAR", "${FOO:-waldo}", "${QUUX:-BAR BAR}", "${FOO:+waldo}",
		"${QUUX:+waldo}", "${FOO:+|waldo|}}", "${FOO:+|waldo{|}",
	}, replaceEnvArgv(line, env))

	bad := []string{"$FOO", "A${FOO}B", "a${~}${%}b", "x${}y", "$UNSET2", "z${UNSET3}z${UNSET1}z", "piff${UNSET2}piff"}
	assert.Equal(t, []string{"BAR", "BAR", "ABAR BARB", "ab", "xy", "zzz", "piffpiff"}, replaceEnvArgv(bad, env))

	quoted := []string{"FOO='one two' \"three\" four\\ five"}
	assert.Equal(t, []string{"one two", "three", "four five"}, replaceEnvArgv([]string{"$FOO"}, quoted))
}

func sorted(env []string) []string {
	out := append([]string(nil), env...)
	sort.Strings(out)
	return out
}

func TestParseEnvFile(t *testing.T) {
	cases := []struct {
		content string
		want    []string
	}{
		{"a=a\na=b\na=b\na=a\nb=b\\\nc\nd= d\\\ne  \\\nf  \ng=g\\ \nh= ąęół\\ śćńźżμ \ni=i\\",
			[]string{"a=a", "b=bc", "d=de  f", "g=g ", "h=ąęół śćńźżμ", "i=i"}},
		{"a=a\\\n", []string{"a=a"}},
		{"#SPAMD_ARGS=\"-d --socketpath=/var/lib/bulwark/spamd \\\n#--nouser-config                                     \\\n" +
			"normal1=line\\\n111\n;normal=ignored                                      \\\nnormal2=line222\n" +
			"normal ignored                                       \\\n", []string{"normal1=line111", "normal2=line222"}},
		{"# Generated\n\nHWMON_MODULES=\"coretemp f71882fg\"\n\n# For compatibility reasons\n\nMODULE_0=coretemp\nMODULE_1=f71882fg",
			[]string{"HWMON_MODULES=coretemp f71882fg", "MODULE_0=coretemp", "MODULE_1=f71882fg"}},
		{"a=\nb=", []string{"a=", "b="}},
		{"a=\\ \\n \\t \\x \\y \\' \nb= \\$'                  \nc= ' \\n\\t\\$\\`\\\\\n'   \nd= \" \\n\\t\\$\\`\\\\\n\"   \n",
			[]string{"a= n t x y '", "b=$'", "c= \\n\\t\\$\\`\\\\\n", "d= \\n\\t$`\\\n"}},
		{"one=BAR   \n# comment\n # comment \n ; comment \n  two   =   bar    \ninvalid line\ninvalid line #comment\n" +
			"three = \"333\nxxxx\"\nfour = '44\\\"44'\nfive = \"55\\\"55\" \"FIVE\" cinco   \nsix = seis sechs\\\n sis\n" +
			"seven=\"sevenval\" #nocomment\neight=eightval #nocomment\nexport nine=nineval\nten=ignored\nten=ignored\nten=\n" +
			"eleven=\\value\ntwelve=\"\\value\"\nthirteen='\\value'",
			// "export nine" is not a valid name: strv_env_clean_with_callback() drops it.
			[]string{"one=BAR", "two=bar", "three=333\nxxxx", "four=44\\\"44", "five=55\"55FIVEcinco", "six=seis sechs sis",
				"seven=sevenval#nocomment", "eight=eightval #nocomment", "ten=", "eleven=value", "twelve=\\value", "thirteen=\\value"}},
		{"one=BAR\\\n\\ \\ \\ \\ VAR\\\n\\\tGAR\n#comment\ntwo=\"bar\\\n    var\\\n\tgar\"\n#comment\ntri=\"bar \\\n    var \\\n\tgar \"\n",
			[]string{"one=BAR    VAR\tGAR", "two=bar    var\tgar", "tri=bar     var \tgar "}},
	}
	for _, tc := range cases {
		got, err := parseEnvFile(tc.content)
		require.NoError(t, err, tc.content)
		assert.Equal(t, sorted(tc.want), sorted(got), tc.content)
	}
	for _, s := range []string{"fo\ufffeo=bar", "foo=b\uffffar", "baz=hello world\ufffe"} {
		_, err := parseEnvFile(s)
		assert.ErrorIs(t, err, errEnvFileUTF8, s)
	}
}

func TestEnvironmentAssignments(t *testing.T) {
	cases := []struct {
		lines []string
		want  []string
	}{
		{[]string{`"A=with space" 'B=single q' C=x`}, []string{"A=with space", "B=single q", "C=x"}},
		{[]string{`A=\x41\t`}, []string{"A=A\t"}},
		{[]string{"A=1 B=2", "A=3"}, []string{"A=3", "B=2"}},
		{[]string{"A=1", "", "B=2"}, []string{"B=2"}},
		{[]string{"FOO-BAR=x OK=1 =y 5X=1"}, []string{"OK=1"}},
		{[]string{`OK=1`, `A=\d B=2`}, []string{"OK=1"}}, // a syntax error ignores the rest of the line
		{[]string{`P=50%%`}, []string{"P=50%"}},
	}
	for _, tc := range cases {
		s := &service{}
		for _, l := range tc.lines {
			require.NoError(t, s.applyEnvironment(l))
		}
		assert.Equal(t, sorted(tc.want), sorted(s.Environment), tc.lines)
	}
	s := &service{}
	assert.ErrorIs(t, s.applyEnvironment("HOST=%H"), errNotSimulated)
}

func TestJoinContinuations(t *testing.T) {
	for in, want := range map[string]string{
		"a b":               "a b",
		"a \\\n  b":         "a    b",
		"a\\\nb\\\nc":       "a b c",
		"a \\\n":            "a",
		"/bin/true \\\nx\n": "/bin/true  x",
	} {
		got, err := joinContinuations(in)
		require.NoError(t, err)
		assert.Equal(t, want, got, "%q", in)
	}
	_, err := joinContinuations("a \\\n# comment")
	assert.ErrorIs(t, err, errNotSimulated)
}

func TestCunescapeOne(t *testing.T) {
	word, _, _, err := extractFirstWord(`\x41\101\u00e9\U0001F600\s\n\\`, extractCUnescape)
	require.NoError(t, err)
	assert.Equal(t, "AAé😀 \n\\", word)
	for _, bad := range []string{`\x00`, `\000`, `\u0000`, `\uD800`, `\ufffe`, `\400`, `\q`} {
		_, _, _, err := extractFirstWord(bad, extractCUnescape)
		assert.ErrorIs(t, err, errBadEscape, bad)
	}
}

func TestPresetLine(t *testing.T) {
	for line, want := range map[string][2]string{
		"enable kubeadm.service":          {"enable", "kubeadm.service"},
		"enable getty@.service tty1 tty2": {"enable", "getty@.service"},
		"disable  kube*":                  {"disable", "kube*"},
		"ignore *":                        {"ignore", "*"},
		"enablekubeadm.service":           {"", ""},
		"enable":                          {"", ""},
		"mask kubeadm.service":            {"", ""},
	} {
		action, pattern, _ := parsePresetLine(line)
		assert.Equal(t, want, [2]string{action, pattern}, line)
	}
	assert.True(t, presetMatch("kube*", "kubeadm.service"))
	assert.True(t, presetMatch("kubeadm.serv[a-z]ce", "kubeadm.service"))
	assert.False(t, presetMatch("kube\\*", "kubeadm.service"))
	assert.False(t, presetMatch("*.socket", "kubeadm.service"))
}
