#!/bin/bash
# Written by cabpi (spec.kubernetes.sysext.sysupdate), run before systemd-sysupdate.service: stages
# the newest patch release of the minor of the Kubernetes system extension and, when it changed, asks
# for a reboot (/run/reboot-required, which kured watches).
set -euo pipefail
before=$(readlink --canonicalize /etc/extensions/kubernetes.raw)
/usr/lib/systemd/systemd-sysupdate --component=kubernetes update
after=$(readlink --canonicalize /etc/extensions/kubernetes.raw)
if [[ $before != "$after" ]]; then
  touch /run/reboot-required
fi
