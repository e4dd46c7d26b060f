#!/usr/bin/env bash
# Builds Cluster API's binaries from the Go module proxy at the Cluster API version of go.mod
# (unless CAPI_VERSION says otherwise), in one go build invocation, and caches them outside the
# repository, keyed by version: clusterctl (the one our users run; make test drives it) and the
# core manager (the main package sigs.k8s.io/cluster-api/core, what
# registry.k8s.io/cluster-api/cluster-api-controller runs; make e2e packs it into that image with
# hack/image -binary). Prints the directory.
#
# They cannot be built inside our module without adding their dependencies (viper, envsubst, ...)
# to go.mod, and `go install …@version` is refused because cluster-api's go.mod has a `replace`
# line (its api module at a placeholder version): a throwaway module with the api module pinned
# to the tag sidesteps both.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${CAPI_VERSION:-}" ]]; then
  CAPI_VERSION="$(cd "$repo_root" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
fi
CACHE_ROOT="${CABPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cabpi}"
dir="$CACHE_ROOT/capi/${CAPI_VERSION}"

if [[ -x "$dir/clusterctl" && -x "$dir/manager" ]]; then
  echo "$dir"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

echo "building clusterctl and Cluster API's core manager ${CAPI_VERSION} into $dir (once; a few minutes)" >&2
cd "$work"
go mod init capi-binaries >/dev/null 2>&1
go mod edit -replace "sigs.k8s.io/cluster-api/api=sigs.k8s.io/cluster-api/api@${CAPI_VERSION}"
go get -tool "sigs.k8s.io/cluster-api/cmd/clusterctl@${CAPI_VERSION}" "sigs.k8s.io/cluster-api/core@${CAPI_VERSION}" >&2

minor="${CAPI_VERSION#v1.}"; minor="${minor%%.*}"
pkg=sigs.k8s.io/cluster-api/version
mkdir -p "$work/out"
# The flags and build tag of Cluster API's own Dockerfile (static, stripped, the version stamped).
go build -tags=fieldsv1string -trimpath -o "$work/out/" \
  -ldflags "-s -w -extldflags '-static' -X ${pkg}.gitVersion=${CAPI_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean" \
  sigs.k8s.io/cluster-api/cmd/clusterctl sigs.k8s.io/cluster-api/core
# go build names a package's binary after its last element: core → core.
mv "$work/out/core" "$work/out/manager"

# Each binary lands whole (a rename), so a failed build never leaves something that looks cached.
mkdir -p "$dir"
for b in clusterctl manager; do mv "$work/out/$b" "$dir/.$b.$$" && mv -f "$dir/.$b.$$" "$dir/$b"; done
echo "$dir"
