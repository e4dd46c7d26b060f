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

// Package render is `cabpi render`: an offline preview of the Ignition an IgnitionConfig or
// IgnitionConfigTemplate produces, with placeholder credentials, using the controller's renderer.
package render

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation/field"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/cmd/internal/cliinput"
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
	// Name selects the config in a file of several documents.
	Name string
	// Digests is a file with the digest list spec.kubernetes.digestsFrom names ("" stands in).
	Digests string
}

// Main runs `cabpi render` with args; the rendered config goes to stdout, the size report to stderr.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	opts := Options{}
	fs := pflag.NewFlagSet("render", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVarP(&opts.File, "file", "f", "", "IgnitionConfig or IgnitionConfigTemplate YAML ('-' reads stdin); may hold more documents, "+
		"e.g. the output of clusterctl generate cluster: then the config's owner and its infrastructure machine (template) in the file say how the data reaches the machine")
	fs.StringVar(&opts.Name, "name", "", "name of the IgnitionConfig or IgnitionConfigTemplate to render, when the file holds several")
	fs.StringVar(&opts.KubernetesVersion, "kubernetes-version", DefaultVersion, "Kubernetes version of the node (selects the kubeadm API version)")
	fs.StringVar(&opts.Role, "role", string(ignition.RoleWorkerJoin), "worker, init or control-plane")
	fs.StringVar(&opts.Digests, "digests", "", "file with the digest list spec.kubernetes.digestsFrom names (sha256sum's output in the mirror's root); "+
		"without it, a download with no digest in cabpi's catalogue is pinned to a stand-in")
	fs.BoolVar(&opts.Butane, "butane", false, "print the rendered config as a Butane document instead of Ignition JSON")
	fs.StringVar(&opts.Platform, "platform", "", "platform the data is for, as spec.platform (aws, azure, gcp, hetzner, openstack, vsphere, docker); "+
		"sets the user-data limit and whether the data may be compressed; default: the file's spec.platform, else none known (no limit, compressed)")
	data, err := cliinput.ParseArgs(fs, args, "Usage: cabpi render -f config.yaml [--name NAME] [--kubernetes-version v1.34.0] [--role worker|init|control-plane] [--platform aws|...|docker] [--digests FILE] [--butane]",
		&opts.File, stdin)
	if err != nil {
		return err
	}
	sel, err := selectConfig(data, opts.Name)
	if err != nil {
		return err
	}
	doc, err := configinput.ReadDocument(sel.config)
	if err != nil {
		return err
	}
	spec := doc.Spec
	if opts.Platform != "" {
		if spec.Platform, err = configinput.ParsePlatform(opts.Platform); err != nil {
			return fmt.Errorf("--platform: %w", err)
		}
	}
	role := ignition.Role(opts.Role)
	if !role.Known() {
		return fmt.Errorf("--role %q: use worker, init or control-plane", role)
	}
	res := configinput.OfflineResolver{Warn: stderr}
	if opts.Digests != "" {
		if spec.Kubernetes.DigestsFrom == nil {
			return fmt.Errorf("--digests: the config has no spec.kubernetes.digestsFrom to read them for")
		}
		if res.Digests, err = os.ReadFile(opts.Digests); err != nil {
			return fmt.Errorf("--digests: %w", err)
		}
	}
	out, err := configinput.RenderOfflineWith(context.Background(), spec, role, opts.KubernetesVersion, sel.delivery, res)
	if err != nil {
		return refused(doc, err)
	}
	printSize(stderr, out, spec, sel.delivery)
	printKubernetes(stderr, out, spec, opts.KubernetesVersion)
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

// printSize reports what the data weighs against the limit of the machine it is for, and what to
// do when it is over.
func printSize(w io.Writer, out ignition.Output, spec *cabpiv1.IgnitionConfigSpec, delivery configinput.Delivery) {
	platform := configinput.EffectivePlatform(spec, delivery.Kind)
	name, limit := string(platform), "no limit"
	if name == "" {
		name = "not known"
	}
	if delivery.Kind != "" {
		name += " (" + delivery.Object
		if delivery.Storage == configinput.StorageObjectStore {
			name += fmt.Sprintf(": data in S3, the user data is CAPA's Ignition %s stub", delivery.StubIgnitionVersion)
		}
		name += ")"
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

// printKubernetes says where the node gets kubeadm and the kubelet of the version from.
func printKubernetes(w io.Writer, out ignition.Output, spec *cabpiv1.IgnitionConfigSpec, version string) {
	if len(out.KubernetesFrom) == 0 {
		fmt.Fprintf(w, "kubeadm and kubelet %s: from the image (spec.kubernetes.source image)\n", version)
		return
	}
	fmt.Fprintf(w, "kubeadm and kubelet %s: spec.kubernetes.source %s, downloaded by the node from:\n", version, spec.Kubernetes.Source)
	for _, u := range out.KubernetesFrom {
		fmt.Fprintf(w, "  %s\n", u)
	}
}

// Refusal is every finding of a config that does not render, each at its field path, as
// admission lists them (up to configinput.MaxListedFindings, the rest counted): one run of
// `cabpi render` tells the user all that kubectl apply would refuse.
type Refusal struct {
	// Config names the config: "IgnitionConfigTemplate workers".
	Config string
	// Problems is how many findings there are; Errors lists them, capped.
	Problems int
	Errors   field.ErrorList
}

func (r *Refusal) Error() string {
	var b strings.Builder
	noun := "problems"
	if r.Problems == 1 {
		noun = "problem"
	}
	fmt.Fprintf(&b, "%s does not render: %d %s", r.Config, r.Problems, noun)
	for _, e := range r.Errors {
		b.WriteString("\n  " + e.Error())
	}
	return b.String()
}

// refused is the render's error as a Refusal listing its findings; an error that carries none
// (not the input's) as it is.
func refused(doc configinput.Document, err error) error {
	errs := configinput.FieldErrors(err, doc.SpecPath)
	if len(errs) == 0 {
		return err
	}
	config := doc.Kind
	if doc.Name != "" {
		config += " " + doc.Name
	}
	return &Refusal{Config: config, Problems: len(errs), Errors: configinput.CapFieldErrors(errs, doc.SpecPath)}
}
