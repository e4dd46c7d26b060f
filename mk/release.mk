##@ release

# A clusterctl release of cabpi is a directory of assets (uploaded to a GitHub release):
# bootstrap-components.yaml (kustomize build config/default, with clusterctl variables, naming
# the release's image), metadata.yaml, the cluster templates of templates/ for `clusterctl
# generate cluster --from`, update-extension.yaml (the in-place update extension's
# ExtensionConfig, applied apart: docs/adr/035), and the image itself as an OCI archive (pushed to the registry the
# components name: `skopeo copy oci-archive:FILE docker://IMAGE` or `crane push FILE IMAGE`).
RELEASE_VERSION ?= v0.1.0
RELEASE_DIR ?= out
# The image config/manager/manager.yaml names (the name the overlay below replaces), and the
# repository a release's image goes to (the project's own unless a maintainer says otherwise).
MANIFEST_IMAGE := ghcr.io/cabpi/cluster-api-bootstrap-provider-ignition
IMAGE_REPOSITORY ?= $(MANIFEST_IMAGE)
RELEASE_IMAGE ?= $(IMAGE_REPOSITORY):$(RELEASE_VERSION)
RELEASE_IMAGE_ARCHIVE = $(RELEASE_DIR)/cabpi-image-$(RELEASE_VERSION).oci.tar

# `make clusterctl-overrides INFRA=<provider>` installs the templates written for that
# infrastructure provider into clusterctl's overrides folder, so that
# `clusterctl generate cluster --infrastructure <provider>:<INFRA_VERSION> --flavor ...` finds them
# as if the provider had released them. INFRA_VERSION must be the version clusterctl uses (the one
# installed in the management cluster, or given with --infrastructure name:version).
INFRA ?= docker
# clusterctl's default: $XDG_CONFIG_HOME/cluster-api/overrides; without XDG_CONFIG_HOME its XDG
# library uses ~/.config on Linux and ~/Library/Application Support on macOS.
CLUSTERCTL_CONFIG_HOME = $(or $(XDG_CONFIG_HOME),$(if $(filter Darwin,$(shell uname -s)),$(HOME)/Library/Application Support,$(HOME)/.config))
CLUSTERCTL_OVERRIDES_DIR ?= $(CLUSTERCTL_CONFIG_HOME)/cluster-api/overrides
CAPI_VERSION = $(shell go list -m -f '{{.Version}}' sigs.k8s.io/cluster-api 2>/dev/null)
# Per provider: the templates (templates/<file>, installed under the same name) and the default
# version (CAPD is released with Cluster API; the others are the versions the templates are
# written for and checked against, hack/versions.env).
INFRA_TEMPLATES_docker := cluster-template-ignition.yaml cluster-template-ignition-clusterclass.yaml clusterclass-ignition.yaml cluster-template-ignition-kcp.yaml
INFRA_DEFAULT_VERSION_docker = $(CAPI_VERSION)
INFRA_TEMPLATES_aws := cluster-template-ignition-aws.yaml cluster-template-ignition-aws-fcos.yaml cluster-template-ignition-aws-kcp.yaml
INFRA_DEFAULT_VERSION_aws := $(CAPA_VERSION)
INFRA_TEMPLATES_azure := cluster-template-ignition-azure.yaml cluster-template-ignition-azure-fcos.yaml
INFRA_DEFAULT_VERSION_azure := $(CAPZ_VERSION)
INFRA_TEMPLATES_gcp := cluster-template-ignition-gcp.yaml cluster-template-ignition-gcp-fcos.yaml
INFRA_DEFAULT_VERSION_gcp := $(CAPG_VERSION)
INFRA_TEMPLATES_openstack := cluster-template-ignition-openstack.yaml cluster-template-ignition-openstack-fcos.yaml
INFRA_DEFAULT_VERSION_openstack := $(CAPO_VERSION)
INFRA_TEMPLATES_vsphere := cluster-template-ignition-vsphere.yaml
INFRA_DEFAULT_VERSION_vsphere := $(CAPV_VERSION)
INFRA_PROVIDERS := docker aws azure gcp openstack vsphere
INFRA_VERSION ?= $(INFRA_DEFAULT_VERSION_$(INFRA))

# The SBOM generator (CycloneDX's, for Go modules), built from the Go module proxy.
CYCLONEDX_GOMOD_VER := v1.10.0
CYCLONEDX_GOMOD := $(TOOLS_DIR)/cyclonedx-gomod-$(CYCLONEDX_GOMOD_VER)
# The platforms of the release's image, and of its SBOMs.
RELEASE_PLATFORMS := amd64 arm64
# A PEM ECDSA private key publish signs the image with (cosign's key-based format); none: unsigned.
COSIGN_KEY ?=

$(CYCLONEDX_GOMOD):
	GOBIN=$(TOOLS_DIR)/tmp-cdx go install github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$(CYCLONEDX_GOMOD_VER)
	mv $(TOOLS_DIR)/tmp-cdx/cyclonedx-gomod $@ && rm -rf $(TOOLS_DIR)/tmp-cdx

.PHONY: release
release: ## Build a release into RELEASE_DIR: the image (IMAGE_REPOSITORY:RELEASE_VERSION, both platforms), components that name it, SBOMs and SHA256SUMS.
	$(MAKE) --no-print-directory image IMG=$(RELEASE_IMAGE) IMAGE_ARCHIVE=$(RELEASE_IMAGE_ARCHIVE)
	$(MAKE) --no-print-directory release-manifests
	$(MAKE) --no-print-directory release-sbom
	$(MAKE) --no-print-directory release-checksums

.PHONY: publish
publish: ## Push what `make release` built to IMAGE_REPOSITORY (both platforms, no daemon; Docker's credentials), name it by digest in the components, sign it with COSIGN_KEY if set, and write SHA256SUMS again.
	go run ./hack/publish -archive $(RELEASE_IMAGE_ARCHIVE) -ref $(RELEASE_IMAGE) -out $(RELEASE_DIR)/image-reference.txt \
		$(if $(COSIGN_KEY),-key $(COSIGN_KEY) -public-key $(RELEASE_DIR)/cosign.pub)
	$(MAKE) --no-print-directory release-manifests RELEASE_IMAGE="$$(cat $(RELEASE_DIR)/image-reference.txt)"
	$(MAKE) --no-print-directory release-checksums

.PHONY: verify-release
verify-release: ## Check a published release as a user does: every asset against SHA256SUMS, and the image's signature with cosign (on PATH) and cosign.pub.
	cd $(RELEASE_DIR) && sha256sum --check --strict SHA256SUMS
	cosign verify --key $(RELEASE_DIR)/cosign.pub --insecure-ignore-tlog=true "$$(cat $(RELEASE_DIR)/image-reference.txt)"

.PHONY: cosign-key
cosign-key: ## Write the signing key a workflow holds in COSIGN_PRIVATE_KEY to COSIGN_KEY, readable by its owner alone (never echoed).
	@test -n "$(COSIGN_KEY)" || { echo "set COSIGN_KEY to the file to write"; exit 1; }
	@test -n "$$COSIGN_PRIVATE_KEY" || { echo "COSIGN_PRIVATE_KEY is empty"; exit 1; }
	@umask 077 && printf '%s\n' "$$COSIGN_PRIVATE_KEY" > "$(COSIGN_KEY)"

.PHONY: release-sbom
release-sbom: $(CYCLONEDX_GOMOD) ## Write the manager's SBOM (CycloneDX JSON, its Go modules and their versions) for each platform into RELEASE_DIR.
	mkdir -p $(RELEASE_DIR)
	for arch in $(RELEASE_PLATFORMS); do \
		GOOS=linux GOARCH=$$arch CGO_ENABLED=0 $(CYCLONEDX_GOMOD) app -json -main . \
			-output $(RELEASE_DIR)/cabpi-sbom-linux-$$arch.cdx.json . || exit 1; \
	done

.PHONY: release-checksums
release-checksums: ## Write SHA256SUMS of every asset in RELEASE_DIR (sha256sum -c SHA256SUMS checks them).
	cd $(RELEASE_DIR) && find . -maxdepth 1 -type f ! -name SHA256SUMS ! -name '.*' -printf '%P\n' | LC_ALL=C sort | xargs sha256sum > SHA256SUMS

.PHONY: release-manifests
release-manifests: $(KUSTOMIZE) ## Build the clusterctl release manifests into RELEASE_DIR (default out/), naming RELEASE_IMAGE.
	@awk -v M=$(word 1,$(subst ., ,$(RELEASE_VERSION:v%=%))) -v N=$(word 2,$(subst ., ,$(RELEASE_VERSION:v%=%))) \
		'$$2 == "major:" { maj = $$3 } $$1 == "minor:" && maj == M && $$2 == N { found = 1 } END { exit !found }' metadata.yaml || { \
		echo "metadata.yaml has no release series for $(RELEASE_VERSION)"; exit 1; }
	mkdir -p $(RELEASE_DIR)
	@# An overlay of config/default that names the release's image, made by kustomize itself.
	rm -rf $(RELEASE_DIR)/.overlay && mkdir -p $(RELEASE_DIR)/.overlay
	cd $(RELEASE_DIR)/.overlay && $(KUSTOMIZE) create --resources "$$(realpath --relative-to=. $(CURDIR)/config/default)" && \
		$(KUSTOMIZE) edit set image "$(MANIFEST_IMAGE)=$(RELEASE_IMAGE)"
	$(KUSTOMIZE) build $(RELEASE_DIR)/.overlay > $(RELEASE_DIR)/bootstrap-components.yaml.tmp
	rm -rf $(RELEASE_DIR)/.overlay
	mv $(RELEASE_DIR)/bootstrap-components.yaml.tmp $(RELEASE_DIR)/bootstrap-components.yaml
	cp metadata.yaml templates/*.yaml $(RELEASE_DIR)/
	@# Applied by users who turn in-place updates on (docs/adr/035): the update extension's registration and the NetworkPolicy of its port.
	{ cat config/extension/extensionconfig.yaml; echo ---; cat config/extension/networkpolicy.yaml; } > $(RELEASE_DIR)/update-extension.yaml
	@# Client certificates for the extension, opt-in (docs/adr/040).
	cp config/extension/client-auth/certificates.yaml $(RELEASE_DIR)/update-extension-client-auth.yaml
	cp config/extension/client-auth/cabpi-manager-patch.yaml $(RELEASE_DIR)/client-auth-cabpi-manager-patch.yaml
	cp config/extension/client-auth/capi-manager-patch.yaml $(RELEASE_DIR)/client-auth-capi-manager-patch.yaml
	@echo "release assets for $(RELEASE_VERSION) in $(RELEASE_DIR)/"

.PHONY: clusterctl-overrides
clusterctl-overrides: ## Install templates/ as clusterctl overrides of INFRA (docker|aws|azure|gcp|openstack|vsphere) at INFRA_VERSION.
	@if [ -z "$(INFRA_TEMPLATES_$(INFRA))" ]; then \
		echo "INFRA=$(INFRA): templates/ has templates for $(INFRA_PROVIDERS) only"; exit 1; fi
	@if [ -z "$(INFRA_VERSION)" ]; then echo "set INFRA_VERSION (the $(INFRA) provider version clusterctl uses)"; exit 1; fi
	mkdir -p "$(CLUSTERCTL_OVERRIDES_DIR)/infrastructure-$(INFRA)/$(INFRA_VERSION)"
	cp $(addprefix templates/,$(INFRA_TEMPLATES_$(INFRA))) "$(CLUSTERCTL_OVERRIDES_DIR)/infrastructure-$(INFRA)/$(INFRA_VERSION)/"
	@echo "clusterctl overrides for infrastructure-$(INFRA) $(INFRA_VERSION) in $(CLUSTERCTL_OVERRIDES_DIR)"

.PHONY: clusterctl
clusterctl: ## Build the real clusterctl (same version as Cluster API in go.mod; cached).
	@bash hack/clusterctl.sh >/dev/null
