# The whole setup on a fresh machine is `make run` or `make test`; both build .venv when missing.
# The interpreter the venv is built on: Debian's python3.11 when it is installed with its venv module (a static
# interpreter built with profile-guided and link-time optimisation), else the first python3.11 on PATH, else
# python3. Against pyenv's default build (a shared libpython, no PGO), measured here: `import pandas` and this
# package's imports ~0.1 s faster, `metrics` on a MultiWOZ-size file 0.85 -> 0.70 s, a run scored into the
# store ~7% less CPU (benchmarks/README.md). Override with `make PYTHON_BOOT=... test` (the venv is built once).
PYTHON_BOOT := $(shell test -x /usr/bin/python3.11 && /usr/bin/python3.11 -m ensurepip --version >/dev/null 2>&1 \
	&& echo /usr/bin/python3.11 || command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
WORKSPACE ?= data/demo/workspace.toml
PORT ?= 8501
PYTEST_ARGS ?=
JOBS ?= auto

.PHONY: run test check lint bench demo browser-deps

$(PY):
	$(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.run-deps: requirements.txt | $(PY)
	$(PY) -m pip install -q -r requirements.txt
	touch $@

# The test and lint tools on top of the run dependencies, not compiled to bytecode at install: pip compiles
# every module of pyspark, moto and botocore, which the tests import a few of (a fresh venv's install 64 s ->
# 37 s here). Not the run dependencies: with PYTHONDONTWRITEBYTECODE set (as on these machines) nothing is
# compiled later, and every server start would compile pandas and Streamlit again.
$(VENV)/.dev-deps: requirements-dev.txt $(VENV)/.run-deps
	$(PY) -m pip install -q --no-compile -r requirements-dev.txt
	touch $@

# Debian packages (chromium, fonts, postgresql), installed only when missing: see the script.
browser-deps:
	bash scripts/system-deps.sh

run: $(VENV)/.run-deps browser-deps
	$(PY) scripts/serve.py --workspace $(WORKSPACE) --server.headless true --server.port $(PORT) --browser.gatherUsageStats false

# Lint first: `make test` (and so CI) runs the tests only on code that passes ruff, ruff format and mypy.
# The whole suite, on every core; a file's tests stay on one worker (they share its servers and fixtures), and
# the costliest files start first (tests/costs.json, read by tests/conftest.py).
test: $(VENV)/.dev-deps lint browser-deps
	$(PY) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

# Between two changes: lint and every test that needs no browser, server, database or report build
# (markers, checked by tests/test_markers.py), in a few minutes.
check: $(VENV)/.dev-deps lint
	$(PY) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder -m "not browser and not slow and not postgres" $(PYTEST_ARGS)

lint: $(VENV)/.dev-deps
	$(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy

bench: $(VENV)/.dev-deps
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

demo: $(VENV)/.dev-deps
	$(PY) -m analysis.demo.build ../shared/realdata data/demo
