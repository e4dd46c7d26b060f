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

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// instruction is one Dockerfile instruction: its keyword (upper case) and the rest of its line,
// continuation lines joined.
type instruction struct {
	keyword, args string
}

// stage is the instructions of one FROM.
type stage struct {
	from         string
	instructions []instruction
}

// parseDockerfile reads the Dockerfile's stages (comments dropped, continuations joined).
func parseDockerfile(t *testing.T, data string) []stage {
	t.Helper()
	var stages []stage
	var logical []string
	var cur strings.Builder
	for _, line := range strings.Split(data, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if rest, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cur.WriteString(rest + " ")
			continue
		}
		cur.WriteString(trimmed)
		logical = append(logical, cur.String())
		cur.Reset()
	}
	for _, l := range logical {
		keyword, args, _ := strings.Cut(l, " ")
		in := instruction{strings.ToUpper(keyword), strings.TrimSpace(args)}
		if in.keyword == "FROM" {
			stages = append(stages, stage{from: in.args})
			continue
		}
		if len(stages) == 0 {
			continue // ARGs before the first FROM
		}
		stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, in)
	}
	return stages
}

func (s stage) all(keyword string) []string {
	var out []string
	for _, in := range s.instructions {
		if in.keyword == keyword {
			out = append(out, in.args)
		}
	}
	return out
}

// words splits a shell command line into words: blanks separate, double and single quotes
// group (enough for the Dockerfile's RUN lines, which use nothing else).
func words(line string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

// TestDockerfileAgrees keeps the Dockerfile, for users who build with docker, and this
// daemonless build in agreement: the same build environment and flags, the binary at the same
// place, the same user and entrypoint, the Go version of go.mod.
func TestDockerfileAgrees(t *testing.T) {
	root := filepath.Join("..", "..")
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	require.NoError(t, err)
	stages := parseDockerfile(t, string(data))
	require.Len(t, stages, 2, "a build stage and the final stage")
	buildStage, final := stages[0], stages[1]

	// The build stage: its environment has ours, and its go build has our flags and output.
	buildName := strings.Fields(buildStage.from)[len(strings.Fields(buildStage.from))-1]
	env := map[string]string{}
	for _, e := range buildStage.all("ENV") {
		for _, kv := range words(e) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
	}
	for _, kv := range buildEnv {
		k, v, _ := strings.Cut(kv, "=")
		assert.Equal(t, v, env[k], "the Dockerfile's build stage sets %s", k)
	}
	var goBuild []string
	for _, run := range buildStage.all("RUN") {
		w := words(run)
		for i := 0; i+1 < len(w); i++ {
			if w[i] == "go" && w[i+1] == "build" {
				goBuild = w[i+2:]
			}
		}
	}
	require.NotEmpty(t, goBuild, "the build stage runs go build")
	out := ""
	var flags []string
	for i := 0; i < len(goBuild); i++ {
		if goBuild[i] == "-o" && i+1 < len(goBuild) {
			out = goBuild[i+1]
			i++
			continue
		}
		flags = append(flags, goBuild[i])
	}
	assert.Equal(t, append(append([]string{}, buildFlags...), "."), flags, "go build's flags and package")

	// The final stage: the built binary at our place, our user and entrypoint.
	copies := final.all("COPY")
	require.Len(t, copies, 1)
	assert.Equal(t, []string{"--from=" + buildName, out, binaryPath}, words(copies[0]), "the binary goes to %s", binaryPath)
	users := final.all("USER")
	require.Len(t, users, 1)
	assert.Equal(t, imageUser, users[0])
	entrypoints := final.all("ENTRYPOINT")
	require.Len(t, entrypoints, 1)
	var entrypoint []string
	require.NoError(t, json.Unmarshal([]byte(entrypoints[0]), &entrypoint), "the exec form")
	assert.Equal(t, []string{binaryPath}, entrypoint)

	// The Go of the build stage is go.mod's.
	modData, err := os.ReadFile(filepath.Join(root, "go.mod"))
	require.NoError(t, err)
	goVersion := ""
	for _, line := range strings.Split(string(modData), "\n") {
		if v, ok := strings.CutPrefix(line, "go "); ok {
			goVersion = strings.Join(strings.SplitN(strings.TrimSpace(v), ".", 3)[:2], ".")
		}
	}
	require.NotEmpty(t, goVersion, "go.mod's go line")
	assert.Contains(t, string(data), "ARG GO_VERSION="+goVersion+"\n", "the Dockerfile builds with go.mod's Go %s", goVersion)
}

func TestWords(t *testing.T) {
	assert.Equal(t, []string{"GOOS=linux", "go", "build", "-ldflags", "-s -w", "-o", "/out/manager", "."},
		words(`GOOS=linux go build -ldflags "-s -w" -o /out/manager .`))
	assert.Equal(t, []string{"a", "", "b c"}, words(`a "" 'b c'`))
}
