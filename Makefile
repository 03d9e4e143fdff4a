# The two commands of the README: `make demo` and `make test`.
# Both create .venv when missing and install what they need (stamp files make reruns fast).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
PKGS   := mars_core langchain_mars llamaindex_mars
DEMO_DIR ?= ./mars_data/demo

.PHONY: demo test lint typecheck pytest docs clean reproductions fifa-docs oslmr-docs mechanisms-docs

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -U pip

$(VENV)/.stamp-demo: pyproject.toml | $(PY)
	$(PIP) install -e ".[chroma,semantic,nlp,langchain,langgraph]"
	touch $@

# --no-compile: pip would byte-compile all ~28,000 modules of the dev extras (torch, spaCy,
# Chroma...), 70% of the install's CPU; Python compiles the few thousand a run imports as it
# first imports them.
$(VENV)/.stamp-test: pyproject.toml | $(PY)
	$(PIP) install --no-compile -e ".[dev]"
	touch $@

demo: $(VENV)/.stamp-demo
	$(PY) -m mars_core.demo --path $(DEMO_DIR) --fresh

lint: $(VENV)/.stamp-test
	$(VENV)/bin/ruff check $(PKGS) tests

typecheck: $(VENV)/.stamp-test
	$(VENV)/bin/mypy --strict $(PKGS)

# The project's own modules compiled first: where PYTHONDONTWRITEBYTECODE=1 nothing else
# writes their .pyc, and every process the suite starts (CLI runs, crash-loop children,
# load workers, fresh benchmark probes) would compile mars_core again (~0.9 s of CPU each).
pytest: $(VENV)/.stamp-test
	$(PY) -m compileall -q -j 0 $(PKGS) tests >/dev/null
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=15

docs: $(VENV)/.stamp-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $(VENV)/site

# The install first, then the four checks side by side: pytest's two workers leave a core
# idle for a while (their start, the last long tests), which ruff, mypy and mkdocs fill.
# -O prints each check's output whole when it ends (pytest's last), -k runs every check
# even when one fails, and make test fails when any does.
test: $(VENV)/.stamp-test
	@$(MAKE) --no-print-directory -k -j4 -O lint typecheck docs pytest

# The reproduction pages (docs/benchmarks/): each target runs a benchmark and regenerates
# its results file and the page blocks rendered from it (tests/test_reproduction_pages.py).
LOCOMO ?= ../shared/data/locomo/locomo_dev7.json
REPRO_OUT ?= ./bench_out

fifa-docs: $(VENV)/.stamp-test
	$(PY) -m mars_core.cli bench fifa --regenerate-docs --out $(REPRO_OUT)/fifa

oslmr-docs: $(VENV)/.stamp-test
	$(PY) -m mars_core.cli bench oslmr --data $(LOCOMO) --out $(REPRO_OUT)/oslmr --regenerate-docs

mechanisms-docs: $(VENV)/.stamp-test
	$(PY) -m mars_core.cli bench mechanisms --regenerate-docs

reproductions: mechanisms-docs oslmr-docs fifa-docs

clean:
	rm -rf $(VENV) mars_data site .pytest_cache .mypy_cache .ruff_cache bench_out
