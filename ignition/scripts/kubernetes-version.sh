# Refuses a kubeadm or kubelet of another version than the Machine has: the node would run and
# report a version Cluster API did not ask for.
cabpi_check_kubernetes() {
  local want=$1 kubeadm kubelet
  kubeadm=$(kubeadm version -o short)
  kubelet=$(kubelet --version)
  kubelet=${kubelet#Kubernetes }
  if [[ $kubeadm != "$want" || $kubelet != "$want" ]]; then
    echo "cabpi: found kubeadm $kubeadm and kubelet $kubelet, the Machine has $want" >&2
    return 1
  fi
}
