rm -rf /run/cluster-api/bootstrap-success.complete
kubeadm init --config /etc/kubeadm.yml ${CABPI_KUBEADM_VERBOSITY:+"--v=${CABPI_KUBEADM_VERBOSITY}"}
