package ignition

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/blang/semver/v4"
)

// Render renders the bootstrap data of one node: kubeadm's configuration, the script and unit
// that run it, certificates and files, merged with the user's Butane snippet (or Container Linux
// Config) into one Ignition config at the spec version the variant, the snippet and the pin
// call for. With Input.Compress,
// contents are gzipped where that is shorter and a config over Input.SizeLimit may be replaced
// by a smaller wrapper carrying it (Output.Size says which); nothing is ever cut.
//
// Render is pure and deterministic: identical input gives identical bytes, and the input is not
// modified. An error caused by the input is an *Error; any other error is a bug.
func Render(in Input) (Output, error) {
	_, out, err := render(&in)
	return out, err
}

// render is Render, also returning the merged config Prepare keeps for WithJoinToken. An input
// error is returned as an *Error, never a typed nil *Error inside a non-nil error.
func render(in *Input) (*merged, Output, error) {
	m, ierr, err := mergeInput(in)
	if ierr != nil {
		return nil, Output{}, ierr
	}
	if err != nil {
		return nil, Output{}, err
	}
	out, err := finish(m.target, m.data, in.Compress, in.SizeLimit, m.warnings)
	if err != nil {
		return nil, Output{}, err
	}
	out.KubernetesFrom = m.kubernetesFrom
	return m, out, nil
}

// merged is a rendered config before it is weighed and wrapped, with what was derived from the
// input on the way (Prepared.WithJoinToken encodes kubeadm's configuration again from it).
type merged struct {
	target      string
	data        []byte
	kubeVersion semver.Version
	metadata    *metadataSource
	generated   []ownedFile
	warnings    []Warning
	// kubernetesFrom are the Kubernetes source's download URLs (Output.KubernetesFrom).
	kubernetesFrom []string
}

// mergeInput checks the input, builds the provider's config, translates the snippet and merges
// both at the target version.
func mergeInput(in *Input) (*merged, *Error, error) {
	if _, ierr := specFor(in.Variant); ierr != nil {
		return nil, ierr, nil
	}
	kubeVersion, ierr := parseKubernetesVersion(in.KubernetesVersion)
	if ierr != nil {
		return nil, ierr, nil
	}
	if ierr := validateIgnitionVersion(in.Variant, in.IgnitionVersion); ierr != nil {
		return nil, ierr, nil
	}
	if ierr := checkKubernetes(in.Variant, in.Kubernetes, in.KubernetesVersion); ierr != nil {
		return nil, ierr, nil
	}
	inst, err := kubernetesFor(in, kubeVersion)
	if err != nil {
		return nil, nil, err
	}
	metadata, ierr := metadataFor(in.Variant, in.NodeName)
	if ierr != nil {
		return nil, ierr, nil
	}
	kubeadmYAML, generated, ierr := kubeadmConfig(in, kubeVersion, metadata)
	if ierr != nil {
		return nil, ierr, nil
	}
	provider := append(certificateFiles(in.Certificates), generated...)
	provider = append(provider, inst.ownedFiles()...)
	if ierr := checkFiles(provider, inst.owned, in.Files); ierr != nil {
		return nil, ierr, nil
	}
	if ierr := checkCommands(in.PreKubeadmCommands, in.PostKubeadmCommands); ierr != nil {
		return nil, ierr, nil
	}
	snip, ierr := translateSnippet(in)
	if ierr != nil {
		return nil, ierr, nil
	}
	var emitted string
	var warnings []Warning
	src := butaneSource
	if snip != nil {
		// The one check of what the snippet writes, against the fixed owned paths and the
		// provider's other files (certificates, the discovery kubeconfig) together.
		if ierr := checkSnippet(snip, append(ownedFilePaths(provider), inst.owned...)); ierr != nil {
			return nil, ierr, nil
		}
		if ierr := checkSnippetAgainstFiles(snip, in.Files); ierr != nil {
			return nil, ierr, nil
		}
		emitted, warnings, src = snip.version, snip.warnings, snip.source
	}
	target, ierr := targetIgnitionVersion(in.Variant, emitted, in.IgnitionVersion)
	if ierr != nil {
		return nil, ierr, nil
	}

	var substitutions []string
	if metadata != nil {
		substitutions = metadata.substitutions(in.NodeName.ProviderID)
	}
	script, err := kubeadmScript(in.Role, in.Verbosity, inst, substitutions, in.PreKubeadmCommands, in.PostKubeadmCommands)
	if err != nil {
		return nil, nil, err
	}
	unit := kubeadmUnit(metadata, inst.after)
	base, err := json.Marshal(baseConfig(kubeadmYAML, script, unit, provider, inst, in.Files, in.Users, in.Compress))
	if err != nil {
		return nil, nil, fmt.Errorf("encoding the base config: %w", err)
	}
	origin := baseOrigins(provider, inst.remotePaths(), in.Files, src)
	data, ierr := mergeConfigs(target, base, snip, func(merged []byte) *Error { return checkStorage(merged, origin) })
	if ierr != nil {
		return nil, ierr, nil
	}
	return &merged{target: target, data: data, kubeVersion: kubeVersion, metadata: metadata, generated: generated,
		warnings: warnings, kubernetesFrom: inst.sources()}, nil, nil
}

// translateSnippet translates the input's provisioning document, Butane or Container Linux
// Config; nil for none. Only one can be merged (oneDocument): a document is given when it is
// not blank.
func translateSnippet(in *Input) (*snippet, *Error) {
	butane, clc := strings.TrimSpace(in.Butane) != "", strings.TrimSpace(in.ContainerLinuxConfig) != ""
	if ierr := oneDocument(butane, clc); ierr != nil {
		return nil, ierr
	}
	if !clc {
		return translateButane(in.Variant, in.Butane, in.ButaneStrict, in.Compress)
	}
	return translateCLC(in.Variant, in.ContainerLinuxConfig, in.ContainerLinuxConfigStrict, in.Compress)
}

// finish turns a merged, validated config into the output: wrapped where compression is allowed,
// the config is over the limit and the wrapper is smaller, and weighed. It is the last step of
// every render, after which the data may not be changed byte by byte: a wrapper and gzipped
// contents have no text to replace.
func finish(target string, config []byte, compress bool, limit int, warnings []Warning) (Output, error) {
	data := config
	size := SizeReport{Limit: limit, Compressed: compress, UnwrappedBytes: len(config)}
	if compress && limit > 0 && len(config) > limit {
		wrapped, err := wrapConfig(target, config)
		if err != nil {
			return Output{}, err
		}
		// Contents already gzipped barely shrink again, and base64 adds a third: the wrapper
		// is used only where it is smaller. Whether either fits is the caller's to report.
		if wrapped != nil && len(wrapped) < len(config) {
			data, size.Wrapped = wrapped, true
		}
	}
	size.Bytes, size.GzipBytes = len(data), len(gzipBytes(data))
	return Output{Data: data, SpecVersion: target, Size: size, Warnings: warnings}, nil
}
