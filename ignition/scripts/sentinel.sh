mkdir -p /run/cluster-api
touch /run/cluster-api/bootstrap-success.complete
rm -f /etc/kubeadm.yml
