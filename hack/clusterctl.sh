#!/usr/bin/env bash
# Builds the real clusterctl from the Go module proxy (the same Cluster API version as go.mod, so
# the tests exercise the clusterctl our users run) and caches it outside the repository.
# Prints the binary's path. Warm runs cost nothing: the build is skipped when it is cached.
#
# clusterctl cannot be built inside our module without adding its dependencies (viper, envsubst,
# ...) to go.mod, and `go install …@version` is refused because cluster-api's go.mod has a
# `replace` line; a throwaway module sidesteps both.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [[ -z "${CLUSTERCTL_VERSION:-}" ]]; then
  CLUSTERCTL_VERSION="$(cd "$repo_root" && go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api)"
fi
CACHE_ROOT="${CABPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cabpi}"
BIN="$CACHE_ROOT/tools/clusterctl-${CLUSTERCTL_VERSION}"

if [[ -x "$BIN" ]]; then
  echo "$BIN"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN="${GOTOOLCHAIN:-local}"

echo "building clusterctl ${CLUSTERCTL_VERSION} into $BIN (once; about a minute)" >&2
cd "$work"
go mod init clusterctl-build >/dev/null 2>&1
# cluster-api requires its api module at a placeholder version replaced by a local path: pin it.
go get -tool "sigs.k8s.io/cluster-api/cmd/clusterctl@${CLUSTERCTL_VERSION}" \
  "sigs.k8s.io/cluster-api/api@${CLUSTERCTL_VERSION}" >&2

minor="${CLUSTERCTL_VERSION#v1.}"; minor="${minor%%.*}"
pkg=sigs.k8s.io/cluster-api/version
go build -trimpath -o "$work/clusterctl" \
  -ldflags "-s -w -X ${pkg}.gitVersion=${CLUSTERCTL_VERSION} -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor} -X ${pkg}.gitTreeState=clean" \
  sigs.k8s.io/cluster-api/cmd/clusterctl

# Move into place only once built, so a failed build never leaves something that looks cached.
mkdir -p "$(dirname "$BIN")"
mv "$work/clusterctl" "$BIN.tmp.$$" && mv "$BIN.tmp.$$" "$BIN"
echo "$BIN"
