#!/usr/bin/env bash
# Builds etcd at one version from the Go module proxy and caches it outside the repository,
# keyed by version. Prints the directory holding `etcd`.
#   usage: etcd-binary.sh VERSION      e.g. etcd-binary.sh v3.6.5
# Built into a temp dir, moved into place only when built.
set -euo pipefail

version="$1"
CACHE_ROOT="${CABPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cabpi}"
dir="$CACHE_ROOT/etcd/$version"
if [[ -x "$dir/etcd" ]]; then
  echo "$dir"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
echo "building etcd ${version} into $dir (once; a few minutes)" >&2
mkdir -p "$work/mod" "$work/out"
(
  cd "$work/mod"
  go mod init etcd-binary >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@${version}" >&2
  go build -trimpath -ldflags "-s -w" -o "$work/out/etcd" go.etcd.io/etcd/server/v3
)
mkdir -p "$dir"
mv "$work/out/etcd" "$dir/.etcd.$$" && mv -f "$dir/.etcd.$$" "$dir/etcd"
echo "$dir"
