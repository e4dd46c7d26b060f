#!/bin/bash
# Configures the machine's one link (host0, the veth systemd-nspawn puts into the suite's
# bridge) with the address the infrastructure assigned it, as a cloud image's network agent does
# with what DHCP or the metadata service says. The default route points at GATEWAY, an address
# of the /24 that nobody holds: the kubelet takes the node's address from the default route's
# link, and what the node sends beyond the /24 is never answered.
# systemd-networkd is masked in the image: with /sys writable (the kubelet needs it) it waits
# for udev to initialize links, and udev does not run in the container.
set -euo pipefail
# shellcheck source=/dev/null
. /etc/cabpi-test/instance.env
ip link set lo up
ip link set host0 up
ip address replace "$ADDRESS" dev host0
ip route replace default via "$GATEWAY" dev host0
