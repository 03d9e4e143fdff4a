# The two commands of the README: `make demo` and `make test`.
# Both create .venv when missing and install what they need (stamp files make reruns fast).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
# The packages go in with uv, which pip installs first: a fresh install of ".[dev]" took
# 84 s with uv against 272 s with pip on a development machine (the same packages and
# versions, no cache). The demo's packages get their bytecode compiled at install, as pip
# does: where PYTHONDONTWRITEBYTECODE=1 nothing writes it later. The test packages do not
# (compiling all 27,900 modules took 42 s of the install's 55 on two cores, 91 s of CPU):
# the suite runs with bytecode writing on, so each module the suite imports is compiled
# once, by the first process that imports it, and read by the others (every process the
# suite starts — CLI runs, crash-loop children, load workers, fresh benchmark probes).
# uv reads no pip configuration, so the wheel directories pip is configured to look in
# (find-links: where these machines keep the CPU build of torch) are passed on — those
# that exist: pip skips a missing one, uv stops. --native-tls: uv trusts the machine's
# certificate store, as pip does here, instead of the roots it carries.
FIND   = $(shell $(PY) -m pip config list 2>/dev/null \
	| sed -n "s/^.*find-links='\(.*\)'$$/\1/p" | tr ' ' '\n' | sort -u \
	| while read -r d; do case "$$d" in \
		(file://*) [ -d "$${d#file://}" ] && echo "$$d";; \
		(*://*) echo "$$d";; \
		(*) [ -d "$$d" ] && echo "$$d";; \
	esac; done)
INSTALL = $(VENV)/bin/uv pip install --quiet --native-tls --python $(PY) $(addprefix --find-links ,$(FIND))
PKGS   := mars_core langchain_mars llamaindex_mars
DEMO_DIR ?= ./mars_data/demo

.PHONY: demo test test-heavy lint typecheck pytest docs clean reproductions fifa-docs oslmr-docs mechanisms-docs

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -U pip uv

$(VENV)/.stamp-demo: pyproject.toml | $(PY)
	$(INSTALL) --compile-bytecode -e ".[chroma,semantic,nlp,langchain,langgraph]"
	touch $@

$(VENV)/.stamp-test: pyproject.toml | $(PY)
	$(INSTALL) -e ".[dev]"
	touch $@

demo: $(VENV)/.stamp-demo
	$(PY) -m mars_core.demo --path $(DEMO_DIR) --fresh

lint: $(VENV)/.stamp-test
	$(VENV)/bin/ruff check $(PKGS) tests

typecheck: $(VENV)/.stamp-test
	$(VENV)/bin/mypy --strict $(PKGS)

# The suite writes bytecode, whatever PYTHONDONTWRITEBYTECODE says (see INSTALL): the
# libraries' and the project's modules, and pytest's rewritten test modules, compiled
# once per checkout by the first process that imports them instead of in every process.
#
# The suite's temporary files (stores, tmp_path) live on tmpfs when the machine has one:
# there a disk adds only time (the crash tests kill processes, whose writes the page cache
# keeps; no test simulates a power cut). test_store + test_persistence took 11 % less.
TEST_TMP ?= $(shell [ -d /dev/shm ] && [ -w /dev/shm ] && echo /dev/shm || echo $${TMPDIR:-/tmp})

SUITE := PYTHONDONTWRITEBYTECODE= TMPDIR=$(TEST_TMP) $(PY) -m pytest -q -n 2 --dist worksteal --durations=15

pytest: $(VENV)/.stamp-test
	$(SUITE)

docs: $(VENV)/.stamp-test
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir $(VENV)/site

# The checks (ruff, mypy, mkdocs) run beside the suite: cold, they take ~47 s of wall time
# on two cores (63 s of CPU, mkdocs and mypy one thread each), time the suite's two
# processes fill. Each check's output comes out whole as it ends, between the suite's
# lines (which come out as they are written); a failed check fails `make test` once the
# suite has run.
test: $(VENV)/.stamp-test
	@$(MAKE) --no-print-directory -j3 --output-sync=target lint typecheck docs & checks=$$!; \
	$(MAKE) --no-print-directory pytest; suite=$$?; \
	wait $$checks; checked=$$?; \
	[ $$suite -eq 0 ] && [ $$checked -eq 0 ] || { echo "make test: the suite exited with" \
		"$$suite, the checks with $$checked" >&2; exit 1; }

# The full runs of the heavy tests (a corpus, a crash loop, a multi-process load, a
# benchmark grid) that `make test` replaces by their smoke: docs/reference/testing.md.
test-heavy: $(VENV)/.stamp-test
	MARS_TEST_HEAVY=1 $(SUITE) -m heavy

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
