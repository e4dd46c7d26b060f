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

// Package publish puts a release's image where users pull it from, and lets them check it is
// the one released (docs/adr/047): the multi-platform index and its images pushed to a registry
// (go-containerregistry, the Docker credential helpers, no daemon), named from then on by
// digest, and signed the way cosign signs with a key, so that `cosign verify --key` checks it.
package publish

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// cosign's format of a key-based signature (sigstore/cosign, "simple signing"): a manifest at
// the tag sha256-<hex>.sig of the signed digest, whose one layer is the payload below and whose
// layer annotation holds the base64 ECDSA signature of the payload's SHA-256.
const (
	simpleSigningMediaType types.MediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	signatureAnnotation                    = "dev.cosignproject.cosign/signature"
	signatureType                          = "cosign container image signature"
)

// simpleSigning is the payload cosign signs: which image (by manifest digest) under which name.
type simpleSigning struct {
	Critical critical          `json:"critical"`
	Optional map[string]string `json:"optional"`
}

type critical struct {
	Identity identity `json:"identity"`
	Image    image    `json:"image"`
	Type     string   `json:"type"`
}

type identity struct {
	DockerReference string `json:"docker-reference"`
}

type image struct {
	DockerManifestDigest string `json:"docker-manifest-digest"`
}

// Options are how the registry is reached: the remote options (credentials, transport).
type Options struct {
	Remote []remote.Option
}

// DefaultOptions reach a registry with the Docker config's credentials and credential helpers
// (authn.DefaultKeychain), as `docker login` or a workflow's login step leaves them.
func DefaultOptions(ctx context.Context) Options {
	return Options{Remote: []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}}
}

// Push pushes the index (with every platform image it names) to tag and returns the tag's
// reference with the digest the registry holds it under: repo:tag@sha256:..., what the
// components name from then on, so that pushing the tag again changes nothing that runs.
func Push(idx v1.ImageIndex, tag name.Tag, o Options) (name.Digest, error) {
	if err := remote.WriteIndex(tag, idx, o.Remote...); err != nil {
		return name.Digest{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	digest, err := idx.Digest()
	if err != nil {
		return name.Digest{}, err
	}
	// Read back: the registry must serve the index under the digest the components will name.
	ref := tag.Context().Digest(digest.String())
	desc, err := remote.Head(ref, o.Remote...)
	if err != nil {
		return name.Digest{}, fmt.Errorf("reading back %s: %w", ref, err)
	}
	if desc.Digest != digest {
		return name.Digest{}, fmt.Errorf("%s: the registry holds %s", ref, desc.Digest)
	}
	return name.NewDigest(tag.String() + "@" + digest.String())
}

// signatureTag is where cosign keeps the signatures of digest: sha256-<hex>.sig in its repository.
func signatureTag(ref name.Digest) (name.Tag, error) {
	return ref.Context().Tag(strings.Replace(ref.DigestStr(), ":", "-", 1) + ".sig"), nil
}

// Sign signs ref (an index or image by digest) with key and pushes the signature where cosign
// looks for it.
func Sign(ref name.Digest, key *ecdsa.PrivateKey, o Options) error {
	payload, err := json.Marshal(simpleSigning{Critical: critical{
		Identity: identity{DockerReference: ref.Context().Name()},
		Image:    image{DockerManifestDigest: ref.DigestStr()},
		Type:     signatureType,
	}})
	if err != nil {
		return err
	}
	sum := sha256.Sum256(payload)
	sig, err := ecdsa.SignASN1(rand.Reader, key, sum[:])
	if err != nil {
		return fmt.Errorf("signing %s: %w", ref, err)
	}
	layer := static.NewLayer(payload, simpleSigningMediaType)
	img, err := mutate.Append(mutate.MediaType(mutate.ConfigMediaType(empty.Image, types.OCIConfigJSON), types.OCIManifestSchema1),
		mutate.Addendum{Layer: layer, Annotations: map[string]string{signatureAnnotation: base64.StdEncoding.EncodeToString(sig)}})
	if err != nil {
		return err
	}
	tag, err := signatureTag(ref)
	if err != nil {
		return err
	}
	if err := remote.Write(tag, img, o.Remote...); err != nil {
		return fmt.Errorf("pushing the signature of %s: %w", ref, err)
	}
	return nil
}

// ErrNoValidSignature says that no signature of the image verifies with the key.
var ErrNoValidSignature = errors.New("no signature verifies with the key")

// Verify checks that a signature of ref, where cosign keeps them, was made with pub's key over a
// payload that names ref's digest: what `cosign verify --key` checks of a key-based signature.
func Verify(ref name.Digest, pub crypto.PublicKey, o Options) error {
	key, ok := pub.(*ecdsa.PublicKey)
	if !ok {
		return fmt.Errorf("the public key is a %T, not ECDSA", pub)
	}
	tag, err := signatureTag(ref)
	if err != nil {
		return err
	}
	img, err := remote.Image(tag, o.Remote...)
	if err != nil {
		return fmt.Errorf("reading the signatures of %s: %w", ref, err)
	}
	manifest, err := img.Manifest()
	if err != nil {
		return err
	}
	for _, l := range manifest.Layers {
		if l.MediaType != simpleSigningMediaType {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(l.Annotations[signatureAnnotation])
		if err != nil {
			continue
		}
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			return err
		}
		payload, err := readAll(layer)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(payload)
		if !ecdsa.VerifyASN1(key, sum[:], sig) {
			continue
		}
		var p simpleSigning
		if err := json.Unmarshal(payload, &p); err != nil {
			continue
		}
		if p.Critical.Type == signatureType && p.Critical.Image.DockerManifestDigest == ref.DigestStr() {
			return nil
		}
	}
	return fmt.Errorf("%s: %w", ref, ErrNoValidSignature)
}

func readAll(l v1.Layer) ([]byte, error) {
	rc, err := l.Uncompressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	var b bytes.Buffer
	if _, err := io.Copy(&b, rc); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// ParsePrivateKey reads an unencrypted PEM ECDSA private key (PKCS #8 or SEC 1, as
// `openssl ecparam -genkey -name prime256v1` or `openssl genpkey -algorithm EC` write it).
func ParsePrivateKey(data []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, errors.New("no PEM block in the key")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		if ec, ok := k.(*ecdsa.PrivateKey); ok {
			return ec, nil
		}
		return nil, fmt.Errorf("the key is a %T, not ECDSA", k)
	}
	k, err := x509.ParseECPrivateKey(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("the key is neither PKCS #8 nor SEC 1 ECDSA: %w", err)
	}
	return k, nil
}

// PublicKeyPEM is key's public key as cosign reads it (--key cosign.pub): PEM "PUBLIC KEY".
func PublicKeyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
