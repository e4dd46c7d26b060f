cabpi_kubeadm_succeeded
mkdir -p /run/cluster-api
touch /run/cluster-api/bootstrap-success.complete
rm -f /etc/kubeadm.yml
sync -f /etc/kubeadm.sh /var/lib/cabpi-bootstrap
rm -rf /var/lib/cabpi-bootstrap
