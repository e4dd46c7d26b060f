cabpi_left() {
  if [[ -d /var/lib/etcd/member ]]; then
    echo "$m etcd data here: resuming kubeadm"
    CABPI_KUBEADM=resume CABPI_SKIP_PHASES=$1
  fi
}
