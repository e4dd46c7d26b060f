# The Kubernetes system extension must be merged into /usr before kubeadm runs; systemd before 256
# does not load the units it brings.
cabpi_use_sysext() {
  if [[ ! -e /usr/lib/extension-release.d/extension-release.kubernetes ]]; then
    echo "cabpi: the Kubernetes system extension is not merged into /usr (systemd-sysext status; journalctl -u systemd-sysext)" >&2
    return 1
  fi
  if [[ $(systemctl show -P LoadState kubelet.service) != loaded ]]; then
    systemctl daemon-reload
  fi
  cabpi_check_kubernetes "$1" || return 1
}
