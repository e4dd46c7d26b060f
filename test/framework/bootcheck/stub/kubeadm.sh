#!/bin/bash
# Stand-in for kubeadm, installed by test/framework/bootcheck (RunScript) in one directory only.
# It records how it was called, then exits with the status the test chose. RunScript puts the
# assignments of records and sentinel (quoted) right after the first line.
#
# Only bash builtins are used: the stub runs with the PATH the script gave kubeadm, which is part
# of what is under test, so it must not depend on finding other programs.

# Claim the next call number: with noclobber, creating an existing file fails, atomically.
set -o noclobber
n=0
until { : >"$records/calls/$n"; } 2>/dev/null; do
  n=$((n + 1))
  if ((n > 1000)); then
    echo "bootcheck kubeadm stub: cannot record the call in $records/calls" >&2
    exit 125
  fi
done
set +o noclobber
call="$records/calls/$n"

# One file per field, so that the simulator needs no parsing beyond reading them.
printf '%s' "$0" >"$call.path"
printf '%s' "$PWD" >"$call.cwd"
if [[ -v PATH ]]; then
  printf '%s' "$PATH" >"$call.PATH"
fi
if (($# > 0)); then
  printf '%s\0' "$@" >"$call.args" # NUL-terminated: arguments may hold newlines
else
  : >"$call.args"
fi
if [[ -e $sentinel || -L $sentinel ]]; then
  : >"$call.sentinel"
fi

# kubeadm reads --config FILE and --config=FILE; the last one wins.
config=
previous=
for arg in "$@"; do
  if [[ $previous == --config ]]; then
    config=$arg
  fi
  case $arg in --config=*) config=${arg#--config=} ;; esac
  previous=$arg
done
if [[ -n $config ]]; then
  printf '%s' "$config" >"$call.config-path"
  if [[ -f $config && -r $config ]]; then
    content=
    IFS= read -r -d '' content <"$config" # reads to the end of the file, newlines included
    printf '%s' "$content" >"$call.config"
  fi
fi

status=0
read -r status <"$records/exit"
exit "$status"
