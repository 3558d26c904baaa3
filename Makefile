# The two commands in the README: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: run test lint bench eval clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/triage-bot serve

test: $(STAMP)
	$(BIN)/ruff check triage_bot tests bench
	$(BIN)/ruff format --check triage_bot tests bench
	$(BIN)/mypy
	$(BIN)/triage-bot kb lint --quiet
	$(BIN)/pytest -q -n auto --dist loadfile

lint: $(STAMP)
	$(BIN)/ruff check triage_bot tests bench
	$(BIN)/ruff format --check triage_bot tests bench
	$(BIN)/mypy

eval: $(STAMP)
	$(BIN)/triage-bot eval

bench: $(STAMP)
	$(BIN)/python -m bench.run_all --write docs/benchmarks.md

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
