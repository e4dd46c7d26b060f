cabpi_left() {
  if [[ -s /etc/kubernetes/kubelet.conf && -s /var/lib/kubelet/pki/kubelet-client-current.pem ]]; then
    echo "$m the kubelet has its certificate: joined"
    CABPI_KUBEADM=done
  fi
}
