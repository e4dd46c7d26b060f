package nodeupdate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	cabpiv1 "github.com/cabpi/cluster-api-bootstrap-provider-ignition/apis/v1alpha1"
	"github.com/cabpi/cluster-api-bootstrap-provider-ignition/internal/nodelayout"
)

// fetchUpdate downloads what the update swaps in and checks it against the digests its mirror
// publishes, before anything on the node changes: the sysext image into the extensions
// directory (where first boot keeps it too), the release binaries into the stage directory. A
// file there already that matches is kept (a resumed or repeated update).
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
	sums, err := n.download(ctx, l.SumsURL)
	var missing *NotFoundError
	if errors.As(err, &missing) {
		return &nodelayout.DigestError{Name: l.Image, Why: "no digest list at " + l.SumsURL}
	}
	if err != nil {
		return err
	}
	digest, err := nodelayout.DigestInList(sums, l.Image)
	if err != nil {
		return err
	}
	if err := n.fetchVerified(ctx, l.ImageURL, l.ImagePath, l.Image, digest, 0o644); err != nil {
		return err
	}
	if u.Kubernetes.Sysext == nil || !u.Kubernetes.Sysext.Sysupdate {
		return nil
	}
	// systemd-sysupdate's transfer file for the new minor, from the new mirror: what first boot
	// downloads too (Ignition). Staged here, swapped in with the image.
	transfer, err := n.download(ctx, l.TransferURL)
	if err != nil {
		return fmt.Errorf("the sysupdate transfer file %s: %w", l.TransferURL, err)
	}
	return n.disk.writeFile(path.Join(stageDir, l.Transfer), transfer, 0o644)
}

func (n *Node) fetchBinaries(ctx context.Context, u Update) error {
	b := nodelayout.BinariesFor(u.Kubernetes, u.Version)
	stage := path.Join(stageDir, u.Version)
	for _, name := range b.Names {
		sumURL := b.URL(name) + ".sha256"
		sum, err := n.download(ctx, sumURL)
		var missing *NotFoundError
		if errors.As(err, &missing) {
			return &nodelayout.DigestError{Name: name, Why: "no digest at " + sumURL}
		}
		if err != nil {
			return err
		}
		digest, err := nodelayout.DigestInFile(sum, name)
		if err != nil {
			return err
		}
		if err := n.disk.writeFile(path.Join(stage, name+".sha256"), sum, 0o600); err != nil {
			return err
		}
		if err := n.fetchVerified(ctx, b.URL(name), path.Join(stage, name), name, digest, 0o600); err != nil {
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
