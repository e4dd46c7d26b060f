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

cached() { [[ -x "$dest/ignition" && -L "$dest/ignition-apply" ]]; }
if cached; then
  echo "$dest/ignition-apply"
  exit 0
fi

mkdir -p "$(dirname "$dest")"
work="$(mktemp -d)"
# The build goes into a directory next to $dest (the same file system), renamed into place once
# complete: a run never sees half a build, and never removes one another run may be using.
stage="$(mktemp -d "$dest.build.XXXXXX")"
trap 'rm -rf "$work" "$stage"' EXIT
chmod 755 "$stage" # mktemp's 700 would be the cached directory's mode
export CGO_ENABLED=1 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local

echo "building ignition ${IGNITION_VER} into $dest (once; a few minutes)" >&2
(
  mkdir -p "$work/mod" && cd "$work/mod"
  go mod init ignition-apply-build >/dev/null 2>&1
  go get "github.com/coreos/ignition/v2/internal@${IGNITION_VER}" >&2
  # Ignition reports its version from this variable; without it the binary says "was not built properly".
  go build -trimpath \
    -ldflags "-s -w -X github.com/coreos/ignition/v2/internal/version.Raw=${IGNITION_VER}" \
    -o "$stage/ignition" github.com/coreos/ignition/v2/internal
)
ln -s ignition "$stage/ignition-apply"

# rename(2) of a directory fails when $dest exists and is not empty: a concurrent run finished
# first, and its build stands (ours goes with the trap). An incomplete $dest (left by an older
# version of this script) is moved aside first; no run uses it.
if ! mv -T "$stage" "$dest" 2>/dev/null; then
  if ! cached; then
    aside="$(mktemp -u "$dest.broken.XXXXXX")"
    mv -T "$dest" "$aside" 2>/dev/null && rm -rf "$aside"
    mv -T "$stage" "$dest" 2>/dev/null || true
  fi
  cached || { echo "cannot move the build into $dest" >&2; exit 1; }
fi
echo "$dest/ignition-apply"
