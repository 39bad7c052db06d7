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

.PHONY: demo test lint typecheck pytest test-deps bench clean

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

# Real components the tests use, outside tracesim's venv: Arize Phoenix (its own cached venv,
# about 855 MB, built once; TRACESIM_SKIP_PHOENIX=1 skips its tests on machines with no
# registry) and headless Chromium for the HTML report check (Debian package, when root).
test-deps: $(VENV)/.installed-test
	@if [ "$$TRACESIM_SKIP_PHOENIX" != "1" ]; then $(BIN)/python tests/phoenix/_server.py ensure-venv; fi
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing chromium (Debian) for the HTML report test"; \
		(apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null) \
			|| echo "could not install chromium: the HTML report's browser test will skip"; \
	fi

pytest: $(VENV)/.installed-test test-deps
	$(BIN)/pytest

test: lint typecheck pytest

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/bench_overhead.py
	$(BIN)/python benchmarks/bench_scoring.py
	$(BIN)/python benchmarks/bench_evaluators.py
	$(BIN)/python benchmarks/bench_export_down.py

clean:
	rm -rf $(VENV) .tracesim .mypy_cache .ruff_cache .pytest_cache .hypothesis
