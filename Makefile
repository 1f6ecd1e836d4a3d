# lens_widget developer commands. `make help` lists them.
# Works on a fresh Debian machine with python3 (>=3.10), node 20 and npm; installs chromium
# through apt when missing (needs root). Stamp files make reruns skip what is up to date.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# A local wheel directory (the CPU-only torch wheel) is used when present, even if the
# PIP_FIND_LINKS variable is not set in this environment.
WHEELS_DIR ?= /opt/wheels
FIND_LINKS := $(if $(wildcard $(WHEELS_DIR)),--find-links $(WHEELS_DIR),)
# Every Python package is pinned (==) by the lock, made on purpose by `make lock`, so a new
# machine installs the versions the suites passed with, not whatever is newest that day.
LOCK := requirements-lock.txt
PIP_INSTALL := $(PIP) install -c $(LOCK) $(FIND_LINKS)
# lens_widget is built in the venv (no build isolation) so its build backend is pinned too
# (editables: what hatchling needs for an editable install).
BUILD_TOOLS := hatchling hatch-jupyter-builder editables
CHROMIUM ?= /usr/bin/chromium
PY_DIRS := lens_widget tests bench model_zoo

STAMP_VENV := $(VENV)/.stamp-venv
STAMP_TORCH := $(VENV)/.stamp-torch
STAMP_PY := $(VENV)/.stamp-python-deps
STAMP_NODE := node_modules/.stamp-npm-ci
WIDGET_JS := lens_widget/static/widget.js
JS_SOURCES := $(shell find js -type f 2>/dev/null) package.json tsconfig.json

.PHONY: help install venv build wheel chromium test test-lint test-format test-types test-js \
	test-py test-compat test-compat-oldest demo bench lock clean

help:
	@echo "make demo    install everything, start JupyterLab on 127.0.0.1 with notebooks/demo.ipynb"
	@echo "make test    install everything, run ruff, tsc, pyright, vitest and pytest (python + browser)"
	@echo "make install .venv with torch (CPU) and lens_widget[test] (editable), built widget JS"
	@echo "make build   bundle the frontend into $(WIDGET_JS)"
	@echo "make test-compat  the Python suite in a cached venv per (torch, transformers) pair of"
	@echo "             tests/compat/*.txt (built once per machine, ~3 GB each: docs/compat.md)"
	@echo "make wheel   build dist/lens_widget-*.whl and check it carries the widget JS"
	@echo "make bench   run the benchmarks (python -m bench.run): bench/results/, bench/RESULTS.md"
	@echo "make lock    re-pin $(LOCK) from a fresh venv (newest versions allowed by pyproject.toml,"
	@echo "             constraints.txt and requirements-bench.txt); commit it once make test passes"
	@echo "make clean   remove .venv, node_modules, built JS, dist"

# ---------------------------------------------------------------- install

# Debian's python3 lacks ensurepip until python3-venv is installed.
$(STAMP_VENV):
	$(PYTHON) -m venv $(VENV) || { \
		echo "python3 -m venv failed: installing python3-venv with apt-get"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends python3-venv; \
		$(PYTHON) -m venv --clear $(VENV); \
	}
	touch $@

# torch on its own first, pinned, so the CPU wheel is chosen before anything pulls another.
$(STAMP_TORCH): $(STAMP_VENV) constraints.txt $(LOCK)
	$(PIP_INSTALL) torch==2.13.0
	touch $@

# The JS is built by the npm targets below (order-only: editing JS must not reinstall Python
# packages), so the build hook's own npm run is skipped. A package the lock does not name
# (a new dependency since `make lock`, or one another Python's markers add) is reported, and
# fails the install in CI, where everything must be pinned.
$(STAMP_PY): $(STAMP_TORCH) pyproject.toml $(LOCK) | $(WIDGET_JS)
	$(PIP_INSTALL) $(BUILD_TOOLS)
	HATCH_JUPYTER_BUILDER_SKIP_NPM=1 $(PIP_INSTALL) --no-build-isolation -e ".[test]"
	@unpinned=$$(comm -23 \
		<($(PIP) freeze --all --exclude-editable | sed -n 's/==.*//p' | tr A-Z_ a-z- | grep -vx pip | sort) \
		<(sed -n 's/==.*//p' $(LOCK) | tr A-Z_ a-z- | sort)); \
	if [ -n "$$unpinned" ]; then \
		echo "not pinned by $(LOCK): $$unpinned (run make lock)"; \
		[ -z "$${CI:-}" ]; \
	fi
	touch $@

venv: $(STAMP_PY)

$(STAMP_NODE): package.json package-lock.json
	npm ci --no-audit --no-fund
	touch $@

$(WIDGET_JS): $(STAMP_NODE) $(wildcard $(JS_SOURCES))
	npm run build
	test -s $@

build: $(WIDGET_JS)

chromium:
	@if [ ! -x $(CHROMIUM) ]; then \
		echo "chromium missing: installing it with apt-get"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		$$SUDO apt-get update; \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y --no-install-recommends chromium; \
	fi

install: $(STAMP_PY) $(WIDGET_JS) chromium

# ---------------------------------------------------------------- test

# Every suite runs even when an earlier one fails; the target fails if any did. CI (CI=true)
# also runs the Python suite on the oldest supported pair, torch 2.6 + transformers 4.45
# (a ~6 GB venv built once per machine: docs/compat.md).
SUITES := test-lint test-format test-types test-js test-py $(if $(filter true,$(CI)),test-compat-oldest)

test: install
	@failed=""; \
	for suite in $(SUITES); do \
		echo "=== $$suite"; \
		start=$$(date +%s); \
		if $(MAKE) --no-print-directory $$suite; then status=ok; else status=FAILED; failed="$$failed $$suite"; fi; \
		echo "=== $$suite: $$status in $$(( $$(date +%s) - start ))s"; \
	done; \
	if [ -n "$$failed" ]; then echo "FAILED:$$failed"; exit 1; fi; \
	echo "all suites passed"

test-lint:
	$(VENV)/bin/ruff check $(PY_DIRS)

test-format:
	$(VENV)/bin/ruff format --check $(PY_DIRS)

# tsc on js/ and tests/js; pyright on lens_widget/ against the venv's packages.
test-types: $(STAMP_NODE) $(STAMP_PY)
	npm run typecheck
	npm run typecheck:py

# biome: lint and format of js/ and tests/js (biome.jsonc says which rules are off and why)
test-js: $(STAMP_NODE)
	npm run lint
	npm test

test-py: $(STAMP_PY) $(WIDGET_JS)
	$(PY) -m pytest -p no:cacheprovider

# The Python suite (not the browser ones) in a venv per (torch, transformers) pair, each built
# once per machine from the registry's wheels under $$LENS_COMPAT_CACHE (default
# ~/.cache/lens_widget-compat) and rebuilt when its pin file changes. docs/compat.md.
COMPAT := PYTHON=$(PYTHON) $(PYTHON) tests/compat/compat.py
COMPAT_OLDEST := torch2.6-transformers4.45
test-compat: $(WIDGET_JS)
	$(COMPAT) run

test-compat-oldest: $(WIDGET_JS)
	$(COMPAT) run $(COMPAT_OLDEST)

# ---------------------------------------------------------------- run

demo: install
	@port=$$($(PY) -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'); \
	echo ""; \
	echo "  lens_widget demo: http://127.0.0.1:$$port/lab/tree/demo.ipynb"; \
	echo "  (Ctrl-C to stop)"; \
	echo ""; \
	exec $(VENV)/bin/jupyter lab --no-browser --allow-root \
		--ServerApp.ip=127.0.0.1 --ServerApp.port=$$port --ServerApp.port_retries=0 \
		--IdentityProvider.token='' --ServerApp.password='' \
		--ServerApp.root_dir=notebooks --LabApp.default_url=/lab/tree/demo.ipynb

# TorchLens and the profilers go into the same venv (pinned by the lock, torch included).
bench: install
	$(PIP_INSTALL) -r requirements-bench.txt
	$(PY) -m bench.run

wheel: $(STAMP_PY) $(WIDGET_JS)
	$(PIP_INSTALL) build
	rm -rf dist
	$(PY) -m build --wheel --no-isolation --outdir dist
	$(PY) -c 'import glob, sys, zipfile; \
		whl = glob.glob("dist/lens_widget-*.whl"); \
		names = zipfile.ZipFile(whl[0]).namelist() if whl else []; \
		sys.exit(0 if "lens_widget/static/widget.js" in names else "wheel lacks lens_widget/static/widget.js")'
	@ls dist/*.whl

# ---------------------------------------------------------------- lock

# Re-pins on purpose: a throwaway venv gets the newest versions that pyproject.toml,
# constraints.txt (torch) and requirements-bench.txt allow, and the lock becomes its freeze.
# torch's local tag (+cpu) is dropped so the pin also matches where no local wheel is.
LOCK_VENV := .venv-lock
LOCK_PIP := $(LOCK_VENV)/bin/python -m pip --disable-pip-version-check
lock: $(WIDGET_JS)
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_PIP) install -c constraints.txt $(FIND_LINKS) torch==2.13.0
	$(LOCK_PIP) install -c constraints.txt $(BUILD_TOOLS) build
	HATCH_JUPYTER_BUILDER_SKIP_NPM=1 $(LOCK_PIP) install -c constraints.txt $(FIND_LINKS) \
		--no-build-isolation -e ".[test]" -r requirements-bench.txt
	{ echo "# Every Python package of make test, make demo, make bench and make wheel, pinned."; \
	  echo "# Made by \`make lock\` on Python $$($(LOCK_VENV)/bin/python -c 'import platform; print(platform.python_version(), platform.machine())'); do not edit by hand."; \
	  $(LOCK_PIP) freeze --all --exclude-editable | grep -v '^pip==' | sed 's/^torch==\([^+]*\)+.*/torch==\1/'; \
	} > $(LOCK)
	rm -rf $(LOCK_VENV)
	@echo "$(LOCK) re-pinned: review its diff, run make test, commit it"

clean:
	rm -rf $(VENV) node_modules $(WIDGET_JS) dist build
