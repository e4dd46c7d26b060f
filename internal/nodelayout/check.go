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

package nodelayout

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// sha256Hex is a SHA-256 digest in lowercase hex.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// IsSHA256 reports whether s is a SHA-256 digest in lowercase hex.
func IsSHA256(s string) bool { return sha256Hex.MatchString(s) }

// DigestError says that something downloaded does not match the SHA-256 it is pinned to, or
// that it is pinned to none: the update stops before anything runs it.
type DigestError struct {
	Name string
	// Why: the pinned digest the file does not match, or why there is none.
	Why string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("%s does not match its pinned SHA-256 (%s)", e.Name, e.Why)
}

// FileDigest is the SHA-256 of the file at path.
func FileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// VerifyFile checks that the file at path, published as name, has the digest want.
func VerifyFile(path, name, want string) error {
	got, err := FileDigest(path)
	if err != nil {
		return err
	}
	if got != want {
		return &DigestError{Name: name, Why: want}
	}
	return nil
}

// VersionError says that kubeadm or the kubelet is not the version the Machine has.
type VersionError struct{ Kubeadm, Kubelet, Want string }

func (e *VersionError) Error() string {
	return fmt.Sprintf("found kubeadm %s and kubelet %s, the Machine has %s", e.Kubeadm, e.Kubelet, e.Want)
}

// CheckVersions checks the outputs of `kubeadm version -o short` and `kubelet --version`
// against want: the node would otherwise run and report a version Cluster API did not ask for.
func CheckVersions(kubeadmOut, kubeletOut, want string) error {
	kubeadm := strings.TrimSpace(kubeadmOut)
	kubelet := strings.TrimPrefix(strings.TrimSpace(kubeletOut), "Kubernetes ")
	if kubeadm != want || kubelet != want {
		return &VersionError{Kubeadm: kubeadm, Kubelet: kubelet, Want: want}
	}
	return nil
}

// KubeletVersion reads `kubelet --version`'s output ("Kubernetes v1.34.4").
func KubeletVersion(out string) string {
	return strings.TrimPrefix(strings.TrimSpace(out), "Kubernetes ")
}

// KubectlVersion reads `kubectl version --client`'s output ("Client Version: v1.34.4").
func KubectlVersion(out string) string {
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Client Version: "); ok {
			return v
		}
	}
	return ""
}
