# cabpi — Cluster API bootstrap provider for Ignition (Flatcar Container Linux, Fedora CoreOS).
SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec
.DEFAULT_GOAL := help

export GOTOOLCHAIN ?= local
# -trimpath leaves the checkout's directory out of every compile's cache key: a fresh clone
# (CI's) reuses what another clone of the same code compiled, instead of compiling each of its
# packages again, plain and under the race detector (docs/adr/037-ci-time-on-two-cores.md).
export GOFLAGS ?= -buildvcs=false -trimpath

# Everything built from the Go module proxy is cached outside the repository, keyed by version,
# so a fresh clone (and CI) on a machine that has built once pays nothing.
CABPI_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/cabpi
export CABPI_CACHE
TOOLS_DIR := $(CABPI_CACHE)/tools
include hack/versions.env

CONTROLLER_GEN_VER := v0.21.0
CONTROLLER_GEN := $(TOOLS_DIR)/controller-gen-$(CONTROLLER_GEN_VER)
KUSTOMIZE_VER := v5.7.0
KUSTOMIZE := $(TOOLS_DIR)/kustomize-$(KUSTOMIZE_VER)
IGNITION_VER := $(shell go list -m -f '{{.Version}}' github.com/coreos/ignition/v2 2>/dev/null)
IGNITION_APPLY := $(TOOLS_DIR)/ignition-$(IGNITION_VER)/ignition-apply

IMG ?= ghcr.io/cabpi/cluster-api-bootstrap-provider-ignition:dev
IMAGE_ARCHIVE ?= out/cabpi-image.oci.tar
# Every time in the image is the commit's, so the same commit gives the same digest.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
GO_TEST_FLAGS ?= -count=1
TEST_TIMEOUT ?= 20m

.PHONY: help
help: ## Show the targets.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_-]+:.*##/ {printf "  %-20s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

## --- set-up -----------------------------------------------------------------

.PHONY: deps
deps: ## Install the Debian packages the build and tests need (libblkid-dev for ignition-apply).
	@bash hack/install-deps.sh

$(CONTROLLER_GEN):
	GOBIN=$(TOOLS_DIR)/tmp-cg go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VER)
	mv $(TOOLS_DIR)/tmp-cg/controller-gen $@ && rm -rf $(TOOLS_DIR)/tmp-cg

$(KUSTOMIZE):
	GOBIN=$(TOOLS_DIR)/tmp-kz go install sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VER)
	mv $(TOOLS_DIR)/tmp-kz/kustomize $@ && rm -rf $(TOOLS_DIR)/tmp-kz

STATICCHECK_VER := v0.8.2
STATICCHECK := $(TOOLS_DIR)/staticcheck-$(STATICCHECK_VER)

$(STATICCHECK):
	GOBIN=$(TOOLS_DIR)/tmp-sc go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VER)
	mv $(TOOLS_DIR)/tmp-sc/staticcheck $@ && rm -rf $(TOOLS_DIR)/tmp-sc

.PHONY: controller-gen kustomize ignition-apply envtest-assets tools
controller-gen: $(CONTROLLER_GEN)
kustomize: $(KUSTOMIZE)
ignition-apply: deps ## Build the real ignition-apply from the Go module proxy (cached).
	@IGNITION_VER=$(IGNITION_VER) bash hack/ignition-apply.sh >/dev/null
envtest-assets: ## Build kube-apiserver and etcd for envtest from the Go module proxy (cached).
	@bash hack/envtest-assets.sh >/dev/null
tools: controller-gen kustomize ignition-apply envtest-assets

## --- generate ---------------------------------------------------------------

.PHONY: generate manifests
generate: $(CONTROLLER_GEN) ## Generate deepcopy code and the API reference (docs/guide/api.md).
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./apis/... paths=./test/framework/infrastructure/api/...
	go run ./hack/apidocs -apis apis/v1alpha1 -out docs/guide/api.md

manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook manifests.
	$(CONTROLLER_GEN) crd:allowDangerousTypes=false rbac:roleName=manager-role webhook \
		paths=./apis/... paths=./controllers/... paths=./webhooks/... paths=./internal/setup/... paths=./internal/inplace/... \
		output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook
	$(CONTROLLER_GEN) crd paths=./test/framework/infrastructure/api/... \
		output:crd:artifacts:config=$(TEST_INFRA_CRDS)

# The real-node suite's test infrastructure provider: generated like ours, never shipped.
TEST_INFRA_CRDS := test/framework/infrastructure/config/crd

## --- build and test ---------------------------------------------------------

.PHONY: build
build: ## Build the manager binary into bin/.
	go build -trimpath -o bin/manager .

.PHONY: image
image: ## Build the manager's OCI image IMG for linux/amd64 and linux/arm64, without a container engine, into IMAGE_ARCHIVE (an OCI archive).
	SOURCE_DATE_EPOCH=$(SOURCE_DATE_EPOCH) go run ./hack/image -ref "$(IMG)" -archive "$(IMAGE_ARCHIVE)"

.PHONY: vet
vet:
	go vet ./...
	for p in $(TEST_PROVIDERS); do go -C test/providers/$$p vet ./... || exit 1; done

.PHONY: lint
lint: $(STATICCHECK) ## Check the layers and import aliases (hack/layers), the license headers (hack/headers) and find dead code (staticcheck U1000).
	go run ./hack/layers
	go run ./hack/headers
	$(STATICCHECK) -checks U1000 ./...

# The test layers (docs/adr/021-test-layers.md). The packages under test/integration and
# test/release start a kube-apiserver (test/framework/testenv); every other package's tests are
# unit tests, and test-unit runs all of them, with KUBEBUILDER_ASSETS pointing where there is no
# kube-apiserver: a test that starts one fails there, loudly, instead of slowing the layer down.
INTEGRATION_PKGS := /test/(integration|release|e2e)(/|$$)
UNIT_PKGS = $(shell go list ./... | grep -Ev '$(INTEGRATION_PKGS)')
NO_APISERVER := $(CURDIR)/.no-kube-apiserver-in-unit-tests

# hack/go-test-layers.sh runs each package once: the unit layer under the race detector (RACE=
# turns it off) but for the packages whose tests run their code on one goroutine, the suites
# without it.
RACE ?= -race
TEST_PACKAGES_AT_ONCE ?= 4
export RACE GO_TEST_FLAGS TEST_TIMEOUT INTEGRATION_PKGS TEST_PACKAGES_AT_ONCE

.PHONY: test-unit
test-unit: ignition-apply ## Run the unit tests under the race detector: no kube-apiserver (renderer, inputs, webhook and controller logic, commands, the rendered units and bootstrap script).
	KUBEBUILDER_ASSETS="$(NO_APISERVER)" \
	CABPI_IGNITION_APPLY="$$(IGNITION_VER=$(IGNITION_VER) bash hack/ignition-apply.sh)" \
		bash hack/go-test-layers.sh $(UNIT_PKGS)

# actionlint checks the workflows (.github/workflows); built from the Go module proxy.
ACTIONLINT_VER := v1.7.12
ACTIONLINT := $(TOOLS_DIR)/actionlint-$(ACTIONLINT_VER)

$(ACTIONLINT):
	GOBIN=$(TOOLS_DIR)/tmp-al go install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VER)
	mv $(TOOLS_DIR)/tmp-al/actionlint $@ && rm -rf $(TOOLS_DIR)/tmp-al

.PHONY: lint-workflows
lint-workflows: $(ACTIONLINT) ## Check the GitHub workflows with actionlint.
	$(ACTIONLINT) -color=false

.PHONY: test
test: tools clusterctl lint-workflows ## Run all tests (unit, under the race detector, and integration) against a real kube-apiserver, etcd, CAPI controllers and ignition-apply; lint the workflows.
	KUBEBUILDER_ASSETS="$$(bash hack/envtest-assets.sh)" \
	CABPI_IGNITION_APPLY="$$(IGNITION_VER=$(IGNITION_VER) bash hack/ignition-apply.sh)" \
	CABPI_KUSTOMIZE="$(KUSTOMIZE)" \
	CABPI_CLUSTERCTL="$$(bash hack/clusterctl.sh)" \
		bash hack/go-test-layers.sh $(TEST_PKGS)
	$(MAKE) --no-print-directory test-providers

# The real-node suite is make e2e's alone: it boots machines as root.
TEST_PKGS = $(shell go list ./... | grep -Ev '/test/e2e(/|$$)')

# What CAPA, CAPZ, CAPG and CAPO's own code hands an instance from cabpi's data Secret. Each provider
# is its own Go module under test/providers (each pins its own Cluster API), so ./... leaves
# them out; they get the cabpi binary to render with and a kube-apiserver (envtest). make test
# runs them after the packages; TEST_PROVIDERS= leaves them out (e.g. with TEST_PKGS=...).
TEST_PROVIDERS ?= aws azure gcp openstack

.PHONY: test-providers
test-providers: ## Hand cabpi's data Secret to the infrastructure providers' own code (CAPA, CAPZ, CAPG, CAPO; test/providers).
	@# Built as the test binaries are (GOFLAGS, cgo as it is): a fresh machine compiles cabpi's
	@# dependencies once for both, not a second time for this binary.
	go build -o bin/cabpi .
	@assets="$$(bash hack/envtest-assets.sh)"; status=0; \
	for p in $(TEST_PROVIDERS); do \
		echo "--- test/providers/$$p"; \
		CABPI_BIN="$(CURDIR)/bin/cabpi" CABPI_KUBERNETES_VERSION="$(KUBERNETES_VERSION)" KUBEBUILDER_ASSETS="$$assets" \
			go -C test/providers/$$p test $(GO_TEST_FLAGS) -timeout $(TEST_TIMEOUT) ./... || status=1; \
	done; exit $$status

# Kubernetes and etcd on the real nodes, the same build as envtest's (hack/versions.env).
E2E_KUBERNETES_VERSION ?= $(KUBERNETES_VERSION)
E2E_ETCD_VERSION ?= $(ETCD_VERSION)
E2E_KUBERNETES_PREVIOUS ?= $(KUBERNETES_PREVIOUS)
E2E_TIMEOUT ?= 60m
# How many of the real-node tests run at once (go test -parallel). Four keeps two cores busy
# throughout; six starved the nodes' etcd and API servers (requests timed out, kubeadm failed)
# and was no faster (docs/nodes-in-tests.md, "How long it takes").
E2E_PARALLEL ?= 4

.PHONY: e2e
e2e: deps envtest-assets ignition-apply kustomize clusterctl ## Boot real nodes (systemd-nspawn, real kubeadm and kubelet) from cabpi's output; builds the node image and Kubernetes binaries once (cached).
	CGO_ENABLED=0 go build -trimpath -o "$(CABPI_CACHE)/pause/pause" ./hack/pause
	$(MAKE) --no-print-directory release RELEASE_DIR=$(E2E_RELEASE_DIR)
	$(MAKE) --no-print-directory capi-image
	CABPI_KUBE_BIN="$$(bash hack/kube-binaries.sh $(E2E_KUBERNETES_VERSION) kubeadm kubelet kube-controller-manager kube-apiserver kube-scheduler kube-proxy)" \
	CABPI_KUBE_BIN_PREVIOUS="$$(bash hack/kube-binaries.sh $(E2E_KUBERNETES_PREVIOUS) kubeadm kubelet)" \
	CABPI_ETCD_BIN="$$(bash hack/etcd-binary.sh $(E2E_ETCD_VERSION))/etcd" \
	CABPI_PAUSE_BIN="$(CABPI_CACHE)/pause/pause" \
	KUBEBUILDER_ASSETS="$$(bash hack/envtest-assets.sh)" \
	CABPI_IGNITION_APPLY="$$(IGNITION_VER=$(IGNITION_VER) bash hack/ignition-apply.sh)" \
	CABPI_RELEASE_DIR="$(E2E_RELEASE_DIR)" \
	CABPI_CAPI_IMAGE="$(CAPI_IMAGE_ARCHIVE)" \
	CABPI_CLUSTERCTL="$$(bash hack/clusterctl.sh)" \
	CABPI_KUSTOMIZE="$(KUSTOMIZE)" \
		go test $(GO_TEST_FLAGS) -parallel $(E2E_PARALLEL) -timeout $(E2E_TIMEOUT) ./test/e2e/...

# The release make e2e installs with clusterctl (its image imported into the management
# cluster's node), and Cluster API's core manager as the image its release names, packed once
# per version (the binary is cached by version: hack/capi-binaries.sh).
E2E_RELEASE_DIR ?= $(CURDIR)/out/e2e-release
CAPI_IMAGE_ARCHIVE = $(CABPI_CACHE)/capi/$(CAPI_VERSION)/cluster-api-controller.oci.tar

.PHONY: capi-image
capi-image: ## Build Cluster API's core manager (CAPI_VERSION) and pack it as registry.k8s.io/cluster-api/cluster-api-controller (cached).
	@bin="$$(bash hack/capi-binaries.sh)/manager"; \
	if [ ! -f "$(CAPI_IMAGE_ARCHIVE)" ] || [ "$$bin" -nt "$(CAPI_IMAGE_ARCHIVE)" ]; then \
		SOURCE_DATE_EPOCH=0 go run ./hack/image -binary "$$bin" -platforms linux/amd64 -user 65532 \
			-ref registry.k8s.io/cluster-api/cluster-api-controller:$(CAPI_VERSION) -archive "$(CAPI_IMAGE_ARCHIVE)"; fi

.PHONY: bench-e2e
bench-e2e: ## Run make e2e and write each node's timings (data Secret, boot, kubeadm join, nodeRef) into bench/results.md: a figure.
	CABPI_E2E_RESULTS=bench/results.md $(MAKE) e2e

.PHONY: test-reliability
test-reliability: tools ## The long reliability runs: the real manager SIGKILLed 200 times while 50 configs reconcile (CABPI_CRASH_SEED replays one).
	KUBEBUILDER_ASSETS="$$(bash hack/envtest-assets.sh)" \
	CABPI_IGNITION_APPLY="$$(IGNITION_VER=$(IGNITION_VER) bash hack/ignition-apply.sh)" \
	CABPI_CRASH_KILLS=$${CABPI_CRASH_KILLS:-200} \
		go test $(GO_TEST_FLAGS) -timeout 60m -v -run TestCrashConsistency ./test/integration/crash/

.PHONY: test-update-golden
test-update-golden: ## Rewrite golden files from the current renderer (review the diff!).
	go test ./ignition ./cmd/render ./internal/convert -run Golden -update

# Fuzz targets as package:target, run one after another. Their seeds (f.Add and
# <package>/testdata/fuzz/<target>/) run in `make test` as unit tests. A new interesting input
# is minimized for FUZZMINIMIZETIME only, or minimizing would eat most of a short run.
FUZZ_TARGETS := ./ignition:FuzzRender ./ignition:FuzzButaneMerge ./ignition:FuzzCLCMerge ./webhooks:FuzzValidateSpec ./internal/convert:FuzzConvert
FUZZTIME ?= 60s
FUZZMINIMIZETIME ?= 1s

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 60s; a release needs 10m each, no crasher).
	@for t in $(FUZZ_TARGETS); do \
		pkg="$${t%%:*}"; name="$${t##*:}"; \
		echo "--- fuzz $$name ($$pkg) for $(FUZZTIME)"; \
		KUBEBUILDER_ASSETS="$(NO_APISERVER)" go test "$$pkg" -run '^$$' -fuzz "^$$name\$$" \
			-fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZETIME) -parallel 1 || exit 1; \
	done

.PHONY: bench
bench: tools ## Measure cabpi beside CABPK (throughput at BENCH_N Machines, render, admission, memory, size) into bench/results.md; not part of make test.
	KUBEBUILDER_ASSETS="$$(bash hack/envtest-assets.sh)" \
		go run ./hack/bench -n "$(BENCH_N)" -sections "$(BENCH_SECTIONS)" -out bench/results.md

BENCH_N ?= 100,500,1000
BENCH_SECTIONS ?= render,admission,throughput,memory

.PHONY: verify-gen
verify-gen: generate manifests ## Fail when generated files are out of date.
	@if [ -n "$$(git status --porcelain -- apis config docs/guide/api.md test/framework/infrastructure)" ]; then \
		git status --porcelain -- apis config docs/guide/api.md test/framework/infrastructure; git --no-pager diff -- apis config docs/guide/api.md test/framework/infrastructure | head -50; \
		echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; fi

.PHONY: clean
clean:
	rm -rf bin out _demo

# Feature-specific targets (release manifests, clusterctl, demo) live in mk/*.mk.
-include $(wildcard mk/*.mk)
