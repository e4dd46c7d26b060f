# Installs the release binaries Ignition downloaded, each checked against its pinned SHA-256 before
# it was written (verification.hash), into /opt/bin, checks their versions and enables the kubelet.
cabpi_install_binaries() {
  local version=$1 dir=$2 name
  shift 2
  mkdir -p /opt/bin
  for name in "$@"; do
    install -m 0755 "$dir/$name" "/opt/bin/$name" || return 1
  done
  export PATH="/opt/bin:$PATH"
  cabpi_check_kubernetes "$version" || return 1
  systemctl enable kubelet.service
}
