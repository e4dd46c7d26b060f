# What an interrupted earlier attempt left decides this run: docs/adr/034-interrupted-first-boot.md
cabpi_begin_attempt() {
  local role=$1 resume_skip=$2 voter_skip=$3 state=/var/lib/cabpi-bootstrap
  mkdir -p /run/cabpi-bootstrap
  : >/run/cabpi-bootstrap/running
  CABPI_KUBEADM=run
  CABPI_SKIP_PHASES=
  if [[ -e $state/kubeadm-succeeded ]]; then
    echo "cabpi: kubeadm succeeded on an earlier boot; finishing the bootstrap"
    CABPI_KUBEADM=done
  elif [[ -e $state/attempt ]]; then
    echo "cabpi: an earlier attempt of the bootstrap was interrupted"
    if [[ $role == worker ]]; then
      if [[ -s /etc/kubernetes/kubelet.conf && -s /var/lib/kubelet/pki/kubelet-client-current.pem ]]; then
        echo "cabpi: the kubelet holds its client certificate: the join had finished"
        CABPI_KUBEADM=done
      fi
    elif [[ -d /var/lib/etcd/member ]]; then
      echo "cabpi: the etcd member of this node has data: resuming kubeadm once the kubelet runs it again"
      CABPI_KUBEADM=resume
      CABPI_SKIP_PHASES=$resume_skip
    fi
    if [[ $CABPI_KUBEADM == run ]]; then
      echo "cabpi: resetting the node (kubeadm reset) and restoring the files Ignition wrote"
      kubeadm reset --force --cleanup-tmp-dir
      cp -a "$state/files/etc-kubernetes/." /etc/kubernetes/
      cp -a "$state/files/var-lib-kubelet/." /var/lib/kubelet/
    fi
  else
    rm -rf "$state"
    mkdir -p -m 0700 "$state"
    mkdir -p /etc/kubernetes /var/lib/kubelet "$state/files.tmp"
    cp -a /etc/kubernetes "$state/files.tmp/etc-kubernetes"
    cp -a /var/lib/kubelet "$state/files.tmp/var-lib-kubelet"
    mv "$state/files.tmp" "$state/files"
    : >"$state/attempt"
    sync -f "$state/attempt"
  fi
  if [[ $CABPI_KUBEADM != run ]]; then
    systemctl start kubelet.service
  fi
  if [[ $CABPI_KUBEADM == resume && -n $voter_skip ]] && cabpi_etcd_member_votes; then
    echo "cabpi: the etcd member of this node votes already: kubeadm does not join etcd again"
    CABPI_SKIP_PHASES+=",$voter_skip"
  fi
}

cabpi_etcd_member_votes() {
  local pki=/etc/kubernetes/pki/etcd status i
  for ((i = 0; i < 60; i++)); do
    if status=$(curl -sS --fail --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/healthcheck-client.crt" \
      --key "$pki/healthcheck-client.key" -X POST -d '{}' https://127.0.0.1:2379/v3/maintenance/status); then
      [[ $status != *'"isLearner":true'* ]]
      return
    fi
    sleep 5
  done
  echo "cabpi: the etcd member of this node did not answer within 5 minutes" >&2
  exit 1
}

cabpi_kubeadm_succeeded() {
  local state=/var/lib/cabpi-bootstrap
  : >"$state/kubeadm-succeeded"
  sync -f "$state/kubeadm-succeeded"
  rm -rf "$state/attempt" "$state/files"
}
