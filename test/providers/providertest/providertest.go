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

// Package providertest is what the provider-code checks of test/providers/{aws,azure,gcp,openstack}
// share: cabpi's real output (the cabpi binary), the data Secret as cabpi writes it, byte
// comparisons that never print the data, and one kube-apiserver (envtest) per test package. It is
// a module of its own that the four modules replace in from ../providertest: each of them pins its own
// Cluster API and controller-runtime (aws, gcp and openstack the same ones, so that a cold build
// compiles them once: testenv's TestProviderModulesShareBuilds), and this module asks only for the
// oldest of them (CAPZ's), so that each module's own versions win.
package providertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// ExamplesDir holds the IgnitionConfig(Template) examples the tests render, relative to this
// package (go test runs in the package directory).
const ExamplesDir = "../../../docs/examples"

// KubernetesVersion is the version every example is rendered for (the kubeadm API it selects is
// beside the point here: only the bytes matter): hack/versions.env's KUBERNETES_VERSION, its one
// home, which make hands these tests as CABPI_KUBERNETES_VERSION. Main refuses to run without it.
var KubernetesVersion = os.Getenv("CABPI_KUBERNETES_VERSION")

// Example is one cabpi input (a file of docs/examples, or a generated worker of Bytes bytes)
// and the Machine it is for.
type Example struct {
	File, Role   string
	ControlPlane bool
	// Bytes, when not 0, makes the example a generated Flatcar worker whose data is exactly Bytes
	// bytes (OverLimit); File is then only its name.
	Bytes int
}

// Name names the example in subtests.
func (e Example) Name() string {
	if e.Bytes != 0 {
		return fmt.Sprintf("%s (%d bytes)", e.File, e.Bytes)
	}
	return e.File
}

// OverLimit is a worker whose data is one byte over limit: a file of random bytes, which no
// compression shrinks, so cabpi can neither gzip nor wrap it under the limit. It shows what the
// provider does with data over its limit (hands it on whole) and that cabpi reports it over the
// limit before the provider gets it (RequireLimitReported).
func OverLimit(limit int) Example {
	return Example{File: "over-the-limit", Role: "worker", Bytes: limit + 1}
}

// Render renders an example for platform: a docs/examples file with RenderCabpi, a generated one
// at its size.
func Render(t *testing.T, ex Example, platform string) Rendered {
	t.Helper()
	if ex.Bytes == 0 {
		return RenderCabpi(t, ex.File, ex.Role, platform)
	}
	return renderSized(t, ex.Role, platform, ex.Bytes)
}

// Examples are the inputs every provider check renders: a worker of each variant (Flatcar with
// its Kubernetes sysext, Fedora CoreOS), a control plane's kubeadm init, and the cloud's own
// example (a node named from its metadata) when there is one.
func Examples(cloudExample ...string) []Example {
	var out []Example
	for _, f := range cloudExample {
		out = append(out, Example{File: f, Role: "worker"})
	}
	return append(out,
		Example{File: "fcos-worker.yaml", Role: "worker"},
		Example{File: "flatcar-kubernetes-sysext.yaml", Role: "worker"},
		Example{File: "control-plane.yaml", Role: "init", ControlPlane: true},
	)
}

// Rendered is what cabpi puts into a data Secret for one example.
type Rendered struct {
	// Data is the Secret's value: the Ignition JSON exactly as cabpi stores it.
	Data []byte
	// Report is cabpi's size report (stderr), for failure messages.
	Report string
}

var sizeLine = regexp.MustCompile(`rendered Ignition \S+ for \S+: (\d+) bytes`)

// RenderCabpi runs `cabpi render` (the binary make builds from the repository root) on an
// example, so the data under test is cabpi's real output, not a fixture that could drift.
// render prints the data indented for reading; the Secret holds it compact, so the output is
// compacted and its length checked against the byte count cabpi reports for the Secret.
func RenderCabpi(t *testing.T, example, role, platform string) Rendered {
	t.Helper()
	return renderFile(t, filepath.Join(ExamplesDir, example), role, platform)
}

// renderFile is RenderCabpi of any file.
func renderFile(t *testing.T, file, role, platform string) Rendered {
	t.Helper()
	bin := os.Getenv("CABPI_BIN")
	if bin == "" {
		t.Fatal("CABPI_BIN is not set: these tests need the cabpi binary; run them through `make test` (or `make test-providers`), which builds it")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "render", "-f", file, "--role", role, "--platform", platform, "--kubernetes-version", KubernetesVersion)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("cabpi render -f %s --role %s --platform %s: %v\n%s", file, role, platform, err, stderr.String())
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, stdout.Bytes()); err != nil {
		t.Fatalf("cabpi render -f %s printed no JSON: %v", file, err)
	}
	m := sizeLine.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("cabpi render -f %s: no size line in its report:\n%s", file, stderr.String())
	}
	if n, _ := strconv.Atoi(m[1]); n != compact.Len() {
		t.Fatalf("cabpi render -f %s: reports %d bytes, the compacted output is %d: the data under test would not be the Secret's", file, n, compact.Len())
	}
	return Rendered{Data: compact.Bytes(), Report: strings.TrimSpace(stderr.String())}
}

// paddedConfig is the IgnitionConfig of a sized example: a Flatcar worker with one file. JSON,
// which cabpi reads as YAML; the module does not import cabpi's API types (see the package
// comment), so only the fields used are here.
type paddedConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Variant string       `json:"variant"`
		Files   []paddedFile `json:"files"`
	} `json:"spec"`
}

type paddedFile struct {
	Path     string `json:"path"`
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
}

// renderSized renders a worker whose data is exactly size bytes. The file's random bytes (from a
// fixed seed, so every run has the same data) reach the data base64-encoded, 4 bytes for every 3;
// its path, one byte a character, makes up the rest. A few renders converge.
func renderSized(t *testing.T, role, platform string, size int) Rendered {
	t.Helper()
	random := rand.New(rand.NewPCG(28, 11))
	payload := make([]byte, size*3/4)
	for i := range payload {
		payload[i] = byte(random.Uint32())
	}
	n, pad := size*3/4-3*300, 0
	file := filepath.Join(t.TempDir(), "sized.json")
	for range 6 {
		if n < 0 || n > len(payload) || pad > 400 {
			break
		}
		var cfg paddedConfig
		cfg.APIVersion, cfg.Kind, cfg.Metadata.Name = "bootstrap.cluster.x-k8s.io/v1alpha1", "IgnitionConfig", "sized"
		cfg.Spec.Variant = "flatcar"
		cfg.Spec.Files = []paddedFile{{
			Path:     "/var/lib/cabpi-test/random" + strings.Repeat("x", pad),
			Encoding: "base64",
			Content:  base64.StdEncoding.EncodeToString(payload[:n]),
		}}
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatalf("marshalling the sized config: %v", err)
		}
		if err := os.WriteFile(file, b, 0o600); err != nil {
			t.Fatal(err)
		}
		out := renderFile(t, file, role, platform)
		delta := size - len(out.Data)
		if delta == 0 {
			return out
		}
		// Whole base64 quanta from the payload, the remainder (0 to 3) from the path.
		quanta := delta / 4
		if delta%4 < 0 {
			quanta--
		}
		n += 3 * quanta
		pad += delta - 4*quanta
	}
	t.Fatalf("could not render a worker of exactly %d bytes for platform %s", size, platform)
	return Rendered{}
}

var limitInReport = regexp.MustCompile(`(?m); platform [^\n]*, (?:limit (\d+)|no limit)$`)

// RequireLimitReported fails unless cabpi's report on out names limit as the platform's (the
// provider's own, which the caller knows from the provider) and warns that the data is over it
// exactly when received, what the instance gets, is over it: cabpi's account of the limit
// agrees with what the provider hands the instance.
func RequireLimitReported(t *testing.T, out Rendered, received, limit int) {
	t.Helper()
	m := limitInReport.FindStringSubmatch(out.Report)
	if m == nil {
		t.Fatalf("cabpi's report names no limit:\n%s", out.Report)
	}
	if got, _ := strconv.Atoi(m[1]); got != limit {
		t.Fatalf("cabpi renders against a limit of %d bytes (0: none), the provider's is %d:\n%s", got, limit, out.Report)
	}
	over := received > limit
	warned := strings.Contains(out.Report, fmt.Sprintf("over the %d-byte user-data limit", limit))
	if over != warned {
		t.Fatalf("the instance receives %d bytes (limit %d, over: %t), cabpi warned: %t:\n%s", received, limit, over, warned, out.Report)
	}
}

// Digest names data in failure messages: the bootstrap data holds credentials (placeholders
// from render, but real ones in a cluster), so no test prints it.
func Digest(b []byte) string {
	return fmt.Sprintf("%d bytes, sha256 %x", len(b), sha256.Sum256(b))
}

// RequireSameBytes fails unless got is want byte for byte, saying where they part without
// printing either.
func RequireSameBytes(t *testing.T, want, got []byte, what string) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	t.Fatalf("%s is not cabpi's data: want %s, got %s, first difference at byte %d", what, Digest(want), Digest(got), i)
}

// RequireBase64Of fails unless b64 is want, base64-encoded (standard alphabet, padded), without
// printing either.
func RequireBase64Of(t *testing.T, want []byte, b64, what string) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("%s is not base64: %v", what, err)
	}
	RequireSameBytes(t, want, raw, what+", decoded")
}

// DataSecret is the data Secret as cabpi's controller writes it (controllers/secret.go): type
// cluster.x-k8s.io/secret, the cluster-name label, value, and format ("ignition" as cabpi writes
// it; another value, or "" for no format key, to show what a provider makes of it).
func DataSecret(namespace, name, clusterName string, value []byte, format string) *corev1.Secret {
	data := map[string][]byte{"value": value}
	if format != "" {
		data["format"] = []byte(format)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: namespace,
			Labels:    map[string]string{"cluster.x-k8s.io/cluster-name": clusterName},
		},
		Type: "cluster.x-k8s.io/secret",
		Data: data,
	}
}

// moduleDir is where the Go toolchain keeps a module this test module depends on, to load the
// provider's own CRDs from the version the tests compile against.
func moduleDir(mod string) (string, error) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", mod).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("go list -m %s: %w: %s", mod, err, ee.Stderr)
		}
		return "", fmt.Errorf("go list -m %s: %w", mod, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return "", fmt.Errorf("go list -m %s: module not downloaded", mod)
	}
	return dir, nil
}

// apiServer is one kube-apiserver and etcd (envtest) for the package, started by the first
// test that needs it and stopped by TestMain.
var apiServer struct {
	once   sync.Once
	env    *envtest.Environment
	client client.Client
	err    error
}

// KubeClient starts the package's API server once, with the CRDs crdFiles names (each
// "module:path inside the module"), and returns a client whose scheme is scheme.
func KubeClient(t *testing.T, scheme *runtime.Scheme, crdFiles ...string) client.Client {
	t.Helper()
	apiServer.once.Do(func() {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			apiServer.err = errors.New("KUBEBUILDER_ASSETS is not set: run these tests through `make test` (or `make test-providers`), which points it at kube-apiserver and etcd")
			return
		}
		// The providers log through klog and controller-runtime; the tests say what they need.
		klog.SetLogger(logr.Discard())
		ctrl.SetLogger(logr.Discard())
		var paths []string
		for _, f := range crdFiles {
			mod, rel, _ := strings.Cut(f, ":")
			dir, err := moduleDir(mod)
			if err != nil {
				apiServer.err = err
				return
			}
			paths = append(paths, filepath.Join(dir, rel))
		}
		env := &envtest.Environment{
			CRDInstallOptions:     envtest.CRDInstallOptions{Paths: paths, Scheme: scheme},
			ErrorIfCRDPathMissing: true,
		}
		// Loopback only: the API server otherwise advertises the host's default-route address,
		// and fails to start where there is none (a network namespace with loopback alone).
		env.ControlPlane.GetAPIServer().Configure().Set("advertise-address", "127.0.0.1")
		cfg, err := env.Start()
		if err != nil {
			apiServer.err = fmt.Errorf("starting kube-apiserver and etcd (envtest): %w", err)
			return
		}
		apiServer.env = env
		apiServer.client, apiServer.err = client.New(cfg, client.Options{Scheme: scheme})
	})
	if apiServer.err != nil {
		t.Fatal(apiServer.err)
	}
	return apiServer.client
}

// NewNamespace gives each test its own namespace, so table rows cannot see each other's objects.
func NewNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "providers-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating a namespace: %v", err)
	}
	return ns.Name
}

// Main runs a test package's tests and stops its API server: each package's TestMain is
// os.Exit(providertest.Main(m)).
func Main(m *testing.M) int {
	if KubernetesVersion == "" {
		fmt.Fprintln(os.Stderr, "CABPI_KUBERNETES_VERSION is not set: run these tests through `make test` (or `make test-providers`), which sets it from hack/versions.env")
		return 1
	}
	code := m.Run()
	if apiServer.env != nil {
		if err := apiServer.env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	return code
}
