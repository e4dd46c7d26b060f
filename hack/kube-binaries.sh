#!/usr/bin/env bash
# Builds Kubernetes node and control-plane binaries (kubeadm, kubelet, kube-controller-manager,
# kube-apiserver, kubectl: any of k8s.io/kubernetes/cmd/*) at one version from the Go module proxy
# and caches them outside the repository, keyed by version. Prints the directory.
#   usage: kube-binaries.sh VERSION CMD...     e.g. kube-binaries.sh v1.34.4 kubeadm kubelet
# The same throwaway-module recipe as hack/envtest-assets.sh (k8s.io/kubernetes' staging modules
# pinned to the released tags). Built into a temp dir, moved into place only when all built.
set -euo pipefail

version="$1"; shift
CACHE_ROOT="${CABPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cabpi}"
dir="$CACHE_ROOT/kube/$version"

missing=()
for c in "$@"; do [[ -x "$dir/$c" ]] || missing+=("$c"); done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "$dir"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local
minor="${version#v1.}"; minor="${minor%%.*}"
staging="v0.${version#v1.}"

echo "building ${missing[*]} ${version} into $dir (once; several minutes)" >&2
mkdir -p "$work/mod" "$work/out" && cd "$work/mod"
go mod init kube-binaries >/dev/null 2>&1
gomod="$(go mod download -json "k8s.io/kubernetes@${version}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
sed -n '/^replace (/,/^)/p' "$gomod" | awk '/=> \.\/staging/ {print $1}' | grep -v '^k8s.io/sample-' |
  while read -r m; do go mod edit -replace "${m}=${m}@${staging}"; done
x=""
for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  x+=" -X ${p}.gitVersion=${version} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor} -X ${p}.gitTreeState=clean"
done
pkgs=()
for c in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/${c}"); done
go get -tool "${pkgs[@]/%/@${version}}" >&2
# One invocation for all of them: the packages they share compile once, and links run in parallel.
go build -trimpath -ldflags "-s -w${x}" -o "$work/out/" "${pkgs[@]}"
mkdir -p "$dir"
# Each binary lands whole (a rename): a concurrent run may replace it with its own, equal build.
for c in "${missing[@]}"; do mv "$work/out/$c" "$dir/.$c.$$" && mv -f "$dir/.$c.$$" "$dir/$c"; done
echo "$dir"
