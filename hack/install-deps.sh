#!/usr/bin/env bash
# Installs the Debian packages the build and tests need. Idempotent and quiet when everything is
# already there: libblkid-dev, which the cgo build of ignition-apply links against; systemd
# (systemd-analyze, systemctl), which reads and verifies the rendered units offline in make test
# (test/framework/bootcheck, ADR 029); gettext-base (envsubst), which the cloud providers' Flatcar
# pattern runs in the bootstrap script make test runs; util-linux (nsenter) and
# systemd-container (systemd-nspawn) and debootstrap for the real-node suite (make e2e), plus
# iproute2 for its bridge, squashfs-tools (mksquashfs) for the Kubernetes system extension
# images it serves its nodes and e2fsprogs (mkfs.ext4) for each node's own disk (ADR 036).
set -euo pipefail

packages=(libblkid-dev systemd util-linux gettext-base systemd-container debootstrap iproute2 squashfs-tools e2fsprogs)

missing=()
for p in "${packages[@]}"; do
  # dpkg -s also reports removed-but-configured packages; require the installed state.
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

sudo=()
if [[ "$(id -u)" -ne 0 ]]; then
  sudo=(sudo)
fi
echo "installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update >&2
"${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >&2
