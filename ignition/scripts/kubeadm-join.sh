rm -rf /run/cluster-api/bootstrap-success.complete
kubeadm join --config /etc/kubeadm.yml
