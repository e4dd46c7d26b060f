rm -rf /run/cluster-api/bootstrap-success.complete
kubeadm init --config /etc/kubeadm.yml
