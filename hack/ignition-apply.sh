#!/usr/bin/env bash
# Builds the real Ignition engine (ignition-apply) from the Go module proxy and caches it outside
# the repository, keyed by version. Prints the path of ignition-apply on stdout; build logs go to
# stderr. Warm runs cost nothing: the build is skipped when the binary is cached.
#
# ignition-apply is the ignition binary invoked under that name; it needs cgo and libblkid
# (hack/install-deps.sh installs it).
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${IGNITION_VER:-}" ]]; then
  IGNITION_VER="$(cd "$repo_root" && GOFLAGS=-mod=mod go list -m -f '{{.Version}}' github.com/coreos/ignition/v2)"
fi
CACHE_ROOT="${CABPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cabpi}"
dest="$CACHE_ROOT/tools/ignition-${IGNITION_VER}"

if [[ -x "$dest/ignition" && -L "$dest/ignition-apply" ]]; then
  echo "$dest/ignition-apply"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=1 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local

echo "building ignition ${IGNITION_VER} into $dest (once; a few minutes)" >&2
(
  mkdir -p "$work/mod" && cd "$work/mod"
  go mod init ignition-apply-build >/dev/null 2>&1
  go get "github.com/coreos/ignition/v2/internal@${IGNITION_VER}" >&2
  # Ignition reports its version from this variable; without it the binary says "was not built properly".
  go build -trimpath \
    -ldflags "-s -w -X github.com/coreos/ignition/v2/internal/version.Raw=${IGNITION_VER}" \
    -o "$work/out/ignition" github.com/coreos/ignition/v2/internal
)
ln -s ignition "$work/out/ignition-apply"

# Move into place only after a complete build, so a failed run never looks cached.
mkdir -p "$(dirname "$dest")"
rm -rf "$dest.tmp" "$dest"
mv "$work/out" "$dest.tmp" && mv "$dest.tmp" "$dest"
echo "$dest/ignition-apply"
