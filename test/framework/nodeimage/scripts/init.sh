#!/bin/bash
# PID 1 of a test node, before systemd: makes the cgroup v1 controllers writable, then becomes
# systemd (exec keeps PID 1).
#
# systemd-nspawn mounts the host's (hybrid) v1 controllers read-only unless the machine has its
# own user namespace; the kubelet and runc must create cgroups in them (kubepods.slice, the
# pods' and containers' groups). A bind remount in the machine's own mount namespace lifts that
# for this machine only. It is done here, before systemd starts, so that systemd and everything
# it starts find the controllers as they stay, with no unit ordering to get right.
set -euo pipefail
for c in /sys/fs/cgroup/*; do
  [[ -d "$c" && ! -L "$c" ]] || continue
  case "$(basename "$c")" in unified|systemd) continue ;; esac
  mount -o remount,bind,rw "$c"
done
exec /lib/systemd/systemd "$@"
