##@ demo

.PHONY: demo
demo: deps ignition-apply envtest-assets ## Run CAPI + cabpi on a local control plane and print the rendered Ignition.
	KUBEBUILDER_ASSETS="$$(bash hack/envtest-assets.sh)" \
	CABPI_IGNITION_APPLY="$$(IGNITION_VER=$(IGNITION_VER) bash hack/ignition-apply.sh)" \
		go run ./hack/demo --variant $${VARIANT:-flatcar} --out _demo
