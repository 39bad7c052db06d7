# tracesim developer commands. Both main targets build what they need on a fresh machine.
#   make demo   run the bundled example agent; traces go to .tracesim/traces.jsonl
#   make test   lint, type-check and run every test (what CI runs)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# Offline NLTK data for the text evaluators' tests, when the shared folder is there.
SHARED_NLTK := $(abspath ../shared/nltk_data)
ifneq ($(wildcard $(SHARED_NLTK)),)
export NLTK_DATA ?= $(SHARED_NLTK)
endif

.PHONY: demo test lint typecheck pytest bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed-core: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	touch $@ $(VENV)/.installed-core

demo: $(VENV)/.installed-core
	$(BIN)/tracesim demo

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

pytest: $(VENV)/.installed-test
	$(BIN)/pytest

test: lint typecheck pytest

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/bench_overhead.py

clean:
	rm -rf $(VENV) .tracesim .mypy_cache .ruff_cache .pytest_cache .hypothesis
