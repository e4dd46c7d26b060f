kubeadm join --config /etc/kubeadm.yml
