: >/var/lib/cabpi-bootstrap/kubeadm-succeeded
sync -f /var/lib/cabpi-bootstrap/kubeadm-succeeded
rm -rf /var/lib/cabpi-bootstrap/attempt /var/lib/cabpi-bootstrap/f /etc/systemd/system/kubelet.service.d/10-cabpi-bootstrap.conf
mkdir -p /run/cluster-api
touch /run/cluster-api/bootstrap-success.complete
rm -f /etc/kubeadm.yml
sync -f /etc/kubeadm.sh /var/lib/cabpi-bootstrap
rm -rf /var/lib/cabpi-bootstrap
