kubeadm init --config /etc/kubeadm.yml
