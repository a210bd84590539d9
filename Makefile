# Every target sets itself up on first use: a fresh clone needs only `make run` or `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run sandbox test bench lint format check clean test-snapshot-update

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

# The sandbox set-up (Docker image, else bubblewrap) runs first; the TUI says the rest.
run: $(STAMP)
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m conductor.cli.setup_sandbox
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/conductor tui

sandbox: $(STAMP)
	@PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m conductor.cli.setup_sandbox

test: $(STAMP)
	$(BIN)/python -m pytest -q

test-snapshot-update: $(STAMP)
	$(BIN)/python -m pytest -q tests/tui --snapshot-update

bench: $(STAMP)
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

check: lint test

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
