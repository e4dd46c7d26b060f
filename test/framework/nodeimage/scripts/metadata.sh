#!/bin/bash
# Emulates the platform agent that reads the cloud's metadata at boot (Flatcar's
# coreos-metadata, Fedora CoreOS' afterburn) for the OpenStack platform: it writes the
# attributes the infrastructure provider handed the machine, under the variant's names.
#   usage: metadata.sh OUTPUT PREFIX     e.g. metadata.sh /run/metadata/flatcar COREOS_OPENSTACK
# The test infrastructure provider hands the machine /etc/cabpi-test/instance.env, with
# HOSTNAME and INSTANCE_UUID, as a metadata service would answer them.
set -euo pipefail
out="$1" prefix="$2"
# shellcheck source=/dev/null
. /etc/cabpi-test/instance.env
mkdir -p "$(dirname "$out")"
tmp="$out.tmp"
printf '%s_HOSTNAME=%s\n%s_INSTANCE_UUID=%s\n' "$prefix" "$HOSTNAME" "$prefix" "$INSTANCE_UUID" >"$tmp"
mv "$tmp" "$out"
