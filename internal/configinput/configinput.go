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

// Package configinput turns an IgnitionConfigSpec into the renderer's ignition.Input. The
// controller resolves references against the API server; the offline render command resolves
// them to placeholders. Both go through FromSpec, so they cannot disagree on what a spec means.
package configinput

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/ignition"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// Resolver reads the content of referenced Secret and ConfigMap keys. field is the spec field of
// the reference: a resolver may act on what it holds (RefField.Document) and names it in
// messages (RefField.String).
type Resolver interface {
	SecretKey(ctx context.Context, field RefField, ref cabpiv1.KeyReference) ([]byte, error)
	ConfigMapKey(ctx context.Context, field RefField, ref cabpiv1.KeyReference) (string, error)
}

// RefField is the field of a spec that names a Secret or ConfigMap key.
type RefField struct {
	// Part is the part of the renderer's input the reference's content becomes: PartButane or
	// PartContainerLinuxConfig for a document's contentFrom, PartFile for a file's contentFrom,
	// PartUser for a user's passwordHashFrom.
	Part ignition.Part
	// Index is the file or user (Part.Listed).
	Index int
	// ConfigMap says the reference is a configMap (a document's contentFrom, the digests'
	// digestsFrom) rather than a Secret.
	ConfigMap bool
}

// Digests reports whether the reference holds the digests of the Kubernetes downloads
// (spec.kubernetes.digestsFrom).
func (f RefField) Digests() bool { return f.Part == ignition.PartKubernetes }

// Document reports whether the reference holds a provisioning document, which is translated:
// no placeholder can stand in for it.
func (f RefField) Document() bool {
	return f.Part == ignition.PartButane || f.Part == ignition.PartContainerLinuxConfig
}

// String is the field's spec path, for messages: "spec.butane.contentFrom.secret",
// "spec.files[2].contentFrom.secret", "spec.users[0].passwordHashFrom.secret".
func (f RefField) String() string {
	kind := "secret"
	if f.ConfigMap {
		kind = "configMap"
	}
	if f.Digests() {
		return fmt.Sprintf("spec.%s.%s", ignition.At(ignition.PartKubernetes, ignition.KubernetesDigestsFrom), kind)
	}
	source := fileContentFrom
	if f.Part == ignition.PartUser {
		source = userPasswordHashFrom
	}
	return fmt.Sprintf("spec.%s.%s", ignition.Entry(f.Part, f.Index, source), kind)
}

// Members of the spec's entries that are not the renderer's: where a file's content or a user's
// password hash is read from.
const (
	fileContentFrom      ignition.Member = "contentFrom"
	userPasswordHashFrom ignition.Member = "passwordHashFrom"
)

// MissingReferenceError says a referenced object or key does not exist (yet).
type MissingReferenceError struct {
	Field      RefField
	Kind       string
	Name       string
	Key        string
	KeyMissing bool
}

func (e *MissingReferenceError) Error() string {
	if e.KeyMissing {
		return fmt.Sprintf("%s: %s %q has no key %q", e.Field, e.Kind, e.Name, e.Key)
	}
	return fmt.Sprintf("%s: %s %q not found", e.Field, e.Kind, e.Name)
}

// DefaultFileMode is the mode of spec.files without permissions.
const DefaultFileMode = 0o644

// FromSpec builds the role-independent part of the input: variant, pinned version, Butane or
// Container Linux Config, files and commands. Role-specific parts (kubeadm configurations,
// certificates) are the caller's. What is wrong with a field it reads (a permission that does
// not parse, a file's content that does not decode, both documents set) is recorded in
// in.Findings with the field set aside, so the render reports it along with its own findings;
// the error is for what stops building (a reference not readable).
func FromSpec(ctx context.Context, spec *cabpiv1.IgnitionConfigSpec, role ignition.Role, kubernetesVersion string, res Resolver) (ignition.Input, error) {
	in := ignition.Input{
		Variant:             Variant(spec),
		IgnitionVersion:     spec.IgnitionVersion,
		Role:                role,
		KubernetesVersion:   kubernetesVersion,
		Kubernetes:          spec.Kubernetes,
		PreKubeadmCommands:  spec.PreKubeadmCommands,
		PostKubeadmCommands: spec.PostKubeadmCommands,
		Verbosity:           spec.Verbosity,
		ButaneStrict:        spec.Butane.Strict,

		ContainerLinuxConfigStrict: spec.ContainerLinuxConfig.Strict,
	}
	docsErr := CheckDocuments(spec)
	if nn := spec.NodeName; nn != nil {
		in.NodeName = &ignition.NodeNameFromMetadata{Platform: nn.FromMetadata, ProviderID: nn.ProviderID}
	}
	butane, err := document(ctx, ignition.PartButane, spec.Butane.Inline, spec.Butane.ContentFrom, res)
	if err != nil {
		return in, err
	}
	in.Butane = butane
	if docsErr != nil {
		// One document: the Container Linux Config is refused and set aside, Butane checked.
		var ierr *ignition.Error
		if !errors.As(docsErr, &ierr) {
			return in, docsErr
		}
		in.Findings = append(in.Findings, ierr)
	} else {
		clc := spec.ContainerLinuxConfig
		if in.ContainerLinuxConfig, err = document(ctx, ignition.PartContainerLinuxConfig, clc.Inline, clc.ContentFrom, res); err != nil {
			return in, err
		}
	}
	for i, f := range spec.Files {
		file, findings, err := fileFromSpec(ctx, i, f, res)
		if err != nil {
			return in, err
		}
		in.Findings = append(in.Findings, findings...)
		in.Files = append(in.Files, file)
	}
	if err := kubernetesDigests(ctx, spec.Kubernetes.DigestsFrom, res, &in); err != nil {
		return in, err
	}
	for i, u := range spec.Users {
		user, err := userFromSpec(ctx, i, u, res)
		if finding := inputFinding(err); finding != nil {
			in.Findings = append(in.Findings, finding)
		} else if err != nil {
			return in, err
		}
		in.Users = append(in.Users, user)
	}
	return in, nil
}

// inputFinding is err when it is a finding about the input (an *ignition.Error), nil otherwise.
func inputFinding(err error) *ignition.Error {
	var ierr *ignition.Error
	if errors.As(err, &ierr) {
		return ierr
	}
	return nil
}

// CheckDocuments applies the renderer's rule of one provisioning document
// (ignition.CheckOneDocument) to spec, where a section counts as given when it is set at all (a
// butane with strict alone, a contentFrom), as the CRD's rule reads it: the renderer sees the
// resolved documents only, so cabpi render would otherwise accept what admission refuses.
func CheckDocuments(spec *cabpiv1.IgnitionConfigSpec) error {
	return ignition.CheckOneDocument(spec.Butane != (cabpiv1.ButaneSpec{}), spec.ContainerLinuxConfig != (cabpiv1.ContainerLinuxConfigSpec{}))
}

// userFromSpec resolves a user's password hash, from the spec or its Secret.
func userFromSpec(ctx context.Context, i int, u cabpiv1.User, res Resolver) (ignition.User, error) {
	user := ignition.User{
		Name: u.Name, Gecos: u.Gecos, HomeDir: u.HomeDir, Shell: u.Shell, PrimaryGroup: u.PrimaryGroup,
		Groups: u.Groups, PasswordHash: u.PasswordHash, SSHAuthorizedKeys: u.SSHAuthorizedKeys,
	}
	if from := u.PasswordHashFrom; from != nil {
		data, err := res.SecretKey(ctx, RefField{Part: ignition.PartUser, Index: i}, from.Secret)
		if err != nil {
			return user, err
		}
		// A hash written with echo or a text editor ends in a newline that is not part of it.
		user.PasswordHash = strings.TrimSpace(string(data))
		if user.PasswordHash == "" || strings.ContainsAny(user.PasswordHash, "\n\r") {
			return user, &ignition.Error{Kind: ignition.ErrInvalidInput, Place: ignition.Entry(ignition.PartUser, i, userPasswordHashFrom),
				Message: fmt.Sprintf("Secret %s key %s does not hold one password hash (one line, as crypt(3) writes it)", from.Secret.Name, from.Secret.Key)}
		}
	}
	return user, nil
}

// Variant is the spec's variant, flatcar when unset (the CRD default, for objects not defaulted).
func Variant(spec *cabpiv1.IgnitionConfigSpec) cabpiv1.Variant {
	if spec.Variant == "" {
		return cabpiv1.VariantFlatcar
	}
	return spec.Variant
}

// document is the provisioning document of part (Butane or Container Linux Config): inline, or
// read from the Secret or ConfigMap key contentFrom names.
func document(ctx context.Context, part ignition.Part, inline string, from *cabpiv1.ButaneSource, res Resolver) (string, error) {
	switch {
	case from == nil:
		return inline, nil
	case from.Secret != nil:
		data, err := res.SecretKey(ctx, RefField{Part: part}, *from.Secret)
		return string(data), err
	case from.ConfigMap != nil:
		return res.ConfigMapKey(ctx, RefField{Part: part, ConfigMap: true}, *from.ConfigMap)
	}
	return "", nil
}

// fileFromSpec resolves a file of the spec. Its findings (permissions that do not parse,
// content that does not decode) are returned apart from the error, which stops building.
func fileFromSpec(ctx context.Context, i int, f cabpiv1.File, res Resolver) (ignition.File, []*ignition.Error, error) {
	file := ignition.File{Path: f.Path, Owner: f.Owner, Content: []byte(f.Content), Mode: DefaultFileMode, Append: f.Append}
	var findings []*ignition.Error
	if f.Permissions != "" {
		mode, err := ParseMode(f.Permissions)
		if err != nil {
			findings = append(findings, &ignition.Error{Kind: ignition.ErrInvalidInput,
				Place: ignition.Entry(ignition.PartFile, i, ignition.FileMode), Message: err.Error(), Value: f.Permissions})
		} else {
			file.Mode = mode
		}
	}
	if f.ContentFrom != nil {
		data, err := res.SecretKey(ctx, RefField{Part: ignition.PartFile, Index: i}, f.ContentFrom.Secret)
		if err != nil {
			return file, findings, err
		}
		file.Content = data
		if p, ok := res.(placeholderResolver); ok && p.Placeholders() {
			return file, findings, nil // a placeholder is not encoded: it stands for the decoded content
		}
	}
	content, err := decodeFileContent(file.Content, f.Encoding)
	if err != nil {
		at := ignition.Entry(ignition.PartFile, i, ignition.FileContent)
		if f.ContentFrom != nil {
			at = ignition.Entry(ignition.PartFile, i, fileContentFrom)
		}
		return file, append(findings, &ignition.Error{Kind: ignition.ErrInvalidInput, Place: at, Message: err.Error()}), nil
	}
	file.Content = content
	return file, findings, nil
}

// placeholderResolver is a Resolver whose Secret content stands in for the real one (offline
// rendering, admission): it is not decoded.
type placeholderResolver interface{ Placeholders() bool }

// ParseMode parses an octal mode such as "0644" or "755".
func ParseMode(permissions string) (int, error) {
	mode, err := strconv.ParseUint(permissions, 8, 32)
	if err != nil || mode > 0o7777 {
		return 0, fmt.Errorf("permissions %q is not an octal file mode (e.g. \"0644\")", permissions)
	}
	return int(mode), nil
}

// kubernetesDigests reads the digest list spec.kubernetes.digestsFrom names into the input. A
// resolver that stands in for what it cannot read (admission, cabpi render without --digests)
// leaves the digests standing in; a list that does not parse is a finding at the field.
func kubernetesDigests(ctx context.Context, from *cabpiv1.DigestsSource, res Resolver, in *ignition.Input) error {
	if from == nil {
		return nil
	}
	if s, ok := res.(digestsStandIn); ok && s.DigestsStandIn() {
		in.KubernetesDigests.StandIn = true
		return nil
	}
	var data []byte
	var name, key string
	switch {
	case from.Secret != nil:
		var err error
		if data, err = res.SecretKey(ctx, RefField{Part: ignition.PartKubernetes}, *from.Secret); err != nil {
			return err
		}
		name, key = "Secret "+from.Secret.Name, from.Secret.Key
	case from.ConfigMap != nil:
		text, err := res.ConfigMapKey(ctx, RefField{Part: ignition.PartKubernetes, ConfigMap: true}, *from.ConfigMap)
		if err != nil {
			return err
		}
		data, name, key = []byte(text), "ConfigMap "+from.ConfigMap.Name, from.ConfigMap.Key
	default:
		return nil
	}
	digests, err := nodelayout.ParseDigests(data)
	if err != nil {
		in.Findings = append(in.Findings, &ignition.Error{Kind: ignition.ErrInvalidInput,
			Place:   ignition.At(ignition.PartKubernetes, ignition.KubernetesDigestsFrom),
			Message: fmt.Sprintf("%s key %s is not a digest list: %v", name, key, err)})
		return nil
	}
	in.KubernetesDigests.User = digests
	return nil
}

// digestsStandIn is a Resolver that does not read spec.kubernetes.digestsFrom: the renderer pins
// what has no digest known to a stand-in (ignition.StandInDigest).
type digestsStandIn interface{ DigestsStandIn() bool }
