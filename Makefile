# pi_lab developer commands. `make lab` opens the tour in JupyterLab; `make test` runs every test.
# Both work from a fresh clone: they create .venv, install the package (editable, with the test
# extra) and build the front end. .ci/run runs the same steps as `make test`.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV ?= .venv
ACTIVATE := . $(VENV)/bin/activate &&
LAB_PORT ?= 8888
PYTEST_ARGS ?=
# pytest-xdist workers: each takes whole test files (--dist loadfile), so a file's module fixtures
# (a JupyterLab server, a generated 100k session) are made once. 0 runs in one process.
PYTEST_WORKERS ?= 2
# apt-get needs root; use sudo when we are not root.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: help lab test install venv frontend chromium typecheck lint pytest ui-tests pi-reference clean

help:
	@echo "make lab      - install everything, then start JupyterLab on the tour notebook"
	@echo "make test     - install everything (chromium, pi for the differential tests), typecheck, lint, ui-tests, pytest"
	@echo "make lint     - ruff and pyright (basic) on pi_lab/, configured in pyproject.toml"
	@echo "make install  - .venv + pip install -e '.[test]' + front-end build + labextension develop"

$(VENV)/bin/activate:
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip

venv: $(VENV)/bin/activate

# pip's editable build already runs jlpm via hatch-jupyter-builder, but it skips the build when it
# thinks the output is fresh; the explicit jlpm steps make sure the front end matches the sources.
install: venv
	$(ACTIVATE) python -m pip install -q -e ".[test]"
	$(MAKE) --no-print-directory frontend
	$(ACTIVATE) jupyter labextension develop --overwrite . >/dev/null
	$(ACTIVATE) jupyter labextension list 2>&1 | grep "pi-lab.*enabled.*OK" >/dev/null \
	  || { echo "pi-lab labextension is not installed and enabled"; exit 1; }

frontend:
	$(ACTIVATE) jlpm install
	$(ACTIVATE) jlpm build

# Debian chromium for the browser tests (Playwright drives it; no browser download), and the fonts
# their screenshots need: the worked example is Chinese and the UI has emoji, which a bare chromium
# draws as boxes. The fonts are checked on their own, so a machine that already has chromium still
# gets them.
CHROMIUM_FONTS := fonts-noto-cjk fonts-noto-color-emoji
chromium:
	@missing=""; \
	if [ ! -x /usr/bin/chromium ]; then missing="chromium fonts-dejavu-core"; fi; \
	for p in $(CHROMIUM_FONTS); do \
	  dpkg -s "$$p" >/dev/null 2>&1 || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing (no browser download through Playwright)"; \
	  $(SUDO) apt-get update -q >/dev/null; \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends \
	    $$missing >/dev/null; \
	fi

typecheck:
	$(ACTIVATE) jlpm typecheck

# Python lint and types (settings in pyproject.toml [tool.ruff], [tool.pyright]).
lint:
	$(ACTIVATE) ruff check pi_lab
	$(ACTIVATE) pyright

# pi itself (npm, into the gitignored bench/.pi) for the differential tests that run it beside
# pi_lab. Optional: without node or the registry those tests skip, so a failure here only warns.
pi-reference:
	@bash bench/pi_runner/setup.sh || echo "pi reference not installed: the differential tests will skip"

# JupyterLab-level UI tests (Galata, ui-tests/): its own Yarn project, Debian chromium, no browser
# download. Run after `make install`. Under CI=true the install is immutable (ui-tests/yarn.lock).
UI_PORT ?= 18888
ui-tests:
	@test -x $(VENV)/bin/jupyter || { echo "run 'make install' first"; exit 1; }
	$(ACTIVATE) cd ui-tests && jlpm install >/dev/null && PI_LAB_UI_PORT=$(UI_PORT) jlpm playwright test --reporter=list

# pytest's exit code 5 means "no tests collected"; treat that as a failure.
pytest:
	@$(ACTIVATE) { rc=0; python -m pytest -q -p no:cacheprovider -n $(PYTEST_WORKERS) --dist loadfile $(PYTEST_ARGS) || rc=$$?; \
	  if [ "$$rc" -eq 5 ]; then echo "pytest collected no tests"; exit 1; fi; exit "$$rc"; }

test: chromium install pi-reference
	$(MAKE) --no-print-directory typecheck
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory ui-tests
	$(MAKE) --no-print-directory pytest

lab: install
	@mkdir -p examples
	@if [ -f examples/tour.ipynb ]; then \
	  $(ACTIVATE) jupyter lab --allow-root --ip=127.0.0.1 --port=$(LAB_PORT) examples/tour.ipynb; \
	else \
	  $(ACTIVATE) jupyter lab --allow-root --ip=127.0.0.1 --port=$(LAB_PORT) --ServerApp.root_dir=examples; \
	fi

clean:
	rm -rf lib tsconfig.tsbuildinfo pi_lab/labextension pi_lab/static/widget.js
