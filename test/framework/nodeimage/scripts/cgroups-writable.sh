#!/bin/bash
# Makes the cgroup v1 controllers writable inside this systemd-nspawn machine. nspawn mounts the
# host's (hybrid) controllers read-only; the kubelet and runc must create cgroups in them
# (kubepods.slice, the pods' and containers' groups). A bind remount in the machine's own mount
# namespace lifts that for this machine only.
set -euo pipefail
for c in /sys/fs/cgroup/*; do
  [[ -d "$c" && ! -L "$c" ]] || continue
  case "$(basename "$c")" in unified|systemd) continue ;; esac
  mount -o remount,bind,rw "$c"
done
