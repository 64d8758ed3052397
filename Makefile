# cf-hnc: `make run` starts the system (a local control plane unless KUBECONFIG names a
# cluster), `make test` runs every test. Both build what they need first. `make image`,
# `make deploy` and `make undeploy` install cf-hnc into the cluster of the current kubeconfig
# (docs/install.md).

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen

# The manager's image. `make image` always writes an OCI layout to IMAGE_LAYOUT; with
# KO_DOCKER_REPO it also pushes to $(KO_DOCKER_REPO):$(IMAGE_TAG), with IMAGE_TARBALL it also
# writes a docker tarball (for kind). `make deploy` deploys IMG.
IMAGE_TAG ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
IMAGE_LAYOUT ?= .local/image/oci
IMAGE_TARBALL ?=
IMAGE_TARBALL_REPO ?= cf-hnc.local/cf-hnc-manager
PLATFORMS ?= linux/$(shell go env GOARCH)
KO_DOCKER_REPO ?=
IMG ?= $(if $(KO_DOCKER_REPO),$(KO_DOCKER_REPO),$(IMAGE_TARBALL_REPO)):$(IMAGE_TAG)
# The CF API's URL as the cf CLI reaches it (the host of the certificate in cf-hnc-api-tls).
API_URL ?=

.PHONY: all
all: build

.PHONY: help
help: ## Show the targets.
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# hack/tools.sh installs the Debian packages of the local control plane's real node
# (hack/node-packages.sh: as root, or it prints the apt-get command to run), builds the pinned
# binaries and the images the node's build pods run into a per-user cache and links them into
# bin/; when they are cached it only checks and links them.
.PHONY: tools
tools: ## Install the node's Debian packages, build the pinned control-plane and node binaries and images (cached per user; the first build takes about 1.5 hours on 2 cores).
	@hack/tools.sh

.PHONY: manifests
manifests: tools ## Generate the CRDs, RBAC and webhook configurations in config/.
	$(CONTROLLER_GEN) rbac:roleName=cf-hnc-manager-role crd webhook paths="./..." \
		output:crd:artifacts:config=config/crd/bases \
		output:rbac:artifacts:config=config/rbac \
		output:webhook:artifacts:config=config/webhook

.PHONY: generate
generate: tools ## Generate the deep-copy functions of the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths="./api/..."

.PHONY: build
build: generate manifests ## Build the manager, the kubectl-cf plugin and the CF API server into bin/.
	go build -o $(BIN)/cf-hnc .
	go build -o $(BIN)/kubectl-cf ./cmd/kubectl-cf
	go build -o $(BIN)/cf-api ./cmd/cf-api
	install -m 0755 cmd/kubectl-cf/kubectl_complete-cf $(BIN)/kubectl_complete-cf

.PHONY: run
run: build ## Run the system: a local control plane with everything (the CF API for the cf CLI on 127.0.0.1:9000), or the manager against $KUBECONFIG.
	go run ./cmd/cf-hnc-local

.PHONY: test
test: generate manifests lint ## Lint, then run the unit, integration, e2e and fault tests.
	go test -count=1 -timeout 45m -v ./...

# lint runs before the go test suites in `make test`, so go test's summary still ends the output.
.PHONY: lint
lint: tools ## Check the code with golangci-lint (.golangci.yml: formatting, vet, import aliases, function length).
	$(BIN)/golangci-lint run ./...

.PHONY: test-faults
test-faults: generate manifests ## Run only the fault specs (HNC, kpack and the apiserver restarted, the manager killed); make test runs them too.
	go test -count=1 -timeout 30m -v ./e2e/ -ginkgo.label-filter=faults

.PHONY: crd-baseline
crd-baseline: manifests ## Add new fields of the v1alpha1 CRDs to config/crd/v1alpha1-fields.txt (it never removes one).
	CF_HNC_UPDATE_CRD_BASELINE=1 go test -count=1 -run TestInstall ./internal/install/ -ginkgo.focus 'v1alpha1 CRDs'

.PHONY: image
image: tools ## Build the manager's image without Docker (ko): an OCI layout in .local/image/oci; KO_DOCKER_REPO=<repo> pushes it too.
	rm -rf $(IMAGE_LAYOUT)
	$(BIN)/cf-hnc-image --project . --platforms $(PLATFORMS) --oci-layout $(IMAGE_LAYOUT) \
		$(if $(KO_DOCKER_REPO),--repo $(KO_DOCKER_REPO) --tag $(IMAGE_TAG)) \
		$(if $(IMAGE_TARBALL),--tarball $(IMAGE_TARBALL) --tarball-ref $(IMAGE_TARBALL_REPO) --tag $(IMAGE_TAG))

.PHONY: deploy
deploy: manifests ## Install or upgrade cf-hnc (config/default, image IMG, the CF API at API_URL) in the cluster of the current kubeconfig, with server-side apply.
	go run ./cmd/cf-hnc-local deploy --image $(IMG) --api-url $(API_URL)

.PHONY: undeploy
undeploy: ## Remove cf-hnc's manager from the current cluster, keeping orgs, spaces and CRDs; PURGE=true deletes every org and the CRDs too.
	go run ./cmd/cf-hnc-local undeploy $(if $(filter true,$(PURGE)),--purge)

.PHONY: e2e-cluster
e2e-cluster: ## Run the e2e specs that need only a cluster against KUBECONFIG (HNC, kpack and cf-hnc deployed there).
	@test -n "$${KUBECONFIG:-}" || { echo "set KUBECONFIG to a cluster with HNC, kpack and cf-hnc (make deploy)"; exit 1; }
	CF_HNC_E2E_KUBECONFIG="$${KUBECONFIG}" go test -count=1 -timeout 30m -v ./e2e/ -run TestE2E

.PHONY: kind-up
kind-up: ## Make a kind cluster with HNC, kpack and cf-hnc (needs Docker or Podman and the internet: it cannot run on machines without a container engine, such as ours).
	IMAGE_TAG=$(IMAGE_TAG) hack/kind-up.sh

.PHONY: bench
bench: build ## Run the side-by-side benchmark (bench/, 10 orgs x 100 spaces): writes docs/benchmarks.md and .local/bench; BENCH_FLAGS="-orgs 2 -spaces 20" for a small run.
	go run ./bench $(BENCH_FLAGS)

.PHONY: clean
clean: ## Remove bin/ and .local/ (the tool cache stays).
	rm -rf $(BIN) .local
