#!/bin/bash
# in-cgroups.sh PROCS... -- COMMAND [ARG...]: moves this process into each cgroup whose
# cgroup.procs file is given, then becomes COMMAND (exec keeps the PID): COMMAND starts in those
# groups, and whatever it reads of its own cgroup is theirs from its first instruction.
set -euo pipefail
while [[ $# -gt 0 && "$1" != "--" ]]; do
  echo "$$" >"$1"
  shift
done
shift
exec "$@"
