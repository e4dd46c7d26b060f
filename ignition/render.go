package ignition

import (
	"encoding/json"
	"fmt"
)

// Render renders the bootstrap data of one node: kubeadm's configuration, the script and unit
// that run it, certificates and files, merged with the user's Butane snippet into one Ignition
// config at the spec version the variant, the snippet and the pin call for.
//
// Render is pure and deterministic: identical input gives identical bytes, and the input is not
// modified. An error caused by the input is an *Error; any other error is a bug.
func Render(in Input) (Output, error) {
	out, ierr, err := render(&in)
	if ierr != nil {
		return Output{}, ierr
	}
	if err != nil {
		return Output{}, err
	}
	return out, nil
}

// render keeps input errors (*Error) apart from internal ones, so Render never returns a typed
// nil *Error inside a non-nil error.
func render(in *Input) (Output, *Error, error) {
	if _, ierr := specFor(in.Variant); ierr != nil {
		return Output{}, ierr, nil
	}
	kubeVersion, ierr := parseKubernetesVersion(in.KubernetesVersion)
	if ierr != nil {
		return Output{}, ierr, nil
	}
	if ierr := validateIgnitionVersion(in.Variant, in.IgnitionVersion); ierr != nil {
		return Output{}, ierr, nil
	}
	metadata, ierr := metadataFor(in.Variant, in.NodeName)
	if ierr != nil {
		return Output{}, ierr, nil
	}
	kubeadmYAML, generated, ierr := kubeadmConfig(in, kubeVersion, metadata)
	if ierr != nil {
		return Output{}, ierr, nil
	}
	provider := append(certificateFiles(in.Certificates), generated...)
	if ierr := checkFiles(provider, in.Files); ierr != nil {
		return Output{}, ierr, nil
	}
	if ierr := checkCommands(in.PreKubeadmCommands, in.PostKubeadmCommands); ierr != nil {
		return Output{}, ierr, nil
	}
	snip, ierr := translateButane(in.Variant, in.Butane, in.ButaneStrict)
	if ierr != nil {
		return Output{}, ierr, nil
	}
	var emitted string
	var snippetJSON []byte
	if snip != nil {
		if ierr := checkSnippet(snip, ownedFilePaths(provider)); ierr != nil {
			return Output{}, ierr, nil
		}
		if ierr := checkSnippetAgainstFiles(snip, in.Files); ierr != nil {
			return Output{}, ierr, nil
		}
		emitted, snippetJSON = snip.version, snip.json
	}
	target, ierr := targetIgnitionVersion(in.Variant, emitted, in.IgnitionVersion)
	if ierr != nil {
		return Output{}, ierr, nil
	}

	var substitutions []string
	if metadata != nil {
		substitutions = metadata.substitutions(in.NodeName.ProviderID)
	}
	script, err := kubeadmScript(in.Role, substitutions, in.PreKubeadmCommands, in.PostKubeadmCommands)
	if err != nil {
		return Output{}, nil, err
	}
	unit, err := kubeadmUnit(metadata)
	if err != nil {
		return Output{}, nil, err
	}
	base, err := json.Marshal(baseConfig(kubeadmYAML, script, unit, provider, in.Files))
	if err != nil {
		return Output{}, nil, fmt.Errorf("encoding the base config: %w", err)
	}
	origin := baseOrigins(provider, in.Files)
	data, ierr := mergeConfigs(target, base, snippetJSON, func(merged []byte) *Error { return checkStorage(merged, origin) })
	if ierr != nil {
		return Output{}, ierr, nil
	}
	size, err := sizeOf(data)
	if err != nil {
		return Output{}, nil, err
	}
	return Output{Data: data, SpecVersion: target, Size: size}, nil, nil
}
