#!/bin/bash
# Makes the cgroup v1 controllers writable inside this systemd-nspawn machine. nspawn mounts the
# host's (hybrid) controllers read-only; the kubelet and runc must create cgroups in them
# (kubepods.slice, the pods' and containers' groups). A bind remount in the machine's own mount
# namespace lifts that for this machine only.
# systemd could not create system.slice in a controller while it was read-only, and takes it as
# made: a unit it starts once the controller is writable would find no parent group to join
# ("Failed to attach to cgroup /system.slice/UNIT: No such file or directory"). So the slice's
# group is made here, with the remount.
set -euo pipefail
for c in /sys/fs/cgroup/*; do
  [[ -d "$c" && ! -L "$c" ]] || continue
  case "$(basename "$c")" in unified|systemd) continue ;; esac
  mount -o remount,bind,rw "$c"
  mkdir -p "$c/system.slice"
done
