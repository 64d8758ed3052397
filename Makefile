# cf-hnc: `make run` starts the system (a local control plane unless KUBECONFIG names a
# cluster), `make test` runs every test. Both build what they need first.

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

BIN := $(CURDIR)/bin
CONTROLLER_GEN := $(BIN)/controller-gen

.PHONY: all
all: build

.PHONY: help
help: ## Show the targets.
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

# hack/tools.sh builds the pinned binaries into a per-user cache and links them into bin/; when
# they are cached it only checks and links them.
.PHONY: tools
tools: ## Build the pinned control-plane binaries (cached per user; the first build takes about an hour on 2 cores).
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
build: generate manifests ## Build the manager and the kubectl-cf plugin into bin/.
	go build -o $(BIN)/cf-hnc .
	go build -o $(BIN)/kubectl-cf ./cmd/kubectl-cf
	install -m 0755 cmd/kubectl-cf/kubectl_complete-cf $(BIN)/kubectl_complete-cf

.PHONY: run
run: build ## Run the system: a local control plane with everything, or the manager against $KUBECONFIG.
	go run ./cmd/cf-hnc-local

.PHONY: test
test: generate manifests ## Run the unit, integration and e2e tests.
	go test -count=1 -timeout 45m -v ./...

.PHONY: bench
bench: generate manifests ## Run the benchmarks on the local control plane.
	go test -run '^$$' -bench . -benchtime 1x -timeout 60m ./e2e/...

.PHONY: clean
clean: ## Remove bin/ and .local/ (the tool cache stays).
	rm -rf $(BIN) .local
