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

package ignition

import (
	"encoding/json"
	"fmt"
	"slices"
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
// modified. Input errors are all reported at once, in a *Report (Input.Findings first, then the
// render's in the order of its steps): errors.As(err, &e) with e an *Error gives the first,
// Findings(err) every one. Any other error is a bug.
func Render(in Input) (Output, error) {
	_, out, err := render(&in)
	return out, err
}

// render is Render, also returning the merged config Prepare keeps for WithJoinToken.
func render(in *Input) (*merged, Output, error) {
	m, err := mergeInput(in)
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
// both at the target version. Every check of a part runs, whatever another part's check found
// (a step that needs what an earlier one refused is passed over: kubeadm's configuration without
// a Kubernetes version, the source's files without a valid source), so the report holds every
// independent problem. The merged config is only built and checked when the parts are clean:
// its checks see the parts together, and would repeat what was found in them.
func mergeInput(in *Input) (*merged, error) {
	rep := &Report{Errors: slices.Clone(in.Findings)}
	if _, ierr := specFor(in.Variant); ierr != nil {
		// Nothing else can be checked without the variant: its documents, versions, paths.
		rep.add(ierr)
		return nil, rep
	}
	kubeVersion, versionErr := parseKubernetesVersion(in.KubernetesVersion)
	rep.add(versionErr)
	pinErr := rep.add(validateIgnitionVersion(in.Variant, in.IgnitionVersion))
	inst := &kubernetesInstall{}
	if !rep.addAll(checkKubernetes(in.Variant, in.Kubernetes, in.KubernetesVersion)) && versionErr == nil {
		// A download with no digest is reported, and the rest built and checked all the same.
		pins, errs := kubernetesPins(in.Kubernetes, in.KubernetesVersion, in.KubernetesDigests)
		rep.addAll(errs)
		var err error
		if inst, err = kubernetesFor(in, pins); err != nil {
			return nil, err
		}
	}
	metadata, ierr := metadataFor(in.Variant, in.NodeName)
	rep.add(ierr)
	var kubeadmYAML string
	var generated []ownedFile
	if versionErr == nil {
		var errs []*Error
		kubeadmYAML, generated, errs = kubeadmConfig(in, kubeVersion, metadata)
		rep.addAll(errs)
	}
	certificates := certificateFiles(in.Certificates)
	rep.addAll(checkFiles(append(slices.Clone(certificates), generated...), inst, in.Files, metadata))
	rep.addAll(checkUsers(in.Users))
	rep.addAll(checkCommands(in.PreKubeadmCommands, in.PostKubeadmCommands))
	provider := append(append(certificates, generated...), inst.ownedFiles()...)

	snip, errs := translateSnippet(in)
	rep.addAll(errs)
	var emitted string
	src := butaneSource
	if snip != nil {
		// The one check of what the snippet writes, against the fixed owned paths and the
		// provider's other files (certificates, the discovery kubeconfig) together.
		rep.addAll(checkSnippet(snip, append(ownedFilePaths(provider), inst.owned...), neededUnits(inst, metadata)))
		rep.addAll(checkSnippetAgainstFiles(snip, in.Files))
		emitted, src = snip.version, snip.source
		rep.Warnings = append(rep.Warnings, snip.warnings...)
	}
	rep.Warnings = append(rep.Warnings, foreignSysextWarnings(in, snip)...)
	rep.Warnings = append(rep.Warnings, twiceDefinedUserWarnings(in, snip)...)
	var target string
	if !pinErr {
		target, ierr = targetIgnitionVersion(in.Variant, inst.specVersion(), emitted, in.IgnitionVersion)
		rep.add(ierr)
	}
	if len(rep.Errors) > 0 {
		return nil, rep
	}

	var substitutions []string
	if metadata != nil {
		substitutions = metadata.substitutions(in.NodeName.ProviderID)
	}
	script, err := kubeadmScript(in.Role, in.Verbosity, inst, substitutions,
		resumePhasesFor(in.Role, userSkipPhases(in), kubeVersion), in.PreKubeadmCommands, in.PostKubeadmCommands)
	if err != nil {
		return nil, err
	}
	unit := kubeadmUnit(metadata, inst.after, updateAgents[in.Variant])
	base, err := json.Marshal(baseConfig(inst.specVersion(), kubeadmYAML, script, unit, provider, inst, in.Files, in.Users, in.Compress))
	if err != nil {
		return nil, fmt.Errorf("encoding the base config: %w", err)
	}
	origin := baseOrigins(provider, inst.remotePaths(), in.Files, src)
	data, errs := mergeConfigs(target, base, snip, func(merged []byte) []*Error { return checkStorage(merged, origin) })
	if rep.addAll(errs) {
		return nil, rep
	}
	return &merged{target: target, data: data, kubeVersion: kubeVersion, metadata: metadata, generated: generated,
		warnings: rep.Warnings, kubernetesFrom: inst.sources()}, nil
}

// translateSnippet translates the input's provisioning document, Butane or Container Linux
// Config; nil for none. Only one can be merged (oneDocument): a document is given when it is
// not blank.
func translateSnippet(in *Input) (*snippet, []*Error) {
	butane, clc := strings.TrimSpace(in.Butane) != "", strings.TrimSpace(in.ContainerLinuxConfig) != ""
	var errs []*Error
	if ierr := oneDocument(butane, clc); ierr != nil {
		// The Container Linux Config is refused; Butane, the format to keep, is still checked.
		errs, clc = append(errs, ierr), false
	}
	var snip *snippet
	var ierr *Error
	if clc {
		snip, ierr = translateCLC(in.Variant, in.ContainerLinuxConfig, in.ContainerLinuxConfigStrict, in.Compress)
	} else {
		snip, ierr = translateButane(in.Variant, in.Butane, in.ButaneStrict, in.Compress)
	}
	if ierr != nil {
		return nil, append(errs, ierr)
	}
	return snip, errs
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
