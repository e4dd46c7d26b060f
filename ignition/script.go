package ignition

import (
	"embed"
	"fmt"
	"strings"
)

// The fixed shell of /etc/kubeadm.sh lives in scripts/*.sh so it can be read (and linted) as
// shell; only the user's commands are spliced in between.
//
//go:embed scripts/*.sh
var scripts embed.FS

// kubeadmScript composes /etc/kubeadm.sh: header, pre-kubeadm commands, the kubeadm step of the
// role, the success sentinel (which also removes /etc/kubeadm.yml), post-kubeadm commands. The
// kubeadm step stays a line of its own starting with `kubeadm init` or `kubeadm join`: CAPD's
// bootstrap hooks find it by that text.
func kubeadmScript(role Role, pre, post []string) (string, error) {
	step := "kubeadm-join.sh"
	if role == RoleInit {
		step = "kubeadm-init.sh"
	}
	var b strings.Builder
	for _, part := range []struct {
		file  string
		lines []string
	}{
		{file: "header.sh"},
		{lines: pre},
		{file: step},
		{file: "sentinel.sh"},
		{lines: post},
	} {
		if part.file != "" {
			data, err := scripts.ReadFile("scripts/" + part.file)
			if err != nil {
				return "", fmt.Errorf("reading embedded script %s: %w", part.file, err)
			}
			b.Write(data)
			continue
		}
		for _, line := range part.lines {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	return b.String(), nil
}
