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
  elif [[ $1 == worker && -s /etc/kubernetes/kubelet.conf && -s /var/lib/kubelet/pki/kubelet-client-current.pem ]]; then
    echo "$m the kubelet has its certificate: joined"
    CABPI_KUBEADM=done
  elif [[ $1 != worker && -d /var/lib/etcd/member ]]; then
    echo "$m etcd data here: resuming kubeadm"
    CABPI_KUBEADM=resume CABPI_SKIP_PHASES=$2
  else
    echo "$m resetting with kubeadm reset"
    kubeadm reset --force --cleanup-tmp-dir
    cp -a "$s/f/kubernetes/." /etc/kubernetes/
    cp -a "$s/f/kubelet/." /var/lib/kubelet/
  fi
  [[ $CABPI_KUBEADM == run ]] || systemctl start kubelet.service
  if [[ $CABPI_KUBEADM == resume && -n $3 ]] && cabpi_etcd_votes; then
    echo "$m etcd member votes: no etcd join"
    CABPI_SKIP_PHASES+=,$3
  fi
}

cabpi_etcd_votes() {
  local p=/etc/kubernetes/pki/etcd/ i r
  for ((i = 0; i < 60; i++)); do
    if r=$(curl -sSf -m 5 --cacert ${p}ca.crt --cert ${p}healthcheck-client.crt --key ${p}healthcheck-client.key -d '{}' https://127.0.0.1:2379/v3/maintenance/status); then
      [[ $r != *'"isLearner":true'* ]]
      return
    fi
    sleep 5
  done
  echo "cabpi: no answer from etcd" >&2
  exit 1
}
