# The two commands a newcomer needs: `make demo` and `make test`. Both build .venv when it is missing.
VENV ?= .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
OUT ?= rendered
# The same cache root as the e2e toolchain (tests/e2e/toolchain/build.py: cache_root).
CACHE ?= $(or $(FLUX_MINICLUSTER_CACHE),$(or $(XDG_CACHE_HOME),$(HOME)/.cache)/flux-minicluster)
# The scanner's version, from pyproject.toml's [tool.flux-minicluster.scanner]; its own venv.
CHECKOV_VERSION := $(shell sed -n 's/^checkov = "\(.*\)"/\1/p' pyproject.toml)
CHECKOV_VENV := $(CACHE)/checkov-$(CHECKOV_VERSION)
CHECKOV := $(CHECKOV_VENV)/bin/checkov
KUBE_SCORE_VERSION := $(shell sed -n 's/^kube-score = "\(.*\)"/\1/p' pyproject.toml)
KUBE_SCORE := $(CACHE)/kube-score-$(KUBE_SCORE_VERSION)/kube-score

.PHONY: venv demo test lint typecheck contracts unit docs scanner fuzz bench bench-e2e golden clean e2e-tools e2e

# The Pulumi SDKs are pinned to the versions the e2e toolchain's CLI and plugins match
# ([tool.flux-minicluster.toolchain.python] in pyproject.toml, the one place for versions).
$(STAMP): pyproject.toml
	@echo "Installing the package, the Pulumi SDKs and the dev tools into $(VENV) (once; about a minute)..."
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	python3 -c 'import tomllib; t = tomllib.load(open("pyproject.toml", "rb")); \
	  print("\n".join(f"{k}=={v}" for k, v in t["tool"]["flux-minicluster"]["toolchain"]["python"].items()))' \
	  > $(VENV)/sdk-constraints.txt
	$(PY) -m pip install -q --disable-pip-version-check -e '.[dev]' -c $(VENV)/sdk-constraints.txt
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(BIN)/minicluster demo -d $(OUT)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

contracts: $(STAMP)
	$(BIN)/lint-imports

# The docs site (mkdocs.yml), built with --strict (strict: true in mkdocs.yml too): a warning, such
# as a broken link or anchor or a page missing from the nav, fails it. It is built into a temporary
# folder that is removed afterwards, so nothing is written into the checkout.
docs: $(STAMP)
	@site="$$(mktemp -d)"; \
	  NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir "$$site"; status=$$?; \
	  rm -rf "$$site"; exit $$status

unit: $(STAMP) $(CHECKOV) $(KUBE_SCORE)
	CHECKOV=$(CHECKOV) KUBE_SCORE=$(KUBE_SCORE) $(BIN)/pytest

$(CHECKOV):
	python3 -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install -q --disable-pip-version-check 'checkov==$(CHECKOV_VERSION)'

# Built with the Go caches the e2e toolchain uses (a few minutes cold, seconds warm).
$(KUBE_SCORE):
	GOMODCACHE=$(CACHE)/go-mod GOCACHE=$(CACHE)/go-build GOFLAGS=-mod=mod GOBIN=$(dir $(KUBE_SCORE)) \
	  go install github.com/zegl/kube-score/cmd/kube-score@v$(KUBE_SCORE_VERSION)

scanner: $(CHECKOV) $(KUBE_SCORE)

test: lint typecheck contracts docs unit

# FUZZ_EXAMPLES per property (10,000 by default), in two shards of half as many with seeds of
# their own, one per core: each property meets FUZZ_EXAMPLES random inputs in all. FUZZ_ONLY
# picks properties by pytest's -k (`make fuzz FUZZ_ONLY=attacked FUZZ_EXAMPLES=100000`).
FUZZ_EXAMPLES ?= 10000
FUZZ_ONLY ?=
FUZZ_RUN = HYPOTHESIS_PROFILE=fuzz $(BIN)/pytest -p no:cacheprovider $(if $(FUZZ_ONLY),-k '$(FUZZ_ONLY)') tests/core/test_fuzz.py
fuzz: $(STAMP)
	@half=$$(( ($(FUZZ_EXAMPLES) + 1) / 2 )); \
	  FUZZ_EXAMPLES=$$half $(FUZZ_RUN) & one=$$!; \
	  FUZZ_EXAMPLES=$$half $(FUZZ_RUN) & two=$$!; \
	  wait $$one; first=$$?; wait $$two; second=$$?; \
	  test $$first = 0 && test $$second = 0

# The performance tables of docs/performance.md: in-process rendering and the CLI (run.py), then the start-up
# costs as new processes (startup.py: own import cost of a `pulumi up`, validate vs python).
bench: $(STAMP)
	$(PY) benchmarks/run.py; status=$$?; $(PY) benchmarks/startup.py && exit $$status

golden: $(STAMP)
	UPDATE_GOLDEN=1 $(BIN)/pytest tests/core/test_golden.py tests/deploy/test_component_package.py

# The real Pulumi CLI/plugins and a Kubernetes control plane, built from the Go module proxy and,
# for the two modules it refuses, from ../shared/vendor (standard library only; prints the bin
# directory last; exits 1 when any piece failed). `make e2e` builds it if needed and runs the
# tests using it. Then what real nodes run (tests/e2e/realnode/toolchain.py: kubelet, kube-proxy,
# CoreDNS, kube-router, Debian's containerd, the images; keyed apart, prints its set directory).
e2e-tools:
	python3 tests/e2e/toolchain/build.py
	python3 tests/e2e/realnode/toolchain.py

# The e2e suite on E2E_WORKERS processes (pytest-xdist), each test module on one of them (its
# module-scoped clusters stay in one process); E2E_WORKERS=0 runs it in this process. The
# toolchain and the real-node pieces are built first, once, not by each worker.
E2E_WORKERS ?= 2
e2e: $(STAMP)
	@bindir="$$(python3 tests/e2e/toolchain/build.py)" || { echo "make e2e: the e2e toolchain did not build" >&2; exit 1; }; \
	  bindir="$$(printf '%s\n' "$$bindir" | tail -n 1)"; \
	  echo "e2e toolchain: $$bindir"; \
	  nodes="$$(python3 tests/e2e/realnode/toolchain.py)" || { echo "make e2e: the real-node pieces did not build" >&2; exit 1; }; \
	  nodes="$$(printf '%s\n' "$$nodes" | tail -n 1)"; \
	  echo "real-node pieces: $$nodes"; \
	  FLUX_MINICLUSTER_E2E_BIN="$$bindir" FLUX_MINICLUSTER_NODES_DIR="$$nodes" \
	    $(BIN)/pytest -m e2e $(if $(filter-out 0,$(E2E_WORKERS)),-n $(E2E_WORKERS) --dist loadfile) tests/e2e

# Preview, up, refresh and destroy of the local stack, and 1/4/16 MiniClusters in one program, on
# the real engine (docs/performance.md's "On the real engine" table).
bench-e2e: $(STAMP)
	$(PY) benchmarks/e2e.py

clean:
	rm -rf $(VENV) $(OUT) build dist .mypy_cache .ruff_cache .pytest_cache
