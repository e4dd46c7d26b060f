#!/bin/bash
# cabpi in-place Kubernetes update (ignition/inplace.go), run by a transient systemd unit that the
# update Pod starts, so that it outlives the kubelet restart and the Pod. Arguments: sysext VERSION
# IMAGE-NAME IMAGE-URL SHA256SUMS-URL, or binaries VERSION RELEASE-DIR-URL NAME...
# One run at a time (a lock). Nothing is swapped before every download matches its published
# SHA-256; from the backup on, a journal on the disk records the swap, so a run that finds it
# (the node rebooted, the unit was killed) goes on from there; every failure after the backup
# rolls back to what the backup holds, so the node never ends with part of each version.
# The result is one line in the state directory: ok VERSION, or failed: WHY.
set -euo pipefail

# cabpi_inplace_layout sets where things are (from the Go constants) and the health wait.
cabpi_inplace_layout() {
  state=$1 sysext_dir=$2 sysext_link=$3 bin_dir=$4 kubelet_config=$5 kubelet_flags=$6 health_timeout=$7
  export PATH="${PATH:+${PATH}:}$bin_dir"
}

cabpi_inplace_update() {
  source=$1 version=$2
  shift 2
  where=("$@")
  names=(kubeadm kubelet)
  if [[ $source == binaries ]]; then
    names=("${where[@]:1}")
  fi
  if [[ $source != sysext && $source != binaries ]]; then
    echo "cabpi: unknown source $source" >&2
    exit 2
  fi
  if [[ $source == binaries ]]; then
    # As at first boot (cabpi_install_binaries): the binaries in /opt/bin are the ones run.
    PATH="$bin_dir:$PATH"
  fi
  mkdir -p -m 0700 "$state"
  exec 9>"$state/lock"
  flock 9
  rm -f "$state/result"
  trap cabpi_on_exit EXIT
  cabpi_failed=
  echo "cabpi: updating Kubernetes ($source) to $version"

  if [[ -s $state/journal ]]; then
    cabpi_resume
  fi
  if cabpi_at_version; then
    echo "cabpi: kubeadm and the kubelet are $version already"
    cabpi_step "kubelet health" cabpi_wait_healthy
    if [[ -n $cabpi_failed ]]; then
      cabpi_end 1 "failed: $cabpi_failed: $cabpi_why"
    fi
    cabpi_succeeded
  fi

  cabpi_step fetch "cabpi_fetch_$source"
  if [[ -n $cabpi_failed ]]; then
    if [[ $cabpi_why == *" does not match its published SHA-256"* ]]; then
      cabpi_end 1 "failed: $cabpi_why"
    fi
    cabpi_end 1 "failed: fetch: $cabpi_why"
  fi
  old=$(kubelet --version 2>/dev/null) || old=
  old=${old#Kubernetes }
  old=${old:-an unknown version}
  cabpi_step backup cabpi_backup
  if [[ -n $cabpi_failed ]]; then
    rm -rf "$state/backup"
    cabpi_end 1 "failed: backup: $cabpi_why"
  fi
  cabpi_forward
}

# cabpi_resume handles the journal of a run that stopped after its backup: the same update goes
# on from the swap (cabpi_forward ends the run); any other is rolled back first.
cabpi_resume() {
  local entry
  entry=$(<"$state/journal")
  if [[ ! -s $state/backup/old || ! -s $state/backup/source ]]; then
    cabpi_end 1 "failed: the journal ($entry) has no backup beside it, so the update can neither go on nor roll back"
  fi
  old=$(<"$state/backup/old")
  if [[ $entry == "swapping from $old to $version" && $(<"$state/backup/source") == "$source" ]]; then
    echo "cabpi: resuming an update that stopped after its backup ($entry)"
    cabpi_forward
  fi
  echo "cabpi: rolling back an update that stopped after its backup ($entry)"
  cabpi_rollback
  if [[ -n $cabpi_failed ]]; then
    cabpi_end 1 "failed: an interrupted update ($entry) could not be rolled back: $cabpi_failed: $cabpi_why"
  fi
  cabpi_clear
}

# cabpi_forward swaps in the new version and brings the kubelet up on it; it ends the run, rolled
# back on any failure.
cabpi_forward() {
  local step why
  cabpi_step swap "cabpi_swap_$source"
  # Workers: the kubelet client certificate rotates by itself; kubeadm renews nothing.
  cabpi_step "kubeadm upgrade node" kubeadm upgrade node --certificate-renewal=false
  cabpi_step "kubelet restart" systemctl restart kubelet.service
  cabpi_step "kubelet health" cabpi_wait_healthy
  cabpi_step "version check" cabpi_confirm
  if [[ -z $cabpi_failed ]]; then
    cabpi_succeeded
  fi
  step=$cabpi_failed why=$cabpi_why
  echo "cabpi: $step failed: $why; rolling back to $old" >&2
  cabpi_rollback
  if [[ -n $cabpi_failed ]]; then
    cabpi_end 1 "failed: $step: $why; rolling back to $old failed too: $cabpi_failed: $cabpi_why"
  fi
  cabpi_clear
  cabpi_end 1 "failed: $step: $why; rolled back to $old"
}

# cabpi_rollback restores what the backup holds and brings the kubelet up on it.
cabpi_rollback() {
  cabpi_failed=
  cabpi_step restore cabpi_restore
  cabpi_step "kubelet restart" systemctl restart kubelet.service
  cabpi_step "kubelet health" cabpi_wait_healthy
}

# cabpi_step NAME COMMAND... runs the command in a subshell that stops at its first failure,
# unless an earlier step failed. A failure sets cabpi_failed (the step) and cabpi_why (what
# cabpi_fail said, else the last line of error output). It returns 0 either way: a function
# called as a condition would run with errexit off.
cabpi_step() {
  local name=$1 rc
  shift
  [[ -z $cabpi_failed ]] || return 0
  echo "cabpi: $name"
  rm -f "$state/why"
  set +e
  { (set -e; "$@") 2>&1 1>&3 | tee "$state/step.err" >&2; } 3>&1
  rc=$?
  set -e
  ((rc != 0)) || return 0
  cabpi_failed=$name
  cabpi_why=
  if [[ -s $state/why ]]; then
    cabpi_why=$(<"$state/why")
  else
    cabpi_why=$(grep -v '^[[:space:]]*$' "$state/step.err" | tail -n 1) || true
  fi
  cabpi_why=${cabpi_why#cabpi: }
  cabpi_why=${cabpi_why//$'\n'/ }
  cabpi_why=${cabpi_why:-exit status $rc}
  cabpi_why=${cabpi_why:0:400}
  return 0
}

# cabpi_fail WHY stops the step it is called in.
cabpi_fail() {
  printf '%s\n' "$*" >"$state/why"
  echo "cabpi: $*" >&2
  exit 1
}

# cabpi_end CODE RESULT writes the result and exits.
cabpi_end() {
  printf '%s\n' "$2" >"$state/result.part"
  sync "$state/result.part"
  mv -f "$state/result.part" "$state/result"
  echo "cabpi: $2"
  exit "$1"
}

cabpi_succeeded() {
  cabpi_clear
  rm -rf "$state/stage" "$state/SHA256SUMS"
  cabpi_end 0 "ok $version"
}

# cabpi_clear forgets a finished update: the journal first, so the backup is never used alone.
cabpi_clear() {
  rm -f "$state/journal"
  sync "$state"
  rm -rf "$state/backup"
}

cabpi_on_exit() {
  local rc=$?
  if [[ ! -e $state/result ]]; then
    printf 'failed: the update script stopped unexpectedly (exit status %s); see its unit journal\n' "$rc" >"$state/result"
  fi
}

# cabpi_at_version: kubeadm and the kubelet (and kubectl, when asked for) are the version, and
# for sysext the link points at its image.
cabpi_at_version() {
  local kubeadm kubelet
  if [[ $source == sysext && $(readlink "$sysext_link" 2>/dev/null) != "$sysext_dir/${where[0]}" ]]; then
    return 1
  fi
  kubeadm=$(kubeadm version -o short 2>/dev/null) || return 1
  kubelet=$(kubelet --version 2>/dev/null) || return 1
  if [[ $kubeadm != "$version" || $kubelet != "Kubernetes $version" ]]; then
    return 1
  fi
  if [[ " ${names[*]} " == *" kubectl "* && $(kubectl version --client 2>/dev/null) != *"Client Version: $version"* ]]; then
    return 1
  fi
}

cabpi_confirm() {
  cabpi_check_kubernetes "$version"
  if [[ $source == sysext && $(readlink "$sysext_link") != "$sysext_dir/${where[0]}" ]]; then
    cabpi_fail "$sysext_link does not point at $sysext_dir/${where[0]}"
  fi
  if [[ " ${names[*]} " == *" kubectl "* && $(kubectl version --client) != *"Client Version: $version"* ]]; then
    cabpi_fail "kubectl is not $version"
  fi
}

cabpi_wait_healthy() {
  local deadline=$((SECONDS + health_timeout)) answer
  while :; do
    answer=$(curl -sS -m 5 http://127.0.0.1:10248/healthz 2>/dev/null) || answer=
    if [[ $answer == ok ]]; then
      return 0
    fi
    if ((SECONDS >= deadline)); then
      cabpi_fail "the kubelet did not answer ok on its health endpoint within ${health_timeout}s"
    fi
    sleep 2
  done
}

# cabpi_download URL FILE. A digest file that the server does not have (an HTTP error) is a
# missing digest, which the caller reports as a mismatch; any other failure is the download.
cabpi_download() {
  local rc=0
  curl -fsSL --retry 3 -m 900 -o "$2" "$1" || rc=$?
  if ((rc == 22)); then
    return 22
  fi
  ((rc == 0)) || cabpi_fail "downloading $1 failed (curl exit status $rc)"
}

# cabpi_fetch_sysext puts the image into the extensions directory once it matches the digest
# list of the bakery (the list systemd-sysupdate checks its images against).
cabpi_fetch_sysext() {
  local name=${where[0]} url=${where[1]} sums=${where[2]} image sum rc=0
  image=$sysext_dir/$name
  cabpi_download "$sums" "$state/SHA256SUMS" || rc=$?
  if ((rc == 22)); then
    cabpi_fail "$name does not match its published SHA-256 (no digest list at $sums)"
  fi
  sum=$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1; exit }' "$state/SHA256SUMS")
  if [[ ! $sum =~ ^[0-9a-f]{64}$ ]]; then
    cabpi_fail "$name does not match its published SHA-256 (the digest list has no entry for it)"
  fi
  if [[ -f $image ]] && sha256sum --check --status <<<"$sum  $image"; then
    echo "cabpi: $image is there already"
    return 0
  fi
  mkdir -p "$sysext_dir"
  cabpi_download "$url" "$image.part" || cabpi_fail "downloading $url failed (curl exit status 22)"
  if ! sha256sum --check --status <<<"$sum  $image.part"; then
    rm -f "$image.part"
    cabpi_fail "$name does not match its published SHA-256 ($sum)"
  fi
  mv -f "$image.part" "$image"
  sync "$image"
}

# cabpi_fetch_binaries stages the binaries in the state directory, each checked against the
# SHA-256 file the release publishes beside it.
cabpi_fetch_binaries() {
  local base=${where[0]} stage=$state/stage/$version name sum rc
  mkdir -p "$stage"
  for name in "${names[@]}"; do
    rc=0
    cabpi_download "$base/$name.sha256" "$stage/$name.sha256" || rc=$?
    if ((rc == 22)); then
      cabpi_fail "$name does not match its published SHA-256 (no digest at $base/$name.sha256)"
    fi
    sum=
    read -r sum _ <"$stage/$name.sha256" || true
    if [[ ! $sum =~ ^[0-9a-f]{64}$ ]]; then
      cabpi_fail "$name does not match its published SHA-256 ($name.sha256 holds no SHA-256 digest)"
    fi
    if [[ -f $stage/$name ]] && sha256sum --check --status <<<"$sum  $stage/$name"; then
      continue
    fi
    cabpi_download "$base/$name" "$stage/$name.part" || cabpi_fail "downloading $base/$name failed (curl exit status 22)"
    if ! sha256sum --check --status <<<"$sum  $stage/$name.part"; then
      rm -f "$stage/$name.part"
      cabpi_fail "$name does not match its published SHA-256 ($sum)"
    fi
    mv -f "$stage/$name.part" "$stage/$name"
  done
  sync "$stage"
}

# cabpi_backup keeps what the swap and kubeadm change, then journals the swap; both synced.
cabpi_backup() {
  local b=$state/backup name target
  rm -rf "$b"
  mkdir -p "$b"
  if [[ $source == sysext ]]; then
    target=$(readlink "$sysext_link") || cabpi_fail "$sysext_link is not a link to a system extension image"
    printf '%s\n' "$target" >"$b/link"
  else
    mkdir "$b/bin"
    for name in "${names[@]}"; do
      if [[ -e $bin_dir/$name ]]; then
        cp -a "$bin_dir/$name" "$b/bin/$name"
      fi
    done
    printf '%s\n' "${names[@]}" >"$b/names"
  fi
  if [[ -e $kubelet_config ]]; then
    cp -a "$kubelet_config" "$b/kubelet-config"
  fi
  if [[ -e $kubelet_flags ]]; then
    cp -a "$kubelet_flags" "$b/kubelet-flags"
  fi
  printf '%s\n' "$source" >"$b/source"
  printf '%s\n' "$old" >"$b/old"
  sync "$b" "$b"/*
  printf 'swapping from %s to %s\n' "$old" "$version" >"$state/journal.part"
  sync "$state/journal.part"
  mv -f "$state/journal.part" "$state/journal"
  sync "$state"
  echo "cabpi: backed up $old; swapping from $old to $version"
}

cabpi_swap_sysext() {
  local image=$sysext_dir/${where[0]}
  [[ -s $image ]] || cabpi_fail "$image is missing"
  ln -sfT "$image" "$sysext_link.cabpi-new"
  mv -T "$sysext_link.cabpi-new" "$sysext_link"
  systemd-sysext refresh
  systemctl daemon-reload
}

# cabpi_swap_binaries installs the staged binaries, checked again (a resumed run reads them
# after a reboot), each renamed over the old one.
cabpi_swap_binaries() {
  local stage=$state/stage/$version name sum
  mkdir -p "$bin_dir"
  for name in "${names[@]}"; do
    sum=
    read -r sum _ <"$stage/$name.sha256" || true
    if [[ ! $sum =~ ^[0-9a-f]{64}$ ]] || ! sha256sum --check --status <<<"$sum  $stage/$name"; then
      cabpi_fail "the staged $name does not match its published SHA-256"
    fi
    install -m 0755 "$stage/$name" "$bin_dir/.$name.new"
  done
  for name in "${names[@]}"; do
    mv -f "$bin_dir/.$name.new" "$bin_dir/$name"
  done
}

cabpi_restore() {
  local b=$state/backup name
  if [[ $(<"$b/source") == sysext ]]; then
    ln -sfT "$(<"$b/link")" "$sysext_link.cabpi-new"
    mv -T "$sysext_link.cabpi-new" "$sysext_link"
  else
    while read -r name; do
      if [[ -e $b/bin/$name ]]; then
        cp -a "$b/bin/$name" "$bin_dir/.$name.new"
        mv -f "$bin_dir/.$name.new" "$bin_dir/$name"
      else
        rm -f "$bin_dir/$name"
      fi
    done <"$b/names"
  fi
  if [[ -e $b/kubelet-config ]]; then
    cp -a "$b/kubelet-config" "$kubelet_config.cabpi-new"
    mv -f "$kubelet_config.cabpi-new" "$kubelet_config"
  fi
  if [[ -e $b/kubelet-flags ]]; then
    cp -a "$b/kubelet-flags" "$kubelet_flags.cabpi-new"
    mv -f "$kubelet_flags.cabpi-new" "$kubelet_flags"
  fi
  if [[ $(<"$b/source") == sysext ]]; then
    systemd-sysext refresh
  fi
  systemctl daemon-reload
}
