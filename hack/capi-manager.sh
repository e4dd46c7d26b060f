#!/usr/bin/env bash
# Builds Cluster API's core manager (the main package sigs.k8s.io/cluster-api/core, what
# registry.k8s.io/cluster-api/cluster-api-controller runs) from the Go module proxy, at the
# Cluster API version of go.mod unless CAPI_VERSION says otherwise, and caches it outside the
# repository. Prints the binary's path. The real-node suite packs it into an image
# (hack/image -binary) for the management cluster it installs with clusterctl.
#
# The same throwaway-module recipe as hack/clusterctl.sh: cluster-api requires its api module at
# a placeholder version replaced by a local path, so the api module is pinned to the tag.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${CAPI_VERSION:-}" ]]; then
  CAPI_VERSION="$(cd "$repo_root" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
fi
CACHE_ROOT="${CABPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cabpi}"
BIN="$CACHE_ROOT/capi/${CAPI_VERSION}/manager"

if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

echo "building Cluster API's core manager ${CAPI_VERSION} into $BIN (once; a few minutes)" >&2
cd "$work"
go mod init capi-manager-build >/dev/null 2>&1
go mod edit -replace "sigs.k8s.io/cluster-api/api=sigs.k8s.io/cluster-api/api@${CAPI_VERSION}"
go get -tool "sigs.k8s.io/cluster-api/core@${CAPI_VERSION}" >&2

minor="${CAPI_VERSION#v1.}"; minor="${minor%%.*}"
pkg=sigs.k8s.io/cluster-api/version
# The flags of Cluster API's own Dockerfile: static, stripped, the version stamped.
go build -tags=fieldsv1string -trimpath -o "$work/manager" \
  -ldflags "-s -w -extldflags '-static' -X ${pkg}.gitVersion=${CAPI_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean" \
  sigs.k8s.io/cluster-api/core

mkdir -p "$(dirname "$BIN")"
mv "$work/manager" "$BIN.tmp.$$" && mv "$BIN.tmp.$$" "$BIN"
echo "$BIN"
