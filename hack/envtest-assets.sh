#!/usr/bin/env bash
# Builds kube-apiserver and etcd for envtest from the Go module proxy (setup-envtest cannot
# download here) and caches them outside the repository. Prints the asset directory.
# Warm runs cost nothing: the build is skipped when the binaries are already cached.
# kube-apiserver comes from hack/kube-binaries.sh (the Kubernetes recipe, cached by version),
# etcd from hack/etcd-binary.sh.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
# The nodes' versions unless K8S_VERSION or ETCD_VERSION say otherwise: one build serves both.
k8s_override="${K8S_VERSION:-}" etcd_override="${ETCD_VERSION:-}"
# shellcheck source=versions.env
source "$here/versions.env"
K8S_VERSION="${k8s_override:-$KUBERNETES_VERSION}"
ETCD_VERSION="${etcd_override:-$ETCD_VERSION}"
CACHE_ROOT="${CABPI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/cabpi}"
ASSETS="$CACHE_ROOT/envtest/k8s-${K8S_VERSION}-etcd-${ETCD_VERSION}"

if [[ -x "$ASSETS/kube-apiserver" && -x "$ASSETS/etcd" ]]; then
  echo "$ASSETS"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export CGO_ENABLED=0 GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local

echo "building etcd ${ETCD_VERSION} and kube-apiserver ${K8S_VERSION} into $ASSETS (once; several minutes)" >&2
mkdir -p "$work/out"
etcd="$(bash "$here/etcd-binary.sh" "$ETCD_VERSION")"
ln "$etcd/etcd" "$work/out/etcd" 2>/dev/null || cp "$etcd/etcd" "$work/out/etcd"
kube="$(bash "$here/kube-binaries.sh" "$K8S_VERSION" kube-apiserver)"
ln "$kube/kube-apiserver" "$work/out/kube-apiserver" 2>/dev/null || cp "$kube/kube-apiserver" "$work/out/kube-apiserver"
mkdir -p "$(dirname "$ASSETS")"
# A concurrent run may have finished first: then its directory stands and ours goes.
if ! mv -T "$work/out" "$ASSETS" 2>/dev/null; then
  [[ -x "$ASSETS/kube-apiserver" && -x "$ASSETS/etcd" ]] || { echo "cannot move the assets into $ASSETS" >&2; exit 1; }
fi
echo "$ASSETS"
