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

	bootstrapv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/configinput"
)

// DefaultVersion is the Kubernetes version rendered for when none is given.
const DefaultVersion = configinput.DefaultKubernetesVersion

// Options are the command's flags.
type Options struct {
	File              string
	KubernetesVersion string
	Role              string
	Butane            bool
	// Platform overrides spec.platform ("" keeps it).
	Platform string
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
	fs.StringVar(&opts.Platform, "platform", "", "platform the data is for, as spec.platform (aws, azure, gcp, hetzner, openstack, vsphere, docker); "+
		"sets the user-data limit and whether the data may be compressed; default: the file's spec.platform, else none known (no limit, compressed)")
	doc, err := ParseArgs(fs, args, "Usage: cabpi render -f config.yaml [--kubernetes-version v1.34.0] [--role worker|init|control-plane] [--platform aws|...|docker] [--butane]",
		&opts.File, stdin)
	if err != nil {
		return err
	}
	spec, err := SpecFromYAML(doc)
	if err != nil {
		return err
	}
	if opts.Platform != "" {
		if spec.Platform, err = configinput.ParsePlatform(opts.Platform); err != nil {
			return fmt.Errorf("--platform: %w", err)
		}
	}
	out, err := Render(context.Background(), spec, ignition.Role(opts.Role), opts.KubernetesVersion, stderr)
	if err != nil {
		return err
	}
	printSize(stderr, out, spec)
	if opts.Butane {
		// The Butane view is for reading: a wrapper shows the config it carries.
		config, err := ignition.Unwrap(out.Data)
		if err != nil {
			return err
		}
		b, err := ToButane(config, configinput.Variant(spec))
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

// printSize reports what the data weighs against the platform's limit, and what to do when it
// is over.
func printSize(w io.Writer, out ignition.Output, spec *bootstrapv1.IgnitionConfigSpec) {
	platform := configinput.EffectivePlatform(spec, "")
	name, limit := string(platform), "no limit"
	if name == "" {
		name = "not known"
	}
	if out.Size.Limit > 0 {
		limit = fmt.Sprintf("limit %d", out.Size.Limit)
	}
	wrapped := ""
	if out.Size.Wrapped {
		wrapped = fmt.Sprintf(", wrapped gzipped (the config is %d bytes)", out.Size.UnwrappedBytes)
	}
	compressed := "uncompressed"
	if out.Size.Compressed {
		compressed = "compressed where smaller"
	}
	fmt.Fprintf(w, "rendered Ignition %s for %s: %d bytes (%d gzipped), %s%s; platform %s, %s\n",
		out.SpecVersion, configinput.Variant(spec), out.Size.Bytes, out.Size.GzipBytes, compressed, wrapped, name, limit)
	if msg := configinput.OverPlatformLimit(out, platform); msg != "" {
		fmt.Fprintf(w, "warning: %s\n", msg)
	}
	for _, warning := range out.Warnings {
		fmt.Fprintf(w, "warning: spec.%s\n", warning)
	}
}

// ParseArgs parses a command's args with fs, whose usage is the line usage followed by the
// flags, and reads the document its required -f flag (bound to file) names.
func ParseArgs(fs *pflag.FlagSet, args []string, usage string, file *string, stdin io.Reader) ([]byte, error) {
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *file == "" {
		fs.Usage()
		return nil, fmt.Errorf("-f is required")
	}
	return readInput(*file, stdin)
}

// readInput reads the file a command's -f names; "-" reads stdin.
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
	switch role {
	case ignition.RoleInit, ignition.RoleControlPlaneJoin, ignition.RoleWorkerJoin:
	default:
		return ignition.Output{}, fmt.Errorf("--role %q: use worker, init or control-plane", role)
	}
	in, err := configinput.Offline(ctx, spec, role, version, configinput.OfflineResolver{Warn: warn})
	if err != nil {
		return ignition.Output{}, err
	}
	return ignition.Render(in)
}
