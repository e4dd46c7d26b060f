#!/usr/bin/env bash
# Prints the path of the real clusterctl, built from the Go module proxy at the Cluster API
# version of go.mod (hack/capi-binaries.sh, cached), so that the tests exercise the clusterctl
# our users run.
set -euo pipefail
echo "$(bash "$(dirname "${BASH_SOURCE[0]}")/capi-binaries.sh")/clusterctl"
