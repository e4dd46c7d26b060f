rm -rf /run/cluster-api/bootstrap-success.complete
kubeadm join --config /etc/kubeadm.yml ${CABPI_KUBEADM_VERBOSITY:+"--v=${CABPI_KUBEADM_VERBOSITY}"}
