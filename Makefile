# tracesim developer commands. Both main targets build what they need on a fresh machine.
#   make demo   run the bundled example agent; traces go to .tracesim/traces.jsonl
#   make test   lint, type-check, build the docs site strictly and run every test (what CI runs)
#   make docs   build the documentation site into site/ (mkdocs build --strict)

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# NLTK data for the text evaluators' tests (punkt_tab, perluniprops, wordnet), the first found
# of: NLTK_DATA as given; ../shared/nltk_data; NLTK's own search path (~/nltk_data, ...); else
# `tracesim nlp-data` downloads it once into NLTK_CACHE, which pytest then gets as NLTK_DATA.
SHARED_NLTK := $(abspath ../shared/nltk_data)
NLTK_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/tracesim/nltk_data
ifeq ($(strip $(NLTK_DATA)),)
ifneq ($(wildcard $(SHARED_NLTK)),)
export NLTK_DATA := $(SHARED_NLTK)
endif
endif
# Shell code that ends with NLTK_DATA exported (or unset when NLTK's own path has the data),
# or fails saying what is missing and where to copy it.
FIND_NLTK_DATA = \
	if [ -n "$$NLTK_DATA" ]; then echo "NLTK data: NLTK_DATA=$$NLTK_DATA"; \
	elif $(BIN)/tracesim nlp-data --check >/dev/null 2>&1; then \
		echo "NLTK data: found on NLTK's default search path"; \
	else \
		$(BIN)/tracesim nlp-data --dir "$(NLTK_CACHE)" || exit 1; \
		export NLTK_DATA="$(NLTK_CACHE)"; \
	fi

.PHONY: demo test lint typecheck docs pytest test-deps nltk-data bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.installed-core: pyproject.toml hatch_build.py tracesim/_redact/_probe.c | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

# The integrations and the pytest plugin are distributions of their own (integrations/<name>/),
# installed editable from the checkout: the extras openai, anthropic and langchain require
# tracesim-<name> at tracesim's version, and pip takes the local ones given here.
# pydantic-ai needs Python 3.11 or later: on 3.10 its integration is left out (its tests skip, naming it).
INTEGRATIONS := openai anthropic langchain pytest openai_agents litellm mcp \
	$(shell $(PYTHON) -c 'import sys; print("pydantic_ai" if sys.version_info >= (3, 11) else "")')

$(VENV)/.installed-test: pyproject.toml hatch_build.py tracesim/_redact/_probe.c \
		$(foreach name,$(INTEGRATIONS),integrations/$(name)/pyproject.toml) | $(BIN)/python
	$(BIN)/pip install -q -e '.[test,docs,embeddings,openai,anthropic,langchain,pytest,dask,openai_agents,litellm,mcp,pydantic_ai]' \
		$(foreach name,$(INTEGRATIONS),-e integrations/$(name))
	touch $@ $(VENV)/.installed-core

demo: $(VENV)/.installed-core
	$(BIN)/tracesim demo

lint: $(VENV)/.installed-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-test
	$(BIN)/mypy

# The site: guides from docs/, the API reference from the docstrings. --strict turns every
# warning (a broken link, a reference that does not resolve) into a failure.
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Real components the tests use, outside tracesim's venv: Arize Phoenix and MLflow (each in its
# own cached venv, about 855 MB each, built once; TRACESIM_SKIP_PHOENIX=1 / TRACESIM_SKIP_MLFLOW=1
# build nothing and skip their tests), and Debian packages when root: headless Chromium for the
# HTML report check, Prometheus (server and promtool) for the alert rules and the scrape test.
test-deps: $(VENV)/.installed-test
	@if [ "$$TRACESIM_SKIP_PHOENIX" = "1" ]; then echo "TRACESIM_SKIP_PHOENIX=1: no Phoenix venv, its tests skip"; \
	else $(BIN)/python tests/phoenix/_server.py ensure-venv; fi
	@if [ "$$TRACESIM_SKIP_MLFLOW" = "1" ]; then echo "TRACESIM_SKIP_MLFLOW=1: no MLflow venv, its tests skip"; \
	else $(BIN)/python tests/mlflow/_server.py ensure-venv; fi
	@if ! command -v promtool >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing prometheus (Debian: server and promtool) for the alert rules' tests"; \
		(apt-get update -qq && apt-get install -y -qq --no-install-recommends prometheus >/dev/null) \
			|| echo "could not install prometheus: the Prometheus rule and scrape tests will skip"; \
	fi
	@if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
		echo "installing chromium (Debian) for the HTML report test"; \
		(apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium >/dev/null) \
			|| echo "could not install chromium: the HTML report's browser test will skip"; \
	fi

nltk-data: $(VENV)/.installed-test
	@$(FIND_NLTK_DATA)

# pytest-xdist: one worker per core (at most 4); the Phoenix tests share one worker and server
# (tests/conftest.py). PYTEST_ARGS adds options, e.g. PYTEST_ARGS="-n 0" for one process.
PYTEST_ARGS ?=
PYTEST_CMD = $(BIN)/pytest -n auto --maxprocesses 4 $(PYTEST_ARGS)
pytest: $(VENV)/.installed-test test-deps
	@$(FIND_NLTK_DATA); echo "$(PYTEST_CMD)"; $(PYTEST_CMD)

test: lint typecheck docs pytest

bench: $(VENV)/.installed-test
	$(BIN)/python benchmarks/bench_overhead.py
	@if command -v valgrind >/dev/null; then $(BIN)/python benchmarks/bench_instructions.py \
	&& $(BIN)/python benchmarks/bench_instructions.py --otlp \
	&& $(BIN)/python benchmarks/bench_metrics_instructions.py --otlp; \
	else echo "bench_instructions.py skipped: it counts instructions with valgrind, not installed"; fi
	$(BIN)/python benchmarks/bench_scoring.py
	$(BIN)/python benchmarks/bench_host_latency.py --find-max --variants unscored,unscored+scorer,threads,processes=1,processes=2,processes=1+export
	$(BIN)/python benchmarks/bench_host_latency.py --exporter otlp --rate 600 --rounds 4 --variants unscored,unscored+scorer,processes=1,processes=1+export
	$(BIN)/python benchmarks/bench_soak_processes.py --calls 100000
	$(BIN)/python benchmarks/bench_evaluators.py
	$(BIN)/python benchmarks/bench_export_down.py
	$(BIN)/python benchmarks/bench_capture.py
	$(BIN)/python benchmarks/bench_metrics.py
	$(BIN)/python benchmarks/bench_otlp.py
	$(BIN)/python benchmarks/bench_peers.py
	$(BIN)/python benchmarks/bench_soak.py --calls 100000
	$(BIN)/python benchmarks/bench_judge.py
	$(BIN)/python benchmarks/bench_semantic.py
	$(BIN)/python benchmarks/bench_openai.py

clean:
	rm -rf $(VENV) site .tracesim .mypy_cache .ruff_cache .pytest_cache .hypothesis tracesim/_redact/_probe*.so tracesim/_redact/_probe*.pyd
