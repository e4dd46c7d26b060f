# Checks the release binaries Ignition downloaded against the SHA-256 files of the release, and only
# then installs them into /opt/bin and enables the kubelet: nothing runs a binary that does not match.
cabpi_install_binaries() {
  local version=$1 dir=$2 name sum
  shift 2
  for name in "$@"; do
    sum=
    read -r sum _ <"$dir/$name.sha256" || true
    if [[ ! $sum =~ ^[0-9a-f]{64}$ ]]; then
      echo "cabpi: $dir/$name.sha256 holds no SHA-256 digest" >&2
      return 1
    fi
    if ! sha256sum --check --status <<<"$sum  $dir/$name"; then
      echo "cabpi: $name $version does not match its published SHA-256 ($sum): not installed" >&2
      return 1
    fi
  done
  mkdir -p /opt/bin
  for name in "$@"; do
    install -m 0755 "$dir/$name" "/opt/bin/$name"
  done
  export PATH="/opt/bin:$PATH"
  cabpi_check_kubernetes "$version" || return 1
  systemctl enable kubelet.service
}
