#!/bin/bash
# Mounts /etc noexec, as Flatcar 4628 and later do: anything that executes a file under /etc
# (a unit's ExecStart=/etc/kubeadm.sh) fails with "Permission denied" here as it does there.
set -euo pipefail
mount --rbind /etc /etc  # with what is mounted below it (the transient /etc/machine-id of a first boot)
mount -o remount,bind,noexec /etc
