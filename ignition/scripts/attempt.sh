cabpi_attempt() {
  local s=/var/lib/cabpi-bootstrap h=/etc/systemd/system/kubelet.service.d/10-cabpi-bootstrap.conf m="cabpi: interrupted attempt found:"
  mkdir -p /run/cabpi-bootstrap
  : >/run/cabpi-bootstrap/running
  CABPI_KUBEADM=run CABPI_SKIP_PHASES=
  if [[ -e $s/kubeadm-succeeded ]]; then
    echo "$m kubeadm had succeeded"
    CABPI_KUBEADM=done
  elif [[ ! -e $s/attempt ]]; then
    rm -rf "$s"
    mkdir -p -m 0700 "$s/f"
    mkdir -p /etc/kubernetes /var/lib/kubelet "${h%/*}"
    cp -a /etc/kubernetes /var/lib/kubelet "$s/f"
    printf '[Unit]\nConditionPathExists=|!%s\nConditionPathExists=|%s\n' "$s/attempt" /run/cabpi-bootstrap/running >"$h"
    : >"$s/attempt"
    sync -f "$s/attempt" "$h"
  else
    cabpi_left "$@"
    if [[ $CABPI_KUBEADM == run ]]; then
      echo "$m resetting with kubeadm reset"
      kubeadm reset --force --cleanup-tmp-dir
      cp -a "$s/f/kubernetes/." /etc/kubernetes/
      cp -a "$s/f/kubelet/." /var/lib/kubelet/
    fi
  fi
  [[ $CABPI_KUBEADM == run ]] || systemctl start kubelet.service
}
