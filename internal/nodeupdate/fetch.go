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

package nodeupdate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"path"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// fetchUpdate downloads what the update swaps in and checks it against the digests the update
// pins (Update.Digests: cabpi's catalogue and the user's, never the mirror's lists), before
// anything on the node changes: the sysext image into the extensions directory (where first
// boot keeps it too), the release binaries into the stage directory. A file there already that
// matches is kept (a resumed or repeated update).
func (n *Node) fetchUpdate(ctx context.Context, u Update) error {
	if u.Source() == cabpiv1.KubernetesSourceSysext {
		return n.fetchSysext(ctx, u)
	}
	return n.fetchBinaries(ctx, u)
}

func (n *Node) fetchSysext(ctx context.Context, u Update) error {
	l, err := nodelayout.SysextFor(u.Kubernetes, u.Version)
	if err != nil {
		return err
	}
	downloads, err := u.downloads()
	if err != nil {
		return err
	}
	image := downloads[0]
	digest, err := u.pin(image)
	if err != nil {
		return err
	}
	if err := n.fetchVerified(ctx, image.URL, l.ImagePath, image.Name, digest, 0o644); err != nil {
		return err
	}
	if u.Kubernetes.Sysext == nil || !u.Kubernetes.Sysext.Sysupdate {
		return nil
	}
	// systemd-sysupdate's transfer file for the new minor, from the new mirror: what first boot
	// downloads too (Ignition), checked against its pin when it has one. Staged here, swapped
	// in with the image.
	transfer, err := n.download(ctx, l.TransferURL)
	if err != nil {
		return fmt.Errorf("the sysupdate transfer file %s: %w", l.TransferURL, err)
	}
	if sum, pinned := u.Digests[downloads[1].Rel]; pinned {
		if got := sha256.Sum256(transfer); hex.EncodeToString(got[:]) != sum {
			return &nodelayout.DigestError{Name: l.Transfer, Why: sum}
		}
	}
	return n.disk.writeFile(path.Join(stageDir, l.Transfer), transfer, 0o644)
}

func (n *Node) fetchBinaries(ctx context.Context, u Update) error {
	stage := path.Join(stageDir, u.Version)
	for _, d := range nodelayout.BinariesFor(u.Kubernetes, u.Version).Downloads() {
		digest, err := u.pin(d)
		if err != nil {
			return err
		}
		if err := n.fetchVerified(ctx, d.URL, path.Join(stage, d.Name), d.Name, digest, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// fetchVerified puts the file at url in dst once it matches digest: a dst that matches is kept;
// otherwise it is downloaded beside dst, checked, and renamed into place (a mismatch is removed).
func (n *Node) fetchVerified(ctx context.Context, url, dst, name, digest string, mode fs.FileMode) error {
	if n.disk.exists(dst) && nodelayout.VerifyFile(n.disk.path(dst), name, digest) == nil {
		n.logf("%s is there already", dst)
		return nil
	}
	body, err := n.fetch.Get(ctx, url)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", url, err)
	}
	defer body.Close()
	part := dst + ".part"
	if err := n.disk.writeFrom(part, body, mode); err != nil {
		return fmt.Errorf("downloading %s: %w", url, err)
	}
	if err := nodelayout.VerifyFile(n.disk.path(part), name, digest); err != nil {
		_ = n.disk.remove(part)
		return err
	}
	return n.disk.rename(part, dst)
}

// download reads a small file (a digest list, a transfer file) whole.
func (n *Node) download(ctx context.Context, url string) ([]byte, error) {
	body, err := n.fetch.Get(ctx, url)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", url, err)
	}
	return data, nil
}
