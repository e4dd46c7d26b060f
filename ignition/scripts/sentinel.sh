# The Cluster API bootstrap contract: this file tells infrastructure providers kubeadm succeeded.
mkdir -p /run/cluster-api
touch /run/cluster-api/bootstrap-success.complete
# /etc/kubeadm.yml holds the bootstrap token; it is not needed once kubeadm has run, and its
# absence keeps kubeadm.service (ConditionPathExists) from running again on the next boot.
rm -f /etc/kubeadm.yml
