rm -rf /run/cluster-api/bootstrap-success.complete
if [[ $CABPI_KUBEADM != done ]]; then
kubeadm join --config /etc/kubeadm.yml ${CABPI_KUBEADM_VERBOSITY:+"--v=${CABPI_KUBEADM_VERBOSITY}"} ${CABPI_SKIP_PHASES:+"--skip-phases=${CABPI_SKIP_PHASES}"}
fi
