# Caldera's build. Everything a fresh machine needs comes from the Go module
# proxy through go.mod; no other downloads.
SHELL := /bin/bash
GO ?= go
# The binary is kube-scheduler 1.37.2 plus Caldera's plugins: the Kubernetes
# version must stay 1.37.x (feature gates and compatibility checks read it), so
# Caldera's own version rides in the semver pre-release part.
KUBE_VERSION := v1.37.2
CALDERA_VERSION ?= 0.1.0
GIT_SHA := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
VERSION ?= $(KUBE_VERSION)-caldera.$(CALDERA_VERSION)+$(GIT_SHA)
VERSION_LDFLAGS := -X k8s.io/component-base/version.gitVersion=$(VERSION) \
	-X k8s.io/component-base/version.gitMajor=1 \
	-X k8s.io/component-base/version.gitMinor=37 \
	-X k8s.io/component-base/version.gitCommit=$(GIT_SHA)
LDFLAGS := $(VERSION_LDFLAGS) -X k8s.io/component-base/version.buildDate=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)
POLICY_PKGS := ./pkg/gang/... ./pkg/resources/... ./pkg/convert/... ./pkg/groupspec/... ./pkg/dialect/... ./pkg/queue/... ./pkg/reclaim/... ./pkg/placement/... ./pkg/cache/... ./pkg/status/... ./pkg/admission/... ./pkg/dumpsignal/... ./pkg/plugins/... ./pkg/plan/... ./pkg/disruption/... ./pkg/noderoom/... ./pkg/runlimit/... ./pkg/feed/... ./pkg/gangbook/... ./pkg/podslim/...
INTEGRATION_TIMEOUT ?= 30m

.PHONY: all build test fmt-check vet unit integration test-random crds crds-volcano verify clean bench-unit bench bench-full bench-scale bench-upstream bench-quality etcd sandbox demo sandbox-autoscaler image image-check

all: build

## build: bin/caldera-scheduler, kube-scheduler with Caldera's plugins.
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/caldera-scheduler ./cmd/scheduler
	$(GO) build -o bin/kubectl-caldera ./cmd/kubectl-caldera

# The image `make image` writes, and the name and tag manifests/ and the chart
# reference (make verify checks that they agree).
IMAGE_NAME ?= caldera-scheduler
IMAGE_TAG ?= $(CALDERA_VERSION)
IMAGE_OUT ?= bin/caldera-scheduler-image.tar
# Every timestamp in the image (and the binary's build date) is the commit's,
# so the same commit gives the same image digest.
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null || echo 0)
IMAGE_LDFLAGS := $(VERSION_LDFLAGS) \
	-X k8s.io/component-base/version.buildDate=$(shell date -u -d @$(SOURCE_DATE_EPOCH) +%Y-%m-%dT%H:%M:%SZ)

## image: $(IMAGE_OUT), the scheduler's container image (OCI layout with
## docker save's manifest.json; static binary, empty base, user 65532), built
## without a Docker engine by hack/image. Load it with `docker load -i`, `kind
## load image-archive` or `ctr images import`; docs/deploy.md.
image:
	CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=false -ldflags "$(IMAGE_LDFLAGS)" -o bin/image/caldera-scheduler ./cmd/scheduler
	$(GO) -C hack/image run . --out $(CURDIR)/$(IMAGE_OUT) --tag $(IMAGE_NAME):$(IMAGE_TAG) --epoch $(SOURCE_DATE_EPOCH) \
		--file $(CURDIR)/bin/image/caldera-scheduler:/usr/local/bin/caldera-scheduler:755 \
		--file $(CURDIR)/manifests/scheduler/config.yaml:/etc/caldera/config.yaml:644 \
		--cmd --config=/etc/caldera/config.yaml \
		--label org.opencontainers.image.title=caldera-scheduler \
		--label org.opencontainers.image.version=$(VERSION) \
		--label org.opencontainers.image.revision=$(GIT_SHA) \
		--label org.opencontainers.image.source=https://github.com/caldera-sched/caldera

## image-check: the Deployment, its kustomization, the chart and the kubeadm
## static pod use the image make image writes.
image-check:
	@grep -qx '    newTag: "$(IMAGE_TAG)"' manifests/kustomization.yaml || \
		{ echo "manifests/kustomization.yaml does not set the tag $(IMAGE_TAG) (make image)"; exit 1; }
	@grep -qx '          image: $(IMAGE_NAME):$(IMAGE_TAG)' manifests/scheduler/deployment.yaml || \
		{ echo "manifests/scheduler/deployment.yaml does not use $(IMAGE_NAME):$(IMAGE_TAG) (make image)"; exit 1; }
	@grep -qx '      image: $(IMAGE_NAME):$(IMAGE_TAG)' manifests/kubeadm/kube-scheduler.yaml || \
		{ echo "manifests/kubeadm/kube-scheduler.yaml does not use $(IMAGE_NAME):$(IMAGE_TAG) (make image)"; exit 1; }
	@grep -qx '  repository: $(IMAGE_NAME)' charts/caldera/values.yaml && grep -qx '  tag: "$(IMAGE_TAG)"' charts/caldera/values.yaml || \
		{ echo "charts/caldera/values.yaml does not use $(IMAGE_NAME):$(IMAGE_TAG) (make image)"; exit 1; }

## sandbox: bin/caldera-sandbox, a whole simulated cluster in one process
## (etcd, kube-apiserver, the Caldera scheduler, KWOK nodes); docs/sandbox.md.
sandbox:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/caldera-sandbox ./cmd/sandbox

## demo: run the sandbox with team queues, a stream of sample gangs and a live
## status table (Ctrl-C stops it). SANDBOX_ARGS adds flags, e.g. --nodes 8.
demo: sandbox
	bin/caldera-sandbox --demo $(SANDBOX_ARGS)

## sandbox-autoscaler: the sandbox with a real cluster autoscaler beside it:
## builds Karpenter's KWOK provider (make karpenter) and runs
## bin/caldera-sandbox --autoscaler (one static node; pods that do not fit
## get Karpenter nodes, empty ones are consolidated away); docs/sandbox.md.
sandbox-autoscaler: sandbox karpenter
	bin/caldera-sandbox --autoscaler $(SANDBOX_ARGS)

## test: format check, vet, race-checked unit tests, integration tests.
test: fmt-check vet unit integration

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) build ./...
	$(GO) vet ./...
	$(GO) -C hack/image vet ./...

unit:
	$(GO) test -race -count=1 $(POLICY_PKGS)
	$(GO) test -count=1 ./pkg/apis/... ./cmd/...
	$(GO) test -count=1 ./test/quality/trace/ ./test/quality/score/
	$(GO) -C hack/image test -count=1 ./...

# internal/localcluster's own test starts a cluster too, so it runs here.
# Its failures are repeated at the end of the output (hack/test-with-summary.sh).
integration:
	LOG=_output/integration.log hack/test-with-summary.sh \
		$(GO) test -count=1 -timeout $(INTEGRATION_TIMEOUT) ./internal/... ./test/integration/...

## test-random: the randomized invariant harness (test/integration/random)
## over SEEDS seeds from SEED (default: 10 seeds from the current time; `make
## test` plays its fixed default seeds, 1 and 2). A failure prints its replay
## line, e.g. `make test-random SEEDS=1 SEED=1234`. About 35 s per seed.
## The whole scheduler log of every failed seed is kept in RANDOM_LOGS.
## SHARDS=2 plays the seeds in two processes at once (half the time on 2
## cores; each shard's output in RANDOM_LOGS/shard-K.log).
SEEDS ?= 10
SHARDS ?= 1
RANDOM_LOGS ?= $(CURDIR)/_output/random-logs
ifndef SEED
SEED := $(shell date +%s)
endif
test-random:
	@echo "test-random: seeds $(SEED) .. $$(( $(SEED) + $(SEEDS) - 1 ))"
ifeq ($(SHARDS),1)
	CALDERA_KEEP_LOGS=$(RANDOM_LOGS) $(GO) test -count=1 -timeout $$(( $(SEEDS) * 3 + 5 ))m -v -run '^TestRandom$$' ./test/integration/random/ \
		-args -random.seed=$(SEED) -random.seeds=$(SEEDS)
else
	hack/test-random-shards.sh $(SEED) $(SEEDS) $(SHARDS) $(RANDOM_LOGS)
endif

## bench-unit: Go benchmarks of the hot paths (Less, PreEnqueue, cache events).
bench-unit:
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/...

# Benchmark workloads (test/perf, docs/performance.md). Never part of `make
# test`: TestPerf skips itself unless -perf.size is given. BENCH_ARGS adds
# flags, e.g. BENCH_ARGS='-perf.runs=3' or -perf.external-cmd='...'.
BENCH_OUT ?= $(CURDIR)/bench-results
BENCH_ARGS ?=
BENCH_UNIT_PKGS := ./pkg/cache/... ./pkg/queue/...

## bench: W1-W3, W5 (with M1, the live heap at 10,000 bound pods) and W6 (1 minute of
## churn) at a quick size, default vs Caldera vs upstream GangScheduling (9 minutes
## on 2 cores); bench-results/results.{md,json}.
bench:
	@mkdir -p $(BENCH_OUT)
	@echo "bench: quick workloads, log in $(BENCH_OUT)/bench.log"
	@$(GO) test -count=1 -timeout 30m -run '^TestPerf$$' -v ./test/perf \
		-args -perf.size=quick -perf.out=$(BENCH_OUT) $(BENCH_ARGS) >$(BENCH_OUT)/bench.log 2>&1 || \
		{ tail -40 $(BENCH_OUT)/bench.log; exit 1; }
	@cat $(BENCH_OUT)/results.md

## bench-full: the issue's sizes (W1-W3 at 1000 nodes, W5 and M1 over 50,000 bound pods, W6 2
## minutes of churn) plus the W4 Go benchmarks (cache and admission hot paths, -count=5) in
## bench-results/unit.txt.
bench-full:
	@mkdir -p $(BENCH_OUT)
	@echo "bench-full: full workloads, log in $(BENCH_OUT)/bench.log"
	@$(GO) test -count=1 -timeout 120m -run '^TestPerf$$' -v ./test/perf \
		-args -perf.size=full -perf.out=$(BENCH_OUT) $(BENCH_ARGS) >$(BENCH_OUT)/bench.log 2>&1 || \
		{ tail -40 $(BENCH_OUT)/bench.log; exit 1; }
	$(GO) test -run '^$$' -bench . -benchmem -count=5 $(BENCH_UNIT_PKGS) | tee $(BENCH_OUT)/unit.txt
	@cat $(BENCH_OUT)/results.md

## bench-scale: issue 21's scale (docs/performance.md): W1 (10,000 pods) and W2 (1,250 gangs
## of 8) at 5000 nodes, W7 preemption at 1000 and 5000 nodes, W8 placement (gangs of 256 and
## 1024, 5000 nodes in racks), W5 over 150,000 bound pods; up to 45 minutes on 2 cores.
bench-scale:
	@mkdir -p $(BENCH_OUT)
	@echo "bench-scale: 5000-node workloads, log in $(BENCH_OUT)/bench.log"
	@$(GO) test -count=1 -timeout 150m -run '^TestPerf$$' -v ./test/perf \
		-args -perf.size=scale -perf.timeout=20m -perf.out=$(BENCH_OUT) $(BENCH_ARGS) >$(BENCH_OUT)/bench.log 2>&1 || \
		{ tail -40 $(BENCH_OUT)/bench.log; exit 1; }
	@cat $(BENCH_OUT)/results.md

## etcd: bin/etcd, the etcd server go.mod pins, built from the Go module proxy
## (upstream's scheduler_perf starts etcd as a binary found on PATH).
etcd:
	$(GO) build -o bin/etcd go.etcd.io/etcd/server/v3

# Upstream's workloads make bench-upstream runs, as a -bench pattern over
# BenchmarkUpstream/<file>/<test case>/<workload> (test/perf/upstream).
UPSTREAM_BENCH ?= BenchmarkUpstream/(misc|gangscheduling)/(SchedulingBasic|GangScheduling)/^(500Nodes|5000Nodes|5000Nodes_10000Pods|5000Nodes_1000Gangs_3000Pods|5000Nodes_3Gangs_3000Pods_1000PerGroup)$$
UPSTREAM_OUT ?= $(BENCH_OUT)/upstream

## bench-upstream: k8s.io/kubernetes/test/integration/scheduler_perf on its own
## workload files (SchedulingBasic at 500 and 5000 nodes, GangScheduling at 5000),
## kube-scheduler's default profile then Caldera's, and a JSON summary of both
## with upstream's thresholds ($(UPSTREAM_OUT)/summary.json). A profile below an
## upstream threshold fails scheduler_perf's own check; its numbers still count.
bench-upstream: etcd
	@mkdir -p $(UPSTREAM_OUT)/default $(UPSTREAM_OUT)/caldera
	@for p in default caldera; do \
		echo "bench-upstream: $$p profile, log in $(UPSTREAM_OUT)/$$p.log"; \
		PATH=$(CURDIR)/bin:$$PATH $(GO) test -count=1 -timeout 120m -run '^$$' -bench '$(UPSTREAM_BENCH)' -benchtime=1x \
			./test/perf/upstream -args -upstream.profile=$$p -perf-scheduling-label-filter= \
			-data-items-dir=$(UPSTREAM_OUT)/$$p >>$(UPSTREAM_OUT)/$$p.log 2>&1 || \
			echo "bench-upstream: $$p: scheduler_perf reported a failure (threshold or error), see the log"; \
	done
	@$(GO) test -count=1 -run '^TestSummary$$' ./test/perf/upstream -args -upstream.summary=$(UPSTREAM_OUT) >/dev/null
	@cat $(UPSTREAM_OUT)/summary.json

## bench-quality: the scheduling-quality benchmark (test/quality, docs/quality.md):
## one seeded trace of tenants' jobs and gangs played under default, Caldera
## and upstream GangScheduling, each on a fresh control plane (about 25 minutes
## on 2 cores); quality-results/results.{md,json} and the PNG plots, drawn by
## test/quality/plot (its own module, so gonum/plot stays out of go.mod).
## QUALITY_ARGS adds flags, e.g. QUALITY_ARGS='-quality.seed=2 -quality.nodes=60'.
QUALITY_OUT ?= $(CURDIR)/quality-results
QUALITY_ARGS ?=
bench-quality:
	@mkdir -p $(QUALITY_OUT)
	@echo "bench-quality: log in $(QUALITY_OUT)/bench.log"
	@$(GO) test -count=1 -timeout 90m -run '^TestQuality$$' -v ./test/quality \
		-args -quality.out=$(QUALITY_OUT) $(QUALITY_ARGS) >$(QUALITY_OUT)/bench.log 2>&1 || \
		{ tail -40 $(QUALITY_OUT)/bench.log; exit 1; }
	$(GO) -C test/quality/plot run . -in $(QUALITY_OUT)/results.json -out $(QUALITY_OUT)
	@cat $(QUALITY_OUT)/results.md

## crds: copy the PodGroup CRD from the scheduler-plugins module (never
## retyped), and generate Volcano's (crds-volcano).
crds: crds-volcano
	@dir=$$($(GO) list -m -f '{{.Dir}}' sigs.k8s.io/scheduler-plugins) && \
	cp "$$dir/config/crd/bases/scheduling.x-k8s.io_podgroups.yaml" manifests/crds/ && \
	chmod 644 manifests/crds/scheduling.x-k8s.io_podgroups.yaml

## crds-volcano: Volcano's PodGroup and Queue CRDs (scheduling.volcano.sh),
## generated by controller-gen from the volcano.sh/apis types go.mod pins
## (Volcano's module ships no CRD files), into manifests/crds/volcano/ and
## the chart's files/volcano/. Installed only when asked: the kustomize
## component components/volcano, the chart value volcano.enabled.
crds-volcano:
	@$(GO) tool -modfile=hack/tools/go.mod controller-gen crd:crdVersions=v1 \
		paths=volcano.sh/apis/pkg/apis/scheduling/v1beta1 output:crd:artifacts:config=manifests/crds/volcano && \
	chmod 644 manifests/crds/volcano/*.yaml && \
	mkdir -p charts/caldera/files/volcano && cp manifests/crds/volcano/scheduling.volcano.sh_*.yaml charts/caldera/files/volcano/

## verify: generated and copied files match their sources.
verify:
	@tmp=$$(mktemp -d) && cp -r manifests/crds "$$tmp/" && $(MAKE) -s crds && \
	if ! diff -r "$$tmp/crds" manifests/crds; then echo "manifests/crds is stale: run make crds"; rm -rf "$$tmp"; exit 1; fi; \
	rm -rf "$$tmp"
	@GO="$(GO)" hack/verify-codegen.sh
	@hack/verify-tested.sh "$(POLICY_PKGS)"
	@$(MAKE) -s chart-check
	@$(MAKE) -s image-check

.PHONY: generate verify-codegen

## generate: regenerate, from scratch, the Queue API's deepcopy, clientset,
## listers, informers, applyconfigurations (pkg/apis/generated) and its CRD
## (manifests/crds/scheduling.caldera.dev_*.yaml). Tools: hack/tools/go.mod.
generate:
	@GO="$(GO)" hack/update-codegen.sh

## verify-codegen: generated API code and CRDs match the types (tree untouched).
verify-codegen:
	@GO="$(GO)" hack/verify-codegen.sh

# Deployment tools, pinned in their own modules (not the main go.mod, not
# hack/tools) and built from the Go module proxy on first use.
HELM := $(GO) tool -modfile=hack/helm/go.mod helm
KUSTOMIZE := $(GO) tool -modfile=hack/kustomize/go.mod kustomize

.PHONY: chart-check

## chart-check: lint and render the Helm chart, check that its default
## KubeSchedulerConfiguration is manifests/scheduler/config.yaml (compared as
## data, hack/chartconfig) and its CRDs those of manifests/crds, that
## profiles.defaultScheduler.enabled renders manifests/components/sole-scheduler's
## config (and the component applies it), that only that toggle and that
## component serve default-scheduler, and render manifests/ (what
## `kubectl apply -k` applies).
chart-check:
	@$(HELM) lint --strict charts/caldera >/dev/null
	@$(HELM) template caldera charts/caldera --namespace caldera-system --include-crds >/dev/null
	@set -o pipefail; $(HELM) template caldera charts/caldera --namespace caldera-system | \
		$(GO) run ./hack/chartconfig manifests/scheduler/config.yaml
	@$(HELM) template caldera charts/caldera --namespace caldera-system \
		--set scoreWeights.CalderaGangPlacement=3 --set replicas=3 >/dev/null
	@if ! diff -r --exclude=volcano manifests/crds charts/caldera/crds; then \
		echo "charts/caldera/crds differs from manifests/crds: cp manifests/crds/*.yaml charts/caldera/crds/"; exit 1; fi
	@if ! diff -r --exclude=Kustomization manifests/crds/volcano charts/caldera/files/volcano; then \
		echo "charts/caldera/files/volcano differs from manifests/crds/volcano: make crds-volcano"; exit 1; fi
	@$(HELM) template caldera charts/caldera --namespace caldera-system --set volcano.enabled=true | \
		grep -q '^  name: podgroups.scheduling.volcano.sh$$'
	@$(HELM) template caldera charts/caldera --namespace caldera-system --set volcano.schedulerName=volcano | \
		grep -q '^      - schedulerName: volcano$$'
	@$(KUSTOMIZE) build hack/kustomize/volcano-overlay | grep -q '^  name: queues.scheduling.volcano.sh$$'
	@$(HELM) template caldera charts/caldera --namespace caldera-system --set replicas=1 \
		--set monitoring.serviceMonitor.enabled=true --set monitoring.prometheusRule.enabled=true \
		--set monitoring.dashboard.enabled=true --set networkPolicy.enabled=true >/dev/null
	@$(HELM) template caldera charts/caldera --namespace caldera-system \
		--set-json 'featureGates={"SchedulerAsyncPreemption":true}' --set-json 'extraArgs=["--kube-api-qps=100"]' \
		--set-json 'affinity={"nodeAffinity":{}}' | grep -q -- '--feature-gates=SchedulerAsyncPreemption=true'
	@if $(HELM) template caldera charts/caldera --set replica=3 >/dev/null 2>&1; then \
		echo "values.schema.json accepts a misspelt value (replica)"; exit 1; fi
	@for f in prometheusrule.yaml dashboard.json; do \
		if ! diff -q manifests/components/monitoring/$$f charts/caldera/files/$$f >/dev/null; then \
			echo "charts/caldera/files/$$f differs from manifests/components/monitoring/$$f: copy it"; exit 1; fi; done
	@$(KUSTOMIZE) build manifests >/dev/null
	@$(KUSTOMIZE) build hack/kustomize/monitoring-overlay >/dev/null
	@$(KUSTOMIZE) build hack/kustomize/route-overlay | grep -q '^kind: MutatingAdmissionPolicyBinding$$'
	@$(HELM) template caldera charts/caldera --namespace caldera-system --set routePods.enabled=true | \
		grep -q 'schedulerName: "caldera-scheduler"'
	@set -o pipefail; $(HELM) template caldera charts/caldera --namespace caldera-system \
		--set profiles.defaultScheduler.enabled=true --set leaderElection.resourceName=kube-scheduler | \
		$(GO) run ./hack/chartconfig manifests/components/sole-scheduler/config.yaml
	@set -o pipefail; $(KUSTOMIZE) build hack/kustomize/sole-overlay | \
		$(GO) run ./hack/chartconfig manifests/components/sole-scheduler/config.yaml
	@if $(KUSTOMIZE) build manifests | grep -q '^ *- schedulerName: default-scheduler$$'; then \
		echo "kustomize build manifests serves default-scheduler: only components/sole-scheduler may"; exit 1; fi
	@if $(HELM) template caldera charts/caldera | grep -q '^ *- schedulerName: default-scheduler$$'; then \
		echo "the chart's defaults serve default-scheduler: only profiles.defaultScheduler.enabled may"; exit 1; fi
	@if $(HELM) template caldera charts/caldera --set profiles.spread.enabled=false | grep -q 'schedulerName: caldera-scheduler-spread$$'; then \
		echo "profiles.spread.enabled=false still renders the spread profile"; exit 1; fi
	@if $(HELM) template caldera charts/caldera --set profiles.spread.enabled=false \
		--set profiles.batch.plugins.CalderaEnqueue=false --set profiles.batch.plugins.CalderaBinder=false \
		--set profiles.batch.plugins.CalderaGangPlacement=false | \
		grep -E -- '- name: (CalderaEnqueue|CalderaReclaim|CalderaBinder|CalderaGangPlacement|DefaultPreemption|DefaultBinder)$$'; then \
		echo "a plugin toggled off in the chart (or CalderaReclaim without CalderaEnqueue) is still configured"; exit 1; fi
	@echo "chart-check: chart lints and renders (monitoring too) its default config as manifests/scheduler/config.yaml, CRDs and monitoring files in sync, manifests/ renders with and without the monitoring, route-to-caldera, sole-scheduler and volcano components, the sole-scheduler config is the chart's profiles.defaultScheduler rendering, plugins toggled off are gone"

clean:
	rm -rf bin

.PHONY: volcano-controller

## volcano-controller: bin/vc-controller-manager, Volcano's own job
## controller at the release test/neighbours/volcano pins (its own module:
## Volcano pins an older Kubernetes), and that release's CRDs for jobs,
## commands, PodGroups and Queues in bin/volcano-crds. The integration tests
## build the same; `bin/caldera-sandbox --volcano-crds bin/volcano-crds`
## runs a vcjob with it (docs/migrating-from-volcano.md).
VOLCANO_CRD_FILES := batch.volcano.sh_jobs.yaml bus.volcano.sh_commands.yaml scheduling.volcano.sh_podgroups.yaml scheduling.volcano.sh_queues.yaml
volcano-controller:
	$(GO) -C test/neighbours/volcano build -o $(CURDIR)/bin/vc-controller-manager volcano.sh/volcano/cmd/controller-manager
	@mkdir -p bin/volcano-crds && src=$$($(GO) -C test/neighbours/volcano list -m -f '{{.Dir}}' volcano.sh/volcano)/config/crd/volcano/bases && \
	for f in $(VOLCANO_CRD_FILES); do install -m 644 "$$src/$$f" bin/volcano-crds/; done

.PHONY: karpenter

## karpenter: bin/karpenter-kwok, Karpenter's KWOK cloud provider (a real
## cluster autoscaler whose "instances" are Node objects), and bin/kwok,
## the KWOK controller that plays the kubelet of those nodes (Ready
## heartbeat, pods Running), at the releases test/neighbours/karpenter
## pins; Karpenter's CRDs (NodePool, NodeClaim, NodeOverlay,
## CapacityBuffer, KWOKNodeClass) in bin/karpenter-crds and KWOK's fast
## stages in bin/kwok-stages. Karpenter v1.15.0 declares go 1.26.9, newer
## than the machine's Go, so this build alone uses KARPENTER_TOOLCHAIN.
## The integration tests (test/integration/autoscaler) build the same;
## bin/caldera-sandbox --autoscaler runs bin/karpenter-kwok (make
## sandbox-autoscaler).
KARPENTER_TOOLCHAIN := go1.27.3
KARPENTER_GO := GOTOOLCHAIN=$(KARPENTER_TOOLCHAIN) $(GO) -C test/neighbours/karpenter
KARPENTER_CRD_FILES := pkg/apis/crds/karpenter.sh_nodepools.yaml pkg/apis/crds/karpenter.sh_nodeclaims.yaml \
	pkg/apis/crds/karpenter.sh_nodeoverlays.yaml pkg/apis/crds/autoscaling.x-k8s.io_capacitybuffers.yaml \
	kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml
KWOK_STAGE_FILES := node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
	pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml
karpenter:
	$(KARPENTER_GO) build -o $(CURDIR)/bin/karpenter-kwok sigs.k8s.io/karpenter/kwok
	$(KARPENTER_GO) build -o $(CURDIR)/bin/kwok sigs.k8s.io/kwok/cmd/kwok
	@mkdir -p bin/karpenter-crds bin/kwok-stages && \
	src=$$($(KARPENTER_GO) list -m -f '{{.Dir}}' sigs.k8s.io/karpenter) && \
	for f in $(KARPENTER_CRD_FILES); do install -m 644 "$$src/$$f" bin/karpenter-crds/; done && \
	src=$$($(KARPENTER_GO) list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage && \
	for f in $(KWOK_STAGE_FILES); do install -m 644 "$$src/$$f" bin/kwok-stages/; done
