#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy (setup-envtest cannot
# download here) and caches them outside the repository. Prints the asset directory.
# Warm runs cost nothing: the build is skipped when the binaries are already cached.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.6.16}"
CACHE_ROOT="${CABPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cabpi}"
ASSETS="$CACHE_ROOT/envtest/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"

if [[ -x "$ASSETS/kube-apiserver" && -x "$ASSETS/etcd" ]]; then
  echo "$ASSETS"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local

minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
staging="v0.${K8S_VERSION#v1.}"

build_etcd() {
  mkdir -p "$work/etcd" && cd "$work/etcd"
  go mod init envtest-etcd >/dev/null 2>&1
  go get -tool "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >&2
  go build -trimpath -ldflags "-s -w" -o "$work/out/etcd" go.etcd.io/etcd/server/v3
}

build_apiserver() {
  mkdir -p "$work/k8s" && cd "$work/k8s"
  go mod init envtest-k8s >/dev/null 2>&1
  # k8s.io/kubernetes replaces its staging modules with local paths; pin them to the released tags.
  gomod="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/.*"GoMod": "\(.*\)",*/\1/p')"
  sed -n '/^replace (/,/^)/p' "$gomod" | awk '/=> \.\/staging/ {print $1}' | grep -v '^k8s.io/sample-' |
    while read -r m; do go mod edit -replace "${m}=${m}@${staging}"; done
  go get -tool "k8s.io/kubernetes/cmd/kube-apiserver@${K8S_VERSION}" >&2
  local x=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    x+=" -X ${p}.gitVersion=${K8S_VERSION} -X ${p}.gitMajor=1 -X ${p}.gitMinor=${minor} -X ${p}.gitTreeState=clean"
  done
  go build -trimpath -ldflags "-s -w${x}" -o "$work/out/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver
}

mkdir -p "$work/out"
echo "building etcd ${ETCD_VERSION} and kube-apiserver ${K8S_VERSION} into $ASSETS (once; several minutes)" >&2
(build_etcd)
(build_apiserver)
mkdir -p "$(dirname "$ASSETS")"
rm -rf "$ASSETS.tmp" && mv "$work/out" "$ASSETS.tmp" && mv "$ASSETS.tmp" "$ASSETS"
echo "$ASSETS"
