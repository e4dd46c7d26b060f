package nodelayout

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
)

// sha256Hex is a SHA-256 digest as the release layout and the bakery publish it.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// DigestError says that something downloaded does not match its published SHA-256, or that no
// digest was published for it: the update (or first boot) stops before anything runs it.
type DigestError struct {
	Name string
	// Why: the digests differ (Want), or where the published digest was missing.
	Why string
}

func (e *DigestError) Error() string {
	return fmt.Sprintf("%s does not match its published SHA-256 (%s)", e.Name, e.Why)
}

// DigestInList is name's digest in a digest list of the SHA256SUMS form ("<hex>  <name>", or
// "<hex> *<name>" for a binary-mode entry).
func DigestInList(list []byte, name string) (string, error) {
	s := bufio.NewScanner(bytes.NewReader(list))
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) == 2 && (fields[1] == name || fields[1] == "*"+name) && sha256Hex.MatchString(fields[0]) {
			return fields[0], nil
		}
	}
	return "", &DigestError{Name: name, Why: "the digest list has no entry for it"}
}

// DigestInFile is the digest a release's .sha256 file holds (its first field).
func DigestInFile(data []byte, name string) (string, error) {
	fields := strings.Fields(string(data))
	if len(fields) == 0 || !sha256Hex.MatchString(fields[0]) {
		return "", &DigestError{Name: name, Why: name + ".sha256 holds no SHA-256 digest"}
	}
	return fields[0], nil
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
