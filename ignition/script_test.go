package ignition

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Complete commands are accepted, whatever their shape.
func TestCompleteCommandAccepts(t *testing.T) {
	for _, command := range []string{
		"echo ok",
		"echo a; echo b",
		`echo a \\`,      // an escaped backslash, not a line continuation
		"echo a \\\n  b", // a continuation inside the command
		"cat > /etc/x <<EOF\nhello\nEOF",
		"if true; then\n  echo x\nfi",
		`echo "it's"`,
		"",
		"# only a comment",
	} {
		assert.NoError(t, completeCommand(command), "%q", command)
	}
}

// The user's commands sit between the fixed parts; the kubeadm step keeps a line of its own
// (CAPD finds it by its text), after an empty line that guards it from the last pre-command.
func TestKubeadmScriptLayout(t *testing.T) {
	script, err := kubeadmScript(RoleWorkerJoin, []string{"echo pre"}, []string{"echo post"})
	require.NoError(t, err)
	assert.Contains(t, script, "\necho pre\n\nkubeadm join --config /etc/kubeadm.yml\n")
	assert.True(t, strings.HasSuffix(script, "\necho post\n"), script)

	script, err = kubeadmScript(RoleInit, nil, nil)
	require.NoError(t, err)
	assert.Contains(t, script, "set -euo pipefail\nkubeadm init --config /etc/kubeadm.yml\n")
}

// An apostrophe in a comment of the fixed scripts would close a quote a user's command left
// open, and let the script run on past the kubeadm step.
func TestScriptCommentsHaveNoApostrophes(t *testing.T) {
	files, err := fs.Glob(scripts, "scripts/*.sh")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, name := range files {
		data, err := scripts.ReadFile(name)
		require.NoError(t, err)
		for i, line := range strings.Split(string(data), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				assert.NotContains(t, line, "'", "%s:%d", name, i+1)
			}
		}
	}
}
