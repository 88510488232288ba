# virt-advisor. `make run` brings up a local control plane with the server
# registered through an APIService (`make reset` forgets its state, keeps
# the built tools); `make test` runs every test; `make soak` runs the soak
# (SOAK_DURATION, default 20m; not part of make test).

SHELL := /usr/bin/env bash
BIN := $(CURDIR)/_output/bin
KUBE_VERSION := v1.36.3
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# kube-apiserver, kubectl, etcd and kube-controller-manager (which signs
# the OCM agents' certificates in the fleet specs) are built from Go
# modules (hack/tools); prebuilt binaries cannot be downloaded here.
KUBE_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=36 \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION)
TOOLS := $(BIN)/kube-apiserver $(BIN)/kubectl $(BIN)/etcd $(BIN)/kube-controller-manager
# Open Cluster Management's binaries (see $(OCM) below).
OCM_CMDS := registration work placement registration-operator
OCM := $(addprefix $(BIN)/ocm/,$(OCM_CMDS))
GO_TEST_FLAGS ?=
CHROMIUM ?= /usr/bin/chromium
# The state of `make run`: PKI, etcd data, kubeconfigs, logs.
LOCAL_DIR ?= _output/local

.PHONY: all build build-race tools run reset test unit e2e soak chromium screenshots test-alerts bench bench-windows bench-capacity bench-gates bench-figures verify update-codegen clean

all: build

build:
	@mkdir -p $(BIN)
	go build -ldflags "-X github.com/kubevirt/virt-advisor/pkg/version.Version=$(VERSION)" \
		-o $(BIN)/ ./cmd/virt-advisor-apiserver ./cmd/kubectl-advisor

tools: $(TOOLS) $(BIN)/prometheus $(BIN)/alertmanager $(OCM)

# The first build downloads the modules and compiles up to 2 300 packages:
# about 12 minutes on 2 cores (11 min 40 s measured on 2 busy ones); later
# ones reuse Go's build cache. hack/build-progress.sh prints how far it is.
#
# Built tools are also kept in TOOLS_CACHE, in a directory named after a
# hash of what they are built from (module files, flags, Go version): a
# fresh clone on the same machine, as CI's, copies them in a second
# instead of linking them again (or, with Go's cache trimmed, compiling
# them). TOOLS_CACHE= turns it off.
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/virt-advisor/tools
# tools_key FILES…: the cache directory of what FILES and the flags build.
tools_key = $(TOOLS_CACHE)/$(shell { cat $(1); echo '$(KUBE_LDFLAGS)'; go env GOVERSION GOOS GOARCH; } | sha256sum | cut -c1-16)
# from_cache DIR, BINARIES…: copies them from DIR into $(BIN) if DIR has them all.
from_cache = [ -n "$(TOOLS_CACHE)" ] && (cd $(1) 2>/dev/null && ls $(notdir $(2)) >/dev/null 2>&1) && \
	cp $(addprefix $(1)/,$(notdir $(2))) $(BIN)/ && echo ">> $(notdir $(2)) copied from $(1) (built before from the same sources)"
# to_cache DIR, BINARIES…: keeps them in DIR (each written aside under
# this shell's PID, then renamed: two makes may store the same tools).
to_cache = if [ -n "$(TOOLS_CACHE)" ]; then mkdir -p $(1) && for b in $(2); do \
	cp $$b $(1)/.$$(basename $$b).$$$$ && mv $(1)/.$$(basename $$b).$$$$ $(1)/$$(basename $$b); done; fi

TOOLS_PKGS := k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl ./etcd k8s.io/kubernetes/cmd/kube-controller-manager
TOOLS_INPUTS := hack/tools/go.mod hack/tools/go.sum hack/tools/etcd/main.go
$(TOOLS) &: $(TOOLS_INPUTS)
	@mkdir -p $(BIN)
	@key=$(call tools_key,$(TOOLS_INPUTS)); if ! { $(call from_cache,$$key,$(TOOLS)); }; then \
		echo ">> building kube-apiserver, kubectl, kube-controller-manager $(KUBE_VERSION) and etcd from Go modules into $(BIN)" && \
		echo ">> the first build takes about 12 minutes on 2 cores (later ones reuse Go's cache); progress every 20s" && \
		echo ">> listing the packages (downloads the modules the first time)" && \
		set -o pipefail && cd hack/tools && total=$$(go list -deps $(TOOLS_PKGS) | wc -l) && \
		go build -v -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ $(TOOLS_PKGS) 2>&1 | ../build-progress.sh "kube-apiserver, kubectl, kube-controller-manager, etcd" $$total && \
		cd $(CURDIR) && $(call to_cache,$$key,$(TOOLS)); fi
	@touch $(TOOLS)

# promtool tests the alerting rules; built from its Go module like the
# tools above, without the cloud service discoveries it does not need here.
PROMTOOL_INPUTS := hack/tools/promtool/go.mod hack/tools/promtool/go.sum
$(BIN)/promtool: $(PROMTOOL_INPUTS)
	@mkdir -p $(BIN)
	@key=$(call tools_key,$(PROMTOOL_INPUTS)); if ! { $(call from_cache,$$key,$@); }; then \
		echo ">> building promtool from its Go module (first time: a few minutes on 2 cores); progress every 20s" && \
		set -o pipefail && cd hack/tools/promtool && total=$$(go list -deps -tags remove_all_sd github.com/prometheus/prometheus/cmd/promtool | wc -l) && \
		go build -v -tags remove_all_sd -o $(BIN)/promtool github.com/prometheus/prometheus/cmd/promtool 2>&1 | ../../build-progress.sh promtool $$total && \
		cd $(CURDIR) && $(call to_cache,$$key,$@); fi
	@touch $@

# Prometheus and Alertmanager run as processes in the e2e suite (test/env):
# Prometheus evaluates alerting rules over a metric a test serves and sends
# what fires to Alertmanager. Built from their Go modules like promtool
# (Prometheus without the cloud service discoveries); the first build of
# each takes several minutes on 2 cores.
PROMETHEUS_INPUTS := hack/tools/prometheus/go.mod hack/tools/prometheus/go.sum
$(BIN)/prometheus: $(PROMETHEUS_INPUTS)
	@mkdir -p $(BIN)
	@key=$(call tools_key,$(PROMETHEUS_INPUTS)); if ! { $(call from_cache,$$key,$@); }; then \
		echo ">> building prometheus from its Go module (first time: several minutes on 2 cores); progress every 20s" && \
		set -o pipefail && cd hack/tools/prometheus && total=$$(go list -deps -tags remove_all_sd github.com/prometheus/prometheus/cmd/prometheus | wc -l) && \
		go build -v -tags remove_all_sd -o $(BIN)/prometheus github.com/prometheus/prometheus/cmd/prometheus 2>&1 | ../../build-progress.sh prometheus $$total && \
		cd $(CURDIR) && $(call to_cache,$$key,$@); fi
	@touch $@

# The Alertmanager module ships the sources of its web UI, not the built
# UI it embeds (ui/app/dist): it is built from a copy of the module with a
# placeholder page there (the tests use its API only), through a go.mod of
# its own replacing the module with that copy.
ALERTMANAGER_INPUTS := hack/tools/alertmanager/go.mod hack/tools/alertmanager/go.sum hack/tools/alertmanager/ui-placeholder.html
AM_SRC := $(CURDIR)/_output/alertmanager-src
$(BIN)/alertmanager: $(ALERTMANAGER_INPUTS)
	@mkdir -p $(BIN)
	@key=$(call tools_key,$(ALERTMANAGER_INPUTS)); if ! { $(call from_cache,$$key,$@); }; then \
		echo ">> building alertmanager from its Go module (first time: a few minutes on 2 cores); progress every 20s" && \
		set -o pipefail && cd hack/tools/alertmanager && src=$$(go list -m -f '{{.Dir}}' github.com/prometheus/alertmanager) && \
		rm -rf $(AM_SRC) && cp -r $$src $(AM_SRC) && chmod -R u+w $(AM_SRC) && mkdir -p $(AM_SRC)/ui/app/dist && \
		cp ui-placeholder.html $(AM_SRC)/ui/app/dist/index.html && cp go.sum $(AM_SRC).sum && \
		{ cat go.mod; echo 'replace github.com/prometheus/alertmanager => $(AM_SRC)'; } > $(AM_SRC).mod && \
		total=$$(go list -modfile=$(AM_SRC).mod -deps github.com/prometheus/alertmanager/cmd/alertmanager | wc -l) && \
		go build -modfile=$(AM_SRC).mod -v -o $(BIN)/alertmanager github.com/prometheus/alertmanager/cmd/alertmanager 2>&1 | ../../build-progress.sh alertmanager $$total && \
		cd $(CURDIR) && $(call to_cache,$$key,$@); fi
	@touch $@

# Open Cluster Management runs as processes in the fleet e2e specs
# (test/env/ocm.go): its hub controllers and its klusterlet agent, built
# from its Go module in a module of its own (hack/tools/ocm: OCM is on
# another Kubernetes minor), into $(BIN)/ocm, with the CRDs they serve
# copied from its API module (OCM_HUB_CRDS on the hub, OCM_SPOKE_CRDS on
# each spoke). Kept in TOOLS_CACHE like the tools above; the first build
# takes several minutes on 2 cores.
OCM_INPUTS := hack/tools/ocm/go.mod hack/tools/ocm/go.sum
OCM_HUB_CRDS := cluster/v1/0000_00_clusters.open-cluster-management.io_managedclusters.crd.yaml \
	cluster/v1beta2/0000_00_clusters.open-cluster-management.io_managedclustersets.crd.yaml \
	cluster/v1beta2/0000_01_clusters.open-cluster-management.io_managedclustersetbindings.crd.yaml \
	cluster/v1beta1/0000_02_clusters.open-cluster-management.io_placements.crd.yaml \
	cluster/v1beta1/0000_03_clusters.open-cluster-management.io_placementdecisions.crd.yaml \
	cluster/v1alpha1/0000_05_clusters.open-cluster-management.io_addonplacementscores.crd.yaml \
	work/v1/0000_00_work.open-cluster-management.io_manifestworks.crd.yaml \
	work/v1alpha1/0000_00_work.open-cluster-management.io_manifestworkreplicasets.crd.yaml \
	addon/v1alpha1/0000_01_addon.open-cluster-management.io_managedclusteraddons.crd.yaml
OCM_SPOKE_CRDS := work/v1/0000_01_work.open-cluster-management.io_appliedmanifestworks.crd.yaml \
	cluster/v1alpha1/0000_02_clusters.open-cluster-management.io_clusterclaims.crd.yaml
$(OCM) &: $(OCM_INPUTS)
	@mkdir -p $(BIN)
	@key=$(call tools_key,$(OCM_INPUTS)); \
	if [ -n "$(TOOLS_CACHE)" ] && [ -d $$key/ocm/crds ]; then \
		rm -rf $(BIN)/ocm && cp -r $$key/ocm $(BIN)/ocm && echo ">> OCM copied from $$key (built before from the same sources)"; \
	else \
		echo ">> building Open Cluster Management (registration, work, placement, klusterlet agent) from its Go module (first time: several minutes on 2 cores); progress every 20s" && \
		set -o pipefail && cd hack/tools/ocm && pkgs="$(addprefix open-cluster-management.io/ocm/cmd/,$(OCM_CMDS))" && \
		total=$$(go list -deps $$pkgs | wc -l) && rm -rf $(BIN)/ocm && mkdir -p $(BIN)/ocm/crds/hub $(BIN)/ocm/crds/spoke && \
		go build -v -o $(BIN)/ocm/ $$pkgs 2>&1 | ../../build-progress.sh OCM $$total && \
		api=$$(go list -m -f '{{.Dir}}' open-cluster-management.io/api) && \
		for f in $(OCM_HUB_CRDS); do cp $$api/$$f $(BIN)/ocm/crds/hub/; done && \
		for f in $(OCM_SPOKE_CRDS); do cp $$api/$$f $(BIN)/ocm/crds/spoke/; done && \
		chmod -R u+w $(BIN)/ocm && cd $(CURDIR) && \
		if [ -n "$(TOOLS_CACHE)" ]; then mkdir -p $$key && rm -rf $$key/.ocm.$$$$ && cp -r $(BIN)/ocm $$key/.ocm.$$$$ && \
			rm -rf $$key/ocm && mv $$key/.ocm.$$$$ $$key/ocm; fi; \
	fi
	@touch $(OCM)

# exec: the recipe's process is local-up itself, which stops the control
# plane on SIGINT or SIGTERM. make forwards SIGTERM to it; SIGINT, as a
# terminal's Ctrl-C, must reach the process group (make forwards no SIGINT).
# It needs the control plane's tools only (it starts no Prometheus), and
# OCM with RUN_FLAGS=--fleet (docs/fleet.md).
run: $(TOOLS) build $(if $(findstring --fleet,$(RUN_FLAGS)),$(OCM))
	@go build -o $(BIN)/local-up ./test/cmd/local-up
	@exec $(BIN)/local-up --dir $(LOCAL_DIR) --bin-dir $(BIN) $(RUN_FLAGS)

# A fresh control plane for the next `make run`: removes its state
# (LOCAL_DIR), keeps the tools in _output/bin. Refused while it runs.
reset:
	@if [ -e $(LOCAL_DIR)/.lock ] && ! flock -n $(LOCAL_DIR)/.lock true; then \
		echo "$(LOCAL_DIR) is in use by a running make run: stop it (Ctrl-C) first" >&2; exit 1; fi
	rm -rf $(LOCAL_DIR)
	@echo ">> the next make run starts a fresh control plane; the tools in $(BIN) are kept"

test: unit test-alerts e2e

# -race: the controller, the plan engine and the watches run concurrently.
unit:
	go test -race $(GO_TEST_FLAGS) ./pkg/... ./cmd/... ./test/env/... ./artifacts/... ./test/cmd/... ./docs/... ./hack/ ./hack/funcbounds/ ./hack/optionsgen/

# The alerting rules: valid, and every alert tested firing and not firing.
test-alerts: $(BIN)/promtool
	$(BIN)/promtool check rules artifacts/monitoring/rules.yaml
	$(BIN)/promtool test rules artifacts/monitoring/tests/*.yaml

# The server built with the race detector; one e2e spec file runs it and
# checks its log for DATA RACE.
build-race:
	@mkdir -p $(BIN)
	go build -race -o $(BIN)/virt-advisor-apiserver-race ./cmd/virt-advisor-apiserver

# The ginkgo CLI runs the suite on E2E_PROCS processes, each with a
# control plane of its own (BeforeSuite): most specs wait on rollouts,
# windows and restarts rather than compute, so they overlap well on 2
# cores. Specs that must run alone are Serial (CONTRIBUTING.md). The CLI
# is built from the ginkgo module go.mod pins. GINKGO_FLAGS adds flags,
# e.g. GINKGO_FLAGS="--focus-file resilience_test.go" or --procs=1.
GINKGO := $(BIN)/ginkgo
E2E_PROCS ?= 4
GINKGO_FLAGS ?=
$(GINKGO): go.mod go.sum
	@mkdir -p $(BIN)
	go build -o $@ github.com/onsi/ginkgo/v2/ginkgo

e2e: tools build build-race chromium $(GINKGO)
	@mkdir -p _output
	rm -f _output/e2e-failures.txt
	CHROMIUM=$(CHROMIUM) E2E_TIMES=$(CURDIR)/_output/e2e-times.txt E2E_FAILURES=$(CURDIR)/_output/e2e-failures.txt $(GINKGO) --procs=$(E2E_PROCS) --timeout=40m -v \
		--label-filter='!soak' $(GINKGO_FLAGS) ./test/e2e; \
		status=$$?; cat _output/e2e-times.txt; exit $$status

# The soak (not part of make test): SOAK_DURATION (default 20m) of review,
# approve, rollout, drift and revert across both MachineConfig profiles
# under random faults; SOAK_SEED replays a run. It prints its figures.
SOAK_DURATION ?= 20m
SOAK_TIMEOUT ?= 2h
soak: tools build
	SOAK_DURATION=$(SOAK_DURATION) SOAK_SEED=$(SOAK_SEED) go test $(GO_TEST_FLAGS) -v -timeout $(SOAK_TIMEOUT) ./test/e2e/... -args -ginkgo.v -ginkgo.label-filter=soak

# The dashboard's e2e specs drive a headless Chromium (CHROMIUM): Debian's
# package, installed when missing (CI runs as root on a fresh machine).
chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
		if [ "$$(id -u)" != 0 ]; then \
			echo "$(CHROMIUM) is missing: install Debian's chromium package (apt-get install chromium) or set CHROMIUM=/path/to/chromium" >&2; exit 1; \
		fi; \
		echo ">> installing chromium from Debian (about a minute)"; start=$$(date +%s); \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium && \
		echo ">> chromium installed in $$(( $$(date +%s) - start ))s"; \
	fi

# docs/images/dashboard-*.png: the screenshots the dashboard's e2e specs take
# (all of them also go to _output/e2e-artifacts).
screenshots: tools build chromium
	CHROMIUM=$(CHROMIUM) go test -timeout 20m ./test/e2e/... -args -ginkgo.focus='kubectl advisor dashboard' -dashboard-screenshots=$(CURDIR)/docs/images

# Figures on the real control plane: plan latency vs. floor, approval to
# apply, drift detection, memory with 10 000 unrelated objects of each kind.
# First the in-process targets: one evaluation of maintenance windows
# (up to 100 on a pool, the worst schedules) under 10 ms of CPU time; a miss fails.
bench: bench-windows bench-capacity bench-gates tools $(OCM) build
	go run ./test/cmd/bench $(BENCH_FLAGS)

bench-windows:
	go test -tags bench -count=1 -run '^TestEvaluationSpeedTarget$$' -v ./pkg/apis/advisor/maintenanceschedule/

# The capacity check of a pool of 500 nodes with 10 000 VMs within 20 % of
# the plan time it is part of (pkg/plan/capacity_speed_test.go); a miss fails.
bench-capacity:
	go test -tags bench -count=1 -run '^TestCapacitySpeedTarget$$' -v ./pkg/plan/

# The gates between two steps of a pool's rollout (500 nodes, 10 000 VMIs
# and migrations on record) within 5 ms of CPU
# (pkg/controller/pools/gates_speed_test.go); a miss fails.
bench-gates:
	go test -tags bench -count=1 -run '^TestGatesSpeedTarget$$' -v ./pkg/controller/pools/

# Records a run in test/cmd/bench/README.md, from its -json output (kept
# in _output/bench.json), as the newest of the latest five runs it shows
# (older ones stay in git). A run that misses a target (exit 1) is
# recorded too; one that cannot measure (exit 2) is not.
bench-figures: bench-windows bench-capacity bench-gates tools $(OCM) build
	go build -ldflags "-X github.com/kubevirt/virt-advisor/pkg/version.Version=$(VERSION)" -o $(BIN)/bench ./test/cmd/bench
	$(BIN)/bench -json $(BENCH_FLAGS) > _output/bench.json || [ $$? -eq 1 ]
	$(BIN)/bench -figures-json _output/bench.json -readme test/cmd/bench/README.md

# The packages whose functions stay within 60 lines and cyclomatic
# complexity 15 (hack/funcbounds), but for those of its allowlist, which
# may only shrink.
FUNCBOUNDS_PKGS := ./pkg/... ./cmd/...

# Generated code up to date (and the deploy artifacts and samples
# derived from the profiles' declarations: their tests without -update),
# gofmt, go vet, function length and complexity, the controller's types
# and files within 20 methods and 600 lines, no import out of pkg/apis
# from under it (hack/funcbounds), and the documentation's links and the
# README's length (docs/docs_test.go).
verify:
	hack/verify-codegen.sh
	go test ./artifacts/deploy ./artifacts/samples -run '^(TestRBACIsWhatTheProfilesWrite|TestPolicyIsWhatTheProfilesWrite|TestPolicyPinsWhatTheCatalogueWrites|TestPoliciesPerResourceAreDerived|TestSamplesAreGenerated)$$'
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go run ./hack/funcbounds -allowlist hack/funcbounds/allowlist.txt $(FUNCBOUNDS_PKGS)
	go run ./hack/funcbounds -check receivers -allowlist hack/funcbounds/receivers-allowlist.txt ./pkg/controller/...
	go run ./hack/funcbounds -check imports ./pkg/apis/...
	go test ./docs/...

update-codegen:
	hack/update-codegen.sh

clean:
	rm -rf _output
