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

// Command publish pushes a release's image to its registry and signs it (`make publish`,
// docs/adr/047): the OCI archive `make release` wrote is pushed to -ref (the index and both
// platform images), the reference by digest the registry holds it under is written to -out (the
// components name that), and with -key the index is signed as `cosign sign --key` would, the
// public key written to -public-key. Credentials are Docker's (config and credential helpers).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/ociimage"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/publish"
)

func main() {
	archive := flag.String("archive", "", "the release's OCI archive (make release)")
	ref := flag.String("ref", "", "the tag to push to: <registry>/<repository>:<version>")
	out := flag.String("out", "", "file the pushed reference by digest is written to")
	key := flag.String("key", "", "PEM ECDSA private key to sign the image with (optional)")
	publicKey := flag.String("public-key", "", "file the signing key's public key is written to (with -key)")
	flag.Parse()
	if err := run(context.Background(), *archive, *ref, *out, *key, *publicKey); err != nil {
		fmt.Fprintln(os.Stderr, "publish:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, archive, ref, out, keyFile, publicKey string) error {
	if archive == "" || ref == "" || out == "" {
		return fmt.Errorf("-archive, -ref and -out are required")
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		return fmt.Errorf("-ref %q: %w", ref, err)
	}
	dir, err := os.MkdirTemp("", "cabpi-publish-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	idx, _, err := ociimage.ReadOCIArchive(archive, dir)
	if err != nil {
		return err
	}
	o := publish.DefaultOptions(ctx)
	pushed, err := publish.Push(idx, tag, o)
	if err != nil {
		return err
	}
	fmt.Printf("pushed %s\n", pushed)
	if keyFile != "" {
		data, err := os.ReadFile(keyFile)
		if err != nil {
			return err
		}
		key, err := publish.ParsePrivateKey(data)
		if err != nil {
			return fmt.Errorf("-key: %w", err)
		}
		if err := publish.Sign(pushed, key, o); err != nil {
			return err
		}
		if publicKey != "" {
			pem, err := publish.PublicKeyPEM(key)
			if err != nil {
				return err
			}
			if err := os.WriteFile(publicKey, pem, 0o644); err != nil {
				return err
			}
		}
		fmt.Printf("signed %s\n", pushed)
	}
	return os.WriteFile(out, []byte(pushed.String()+"\n"), 0o644)
}
