# The whole setup on a fresh machine is `make run` or `make test`; both build .venv when missing.
PYTHON_BOOT := $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
WORKSPACE ?= data/demo/workspace.toml
PORT ?= 8501
PYTEST_ARGS ?=
# Test workers: one more than the cores, since a browser test's worker spends part of its time waiting on its
# server and Chromium (2 cores, quiet, fresh clone: 2 workers about 1,010 s, 3 workers 939 s). `make check`,
# with no browser, uses one per core.
JOBS ?= $(shell echo $$(( $$(nproc) + 1 )))
CHECK_JOBS ?= auto
LINT = $(VENV)/bin/ruff check . && $(VENV)/bin/ruff format --check . && $(VENV)/bin/mypy

.PHONY: run test check lint bench demo browser-deps

$(PY):
	$(PYTHON_BOOT) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(VENV)/.run-deps: requirements.txt | $(PY)
	$(PY) -m pip install -q -r requirements.txt
	touch $@

$(VENV)/.dev-deps: requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $@ $(VENV)/.run-deps

# Debian packages (chromium, fonts, postgresql), installed only when missing: see the script.
browser-deps:
	bash scripts/system-deps.sh

run: $(VENV)/.run-deps browser-deps
	$(PY) scripts/serve.py --workspace $(WORKSPACE) --server.headless true --server.port $(PORT) --browser.gatherUsageStats false

# The whole suite, on every core; a file's tests stay on one worker (they share its servers and fixtures), and
# the costliest files start first (tests/costs.json, read by tests/conftest.py). The lint (ruff, ruff format,
# mypy: about 20 s on a fresh clone) runs beside the tests, its output printed after theirs; `make test` (and
# so CI) fails when either fails.
test: $(VENV)/.dev-deps browser-deps
	@($(LINT)) > $(VENV)/lint.log 2>&1 & lint=$$!; \
	$(PY) -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS); tests=$$?; \
	wait $$lint; linted=$$?; echo "--- lint (ruff, ruff format, mypy):"; cat $(VENV)/lint.log; \
	if [ $$linted -ne 0 ]; then echo "make test: the lint failed (above)"; fi; \
	[ $$tests -eq 0 ] && [ $$linted -eq 0 ]

# Between two changes: lint and every test that needs no browser, server, database or report build
# (markers, checked by tests/test_markers.py), in a few minutes.
check: $(VENV)/.dev-deps lint
	$(PY) -m pytest -n $(CHECK_JOBS) --dist loadfile --no-loadscope-reorder -m "not browser and not slow and not postgres" $(PYTEST_ARGS)

lint: $(VENV)/.dev-deps
	$(LINT)

bench: $(VENV)/.dev-deps
	for b in benchmarks/bench_*.py; do $(PY) $$b || exit 1; done

demo: $(VENV)/.dev-deps
	$(PY) -m analysis.demo.build ../shared/realdata data/demo
