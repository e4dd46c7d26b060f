#!/bin/bash
# Configures the machine's one link (host0, the veth systemd-nspawn puts into the suite's
# bridge) with the address the infrastructure assigned it, as a cloud image's network agent does
# with what DHCP or the metadata service says. No default route: the node reaches its /24 only.
# systemd-networkd is masked in the image: with /sys writable (the kubelet needs it) it waits
# for udev to initialize links, and udev does not run in the container.
set -euo pipefail
# shellcheck source=/dev/null
. /etc/cabpi-test/instance.env
ip link set lo up
ip link set host0 up
ip address replace "$ADDRESS" dev host0
