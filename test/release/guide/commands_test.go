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

package guide_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// blockTimeout bounds one command block (the demo starts an API server and Cluster API).
const blockTimeout = 3 * time.Minute

// TestGuideCommands runs the runnable blocks of each page in order, in one working directory per
// page (so a page may write a file in one block and read it in the next), and checks each exit
// status and shown output.
func TestGuideCommands(t *testing.T) {
	ran := 0
	for _, page := range guidePages(t) {
		blocks := mustParse(t, page)
		if !hasRunnable(blocks) {
			continue
		}
		t.Run(filepath.Base(page), func(t *testing.T) {
			work := newWorkDir(t)
			for i, b := range blocks {
				if b.marker != "test" {
					continue
				}
				ran++
				var shown *block
				if i+1 < len(blocks) && blocks[i+1].marker == "output" {
					shown = &blocks[i+1]
				}
				if !t.Run(fmt.Sprintf("line%d", b.line), func(t *testing.T) { checkBlock(t, work, b, shown) }) {
					return // the blocks after it may depend on it
				}
			}
		})
	}
	require.NotZero(t, ran, "no runnable block in docs/guide")
}

func hasRunnable(blocks []block) bool {
	for _, b := range blocks {
		if b.marker == "test" {
			return true
		}
	}
	return false
}

func checkBlock(t *testing.T, work workDir, b block, shown *block) {
	want, err := expectedExit(b)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(t.Context(), blockTimeout)
	defer cancel()
	out, code, err := runBlock(ctx, work, b)
	require.NoError(t, err, "%s", b)
	require.Equal(t, want, code, "%s: exit status of\n%s\noutput:\n%s", b, b.body, out)
	if shown != nil {
		missing := matchOutput(shown.body, out)
		require.Empty(t, missing, "%s: the output shown at %s is not what the command prints; missing line %q in:\n%s", b, shown, missing, out)
	}
}

// workDir is where a page's blocks run: a copy of the repository's docs/examples and templates,
// as the guide's commands run from the repository root, and a home of its own.
type workDir struct {
	dir string
	env []string
}

func newWorkDir(t *testing.T) workDir {
	t.Helper()
	base := t.TempDir()
	w := workDir{dir: filepath.Join(base, "repo")}
	for _, d := range []string{"docs/examples", "templates"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(w.dir, d)), 0o755))
		require.NoError(t, os.CopyFS(filepath.Join(w.dir, d), os.DirFS(filepath.Join(repoRoot, d))))
	}
	home := filepath.Join(base, "home")
	require.NoError(t, os.MkdirAll(home, 0o755))
	// A clean environment: no kubeconfig (there is no management cluster), clusterctl's
	// configuration in the temporary home, no version check, and an unreachable proxy, so a
	// command that would reach the network fails instead of depending on it.
	w.env = []string{
		"PATH=" + binDir + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"TMPDIR=" + base,
		"LANG=C.UTF-8",
		"CLUSTERCTL_DISABLE_VERSIONCHECK=true",
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=",
	}
	return w
}

// runBlock runs a block with bash -e -o pipefail and returns its combined output and exit status.
func runBlock(ctx context.Context, w workDir, b block) (string, int, error) {
	var cmd *exec.Cmd
	if b.arg == "demo" {
		var err error
		if cmd, err = demoCommand(ctx, w, b); err != nil {
			return "", 0, err
		}
	} else {
		script := filepath.Join(filepath.Dir(w.dir), fmt.Sprintf("block-%d.sh", b.line))
		if err := os.WriteFile(script, []byte(b.body), 0o600); err != nil {
			return "", 0, err
		}
		cmd = exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", script)
		cmd.Env = w.env
	}
	cmd.Dir = w.dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return string(out), 0, fmt.Errorf("did not finish within %s: %w", blockTimeout, ctx.Err())
	case errors.As(err, &exit):
		return string(out), exit.ExitCode(), nil
	case err != nil:
		return string(out), 0, err
	}
	return string(out), 0, nil
}

// demoBlock is what a <!-- test demo --> block may hold.
var demoBlock = regexp.MustCompile(`^(?:VARIANT=(flatcar|fcos)\s+)?make demo$`)

// demoCommand stands in for `make demo`: its set-up (apt, building the tools) is what make test
// has done already, and then it runs hack/demo with --out _demo and the tools' paths.
func demoCommand(ctx context.Context, w workDir, b block) (*exec.Cmd, error) {
	m := demoBlock.FindStringSubmatch(strings.TrimSpace(b.body))
	if m == nil {
		return nil, fmt.Errorf("%s: a <!-- test demo --> block is `make demo` or `VARIANT=fcos make demo`, not %q", b, b.body)
	}
	variant := m[1]
	if variant == "" {
		variant = "flatcar"
	}
	cmd := exec.CommandContext(ctx, demoBin, "--variant", variant, "--out", "_demo")
	// The tools make demo builds (make test has built them), and Cluster API's module, whose
	// CRDs the demo installs, found as this test found it (the temporary HOME has no module cache).
	cmd.Env = append(w.env,
		"KUBEBUILDER_ASSETS="+os.Getenv("KUBEBUILDER_ASSETS"),
		"CABPI_IGNITION_APPLY="+os.Getenv("CABPI_IGNITION_APPLY"),
		"CABPI_CAPI_DIR="+env.CAPIDir)
	return cmd, nil
}

// guidePages are the Markdown pages of docs/guide.
func guidePages(t *testing.T) []string {
	t.Helper()
	pages, err := filepath.Glob(filepath.Join(repoRoot, "docs", "guide", "*.md"))
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	return pages
}

func mustParse(t *testing.T, page string) []block {
	t.Helper()
	blocks, err := parsePage(page)
	require.NoError(t, err)
	for i := range blocks {
		blocks[i].page = rel(page)
	}
	return blocks
}

func rel(path string) string {
	if r, err := filepath.Rel(repoRoot, path); err == nil {
		return r
	}
	return path
}
