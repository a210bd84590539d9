# Every target sets itself up on first use: a fresh clone needs only `make run` or `make test`.
# One virtualenv, filled as far as the target needs: `run` installs what running needs,
# `test` adds the test tools, `lint` the linters, `test-all` Ray and Playwright.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# Packages go in with uv, itself put in the venv by pip: it resolves and downloads in
# parallel, which took `make run`'s first set-up from 107 s to about 30 s on a 2-core
# machine. Where uv cannot be had or cannot install (it reads no pip.conf, so a
# certificate or index that only pip is told about stops it), pip does the same, slower.
# Both write the bytecode as they install (pip does by default, uv when asked): where
# PYTHONDONTWRITEBYTECODE is set, nothing is cached later and every command compiled
# its libraries again (`conductor runs list`: 0.9 s, against 0.3 s with bytecode).
PIP = install() { $(BIN)/python -c 'import uv' 2>/dev/null \
	&& $(BIN)/python -m uv pip install --quiet --compile-bytecode --python $(BIN)/python "$$@" \
	|| { echo "uv could not install; pip installs instead" >&2; \
	$(BIN)/python -m pip install --quiet "$$@"; }; }; install
RUN_STAMP := $(VENV)/.installed-run
TEST_STAMP := $(VENV)/.installed-test
LINT_STAMP := $(VENV)/.installed-lint
ALL_STAMP := $(VENV)/.installed-test-all
# Parallel workers for the tests (pytest-xdist); `auto` is one per core.
WORKERS ?= auto
PYTEST := $(BIN)/python -m pytest -q
SANDBOX_SETUP := PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m sandbox.setup
# The fast tier leaves out what only the full tier runs (markers: docs/testing.md). A
# hung test fails after the timeout with its stack; tests of one xdist_group (one model
# server, one Ray cluster) go to one worker.
FAST := -n $(WORKERS) --dist loadgroup --timeout=300 -m "not slow and not serial"
# The full tier: everything in parallel but the tests that share the host, then those
# one at a time.
ALL_PARALLEL := -n $(WORKERS) --dist loadgroup --timeout=1800 -m "not serial"
ALL_SERIAL := -n 0 --timeout=1800 -m serial
# Prints how long the set-up and the tests took, and the machine's load beside them.
LOAD := $$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)

.PHONY: run sandbox extras test test-all bench lint format check clean test-snapshot-update

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv || echo "uv could not be installed; pip installs instead"

$(RUN_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e .
	@touch $@

$(TEST_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e '.[test]'
	@touch $@

$(LINT_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e '.[lint]'
	@touch $@

$(ALL_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) -e '.[test-all,lint]'
	@touch $@ $(TEST_STAMP) $(LINT_STAMP)

# A developer's environment: the tests and the linters.
$(VENV)/.installed: $(TEST_STAMP) $(LINT_STAMP)
	@touch $@

# The sandbox set-up (Docker image, else bubblewrap) runs first; the TUI says the rest.
run: $(RUN_STAMP)
	@$(SANDBOX_SETUP)
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/conductor tui

sandbox: $(RUN_STAMP)
	@$(SANDBOX_SETUP)

# An optional extra (serve, mcp, inspect, ray; comma-separated for several) into this
# checkout's venv. Not `pip install 'conductor[serve]'`: the public index's `conductor`
# is another project.
EXTRAS ?=
extras: $(RUN_STAMP)
	@test -n "$(EXTRAS)" || { echo "name the extra: make extras EXTRAS=serve (or mcp, inspect, ray)" >&2; exit 2; }
	$(PIP) -e '.[$(EXTRAS)]'

# The fast tier: in parallel, on both sandbox backends, in a few minutes.
test:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory $(TEST_STAMP) && $(SANDBOX_SETUP) || exit 1; \
	ready=$$(date +%s); \
	$(PYTEST) $(FAST); status=$$?; \
	echo "make test: set-up $$((ready - start)) s, tests $$(($$(date +%s) - ready)) s (load $(LOAD))"; \
	exit $$status

# Everything, as CI runs it: the full hostile battery, faults, races, Ray, real model
# servers, the browser and packaging.
test-all:
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory $(ALL_STAMP) && $(SANDBOX_SETUP) || exit 1; \
	ready=$$(date +%s); \
	$(PYTEST) $(ALL_PARALLEL); status=$$?; \
	parallel=$$(date +%s); \
	$(PYTEST) $(ALL_SERIAL) || [ $$? -eq 5 ] || status=1; \
	echo "make test-all: set-up $$((ready - start)) s, parallel pass $$((parallel - ready)) s," \
	  "serial pass $$(($$(date +%s) - parallel)) s (load $(LOAD))"; \
	exit $$status

test-snapshot-update: $(TEST_STAMP)
	$(PYTEST) tests/tui --snapshot-update

bench: $(TEST_STAMP)
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

lint: $(LINT_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(LINT_STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

check: lint test

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .mypy_cache
