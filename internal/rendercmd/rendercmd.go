// Package rendercmd is `cabpi render`: an offline preview of the Ignition an IgnitionConfig or
// IgnitionConfigTemplate produces, with placeholder credentials, using the controller's renderer.
package rendercmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/yaml"

	bootstrapkubeadmv1 "sigs.k8s.io/cluster-api/api/bootstrap/kubeadm/v1beta2"
	"sigs.k8s.io/cluster-api/bootstrap/kubeadm/pkg/types/upstream"
	"sigs.k8s.io/cluster-api/util/secret"

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// Placeholders stand in for what only a cluster has. They are valid in form, so the output
// passes the same validation the controller's does, and obviously fake.
const (
	PlaceholderToken    = "abcdef.0123456789abcdef"
	PlaceholderEndpoint = "control-plane.invalid:6443"
	PlaceholderCAHash   = "sha256:0000000000000000000000000000000000000000000000000000000000000000"
	PlaceholderCACert   = "placeholder: the cluster CA certificate\n"
	PlaceholderCluster  = "cluster"
	DefaultVersion      = "v1.34.0"
)

// Options are the command's flags.
type Options struct {
	File              string
	KubernetesVersion string
	Role              string
	Butane            bool
}

// Main runs `cabpi render` with args; the rendered config goes to stdout, the size report to stderr.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	opts := Options{}
	fs := pflag.NewFlagSet("render", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVarP(&opts.File, "file", "f", "", "IgnitionConfig or IgnitionConfigTemplate YAML ('-' reads stdin)")
	fs.StringVar(&opts.KubernetesVersion, "kubernetes-version", DefaultVersion, "Kubernetes version of the node (selects the kubeadm API version)")
	fs.StringVar(&opts.Role, "role", string(ignition.RoleWorkerJoin), "worker, init or control-plane")
	fs.BoolVar(&opts.Butane, "butane", false, "print the rendered config as a Butane document instead of Ignition JSON")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: cabpi render -f config.yaml [--kubernetes-version v1.34.0] [--role worker|init|control-plane] [--butane]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if opts.File == "" {
		fs.Usage()
		return fmt.Errorf("-f is required")
	}
	doc, err := readInput(opts.File, stdin)
	if err != nil {
		return err
	}
	spec, err := SpecFromYAML(doc)
	if err != nil {
		return err
	}
	out, err := Render(context.Background(), spec, ignition.Role(opts.Role), opts.KubernetesVersion, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "rendered Ignition %s for %s: %d bytes, %d gzipped\n",
		out.SpecVersion, configinput.Variant(spec), out.Size.Bytes, out.Size.GzipBytes)
	if opts.Butane {
		b, err := ToButane(out.Data, configinput.Variant(spec))
		if err != nil {
			return err
		}
		_, err = stdout.Write(b)
		return err
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, out.Data, "", "  "); err != nil {
		return fmt.Errorf("formatting the rendered config: %w", err)
	}
	pretty.WriteByte('\n')
	_, err = stdout.Write(pretty.Bytes())
	return err
}

func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" {
		return io.ReadAll(stdin)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return data, nil
}

// SpecFromYAML reads the spec of an IgnitionConfig or the template spec of an IgnitionConfigTemplate.
func SpecFromYAML(doc []byte) (*bootstrapv1.IgnitionConfigSpec, error) {
	var meta struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &meta); err != nil {
		return nil, fmt.Errorf("reading the YAML: %w", err)
	}
	switch meta.Kind {
	case "IgnitionConfig":
		c := &bootstrapv1.IgnitionConfig{}
		if err := yaml.UnmarshalStrict(doc, c); err != nil {
			return nil, fmt.Errorf("reading the IgnitionConfig: %w", err)
		}
		return &c.Spec, nil
	case "IgnitionConfigTemplate":
		t := &bootstrapv1.IgnitionConfigTemplate{}
		if err := yaml.UnmarshalStrict(doc, t); err != nil {
			return nil, fmt.Errorf("reading the IgnitionConfigTemplate: %w", err)
		}
		return &t.Spec.Template.Spec, nil
	}
	return nil, fmt.Errorf("kind %q is neither IgnitionConfig nor IgnitionConfigTemplate", meta.Kind)
}

// Render renders spec for role the way the controller would, with placeholder credentials.
// Warnings about placeholders go to warn.
func Render(ctx context.Context, spec *bootstrapv1.IgnitionConfigSpec, role ignition.Role, version string, warn io.Writer) (ignition.Output, error) {
	in, err := configinput.FromSpec(ctx, spec, role, version, offlineResolver{warn: warn})
	if err != nil {
		return ignition.Output{}, err
	}
	switch role {
	case ignition.RoleInit:
		cc := spec.ClusterConfiguration.DeepCopy()
		in.ClusterConfiguration = cc
		in.InitConfiguration = spec.InitConfiguration.DeepCopy()
		in.ClusterData = &upstream.AdditionalData{ClusterName: ptr(PlaceholderCluster), KubernetesVersion: ptr(version)}
		if cc.ControlPlaneEndpoint == "" {
			cc.ControlPlaneEndpoint = PlaceholderEndpoint
		}
		in.Certificates = configinput.PlaceholderCertificates(secret.NewCertificatesForInitialControlPlane(cc))
	case ignition.RoleControlPlaneJoin, ignition.RoleWorkerJoin:
		join := spec.JoinConfiguration.DeepCopy()
		if role == ignition.RoleControlPlaneJoin {
			in.Certificates = configinput.PlaceholderCertificates(secret.NewControlPlaneJoinCerts(&spec.ClusterConfiguration))
			if join.ControlPlane == nil {
				join.ControlPlane = &bootstrapkubeadmv1.JoinControlPlane{}
			}
		} else {
			join.ControlPlane = nil
		}
		if join.Discovery.File.IsDefined() {
			configinput.DefaultDiscoveryKubeconfig(join, PlaceholderEndpoint, []byte(PlaceholderCACert))
		} else {
			bt := &join.Discovery.BootstrapToken
			if bt.APIServerEndpoint == "" {
				bt.APIServerEndpoint = PlaceholderEndpoint
			}
			if bt.Token == "" {
				bt.Token = PlaceholderToken
			}
			if len(bt.CACertHashes) == 0 {
				bt.CACertHashes = []string{PlaceholderCAHash}
			}
		}
		in.JoinConfiguration = join
	default:
		return ignition.Output{}, fmt.Errorf("--role %q: use worker, init or control-plane", role)
	}
	return ignition.Render(in)
}

// offlineResolver has no cluster: a file's Secret content becomes a placeholder; a Butane
// document from a Secret or ConfigMap cannot be previewed and is an error.
type offlineResolver struct{ warn io.Writer }

func (o offlineResolver) SecretKey(_ context.Context, field string, ref bootstrapv1.KeyReference) ([]byte, error) {
	if field == "spec.butane.contentFrom.secret" {
		return nil, fmt.Errorf("%s: render works offline and cannot read Secret %q; put the Butane inline to preview it", field, ref.Name)
	}
	fmt.Fprintf(o.warn, "warning: %s: Secret %s key %s replaced by a placeholder\n", field, ref.Name, ref.Key)
	return []byte(fmt.Sprintf("placeholder: Secret %s key %s\n", ref.Name, ref.Key)), nil
}

func (o offlineResolver) ConfigMapKey(_ context.Context, field string, ref bootstrapv1.KeyReference) (string, error) {
	return "", fmt.Errorf("%s: render works offline and cannot read ConfigMap %q; put the Butane inline to preview it", field, ref.Name)
}

func ptr[T any](v T) *T { return &v }
