# Two commands on a fresh machine: `make run` (the broker: the runtime alone, ~15 s and ~110 MB from a fresh
# clone) and `make test` (the fast tier: checks and every test not marked slow, in parallel, ~4 min).  Both
# share .venv: the runtime stamp (.venv/.runtime) is what `make run` needs, the test stamp (.venv/.installed,
# the [test] extra, pyspark and all) also sets the runtime one.  `make test-slow` runs the tests marked slow,
# `make test-all` both tiers; CI (.ci/run) runs both tiers and `make matrix`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# make run PORT=19092: the broker's port
PORT ?= 9092
# An editable install whose .pth file is a plain path (pip's default mode, given pyproject's package-dir
# "" = "."): setuptools' import-hook editable mode would load pathlib and more into every Python start
# (~15-25 ms of the broker's start-up).  tests/test_install.py checks the .pth stays a plain path.
EDITABLE = $(BIN)/pip install -q -e $(1)

# pytest-xdist workers of the fast tier, measured on this 2-core machine (wall time of the fast tier, 3,603
# tests): -n 2 279 s, -n 3 206 s, -n 4 180 s, -n 6 169 s (and a timing test failed).  Most tests wait on
# clients and timers, not the CPU, so twice the cores pays; past that the gain is small and the load grows.
WORKERS ?= 4
# the slow tier: a few long tests that each load the CPU (Spark JVMs, the sanitizers' builds, the soak), so as
# many workers as cores, each taking whole modules (their module fixtures start clusters and JVMs once)
SLOW_WORKERS ?= 2
# --durations=30: where the time goes, printed (never asserted); .pytest_cache keeps the last failures
# (`.venv/bin/pytest --lf` reruns them) and the kafka-python sdist the peer suite downloads
PYTEST = $(BIN)/python -m pytest --durations=30

.PHONY: run test test-slow test-all soak checks lint generate bench clean matrix screenshots

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip 'setuptools>=77'  # 77: pyproject's SPDX license (for setup.py build_ext runs)

SOURCES := pyproject.toml setup.py $(wildcard mockbroker/native/*/*.c mockbroker/native/*/*.h)
SPEEDUPS_LINE = $(BIN)/python -c "from mockbroker.records.check import SPEEDUPS; print('C extension:', 'built' if SPEEDUPS else 'not built: pure Python')"

# the runtime alone (what `pip install mockbroker` brings): enough for every command but `audit` ([spark])
$(VENV)/.runtime: $(SOURCES) | $(BIN)/python
	$(call EDITABLE,.)
	$(BIN)/python -m compileall -q mockbroker >/dev/null  # bytecode for fast starts, even with PYTHONDONTWRITEBYTECODE
	$(SPEEDUPS_LINE)
	touch $@

# everything the suite needs (the [test] extra); an up-to-date test install is an up-to-date runtime one too
$(VENV)/.installed: $(SOURCES) | $(BIN)/python
	$(call EDITABLE,'.[test]')
	$(BIN)/python -m compileall -q mockbroker bench >/dev/null  # bytecode for fast starts, even with PYTHONDONTWRITEBYTECODE
	$(SPEEDUPS_LINE)
	touch $@ $(VENV)/.runtime

run: $(VENV)/.runtime
	$(BIN)/python -m mockbroker serve --brokers 1 --port $(PORT) --topic demo:3

# ruff, the layer contracts, the type check ([tool.mypy] in pyproject.toml) and the generated-code check
checks: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/python tools/gen_protocol.py --check

# the fast tier: every test not marked slow, in parallel
test: checks
	$(PYTEST) -n $(WORKERS) -m "not slow"

# the slow tier: the soak's 2-minute form, the Spark cluster and the audits, the peer suites, the installs from
# wheel and sdist, the sanitizers, the fuzz smoke runs (pyproject.toml's `slow` marker)
test-slow: $(VENV)/.installed
	$(PYTEST) -n $(SLOW_WORKERS) --dist loadfile -m slow

test-all: test test-slow

# the soak's long form: 10 minutes of mixed load on one broker process, RSS flat, nothing acknowledged lost
soak: $(VENV)/.installed
	MOCKBROKER_SOAK_SECONDS=600 $(PYTEST) -s tests/load/test_soak.py

# CI's runs after the two tiers (noxfile.py): the tests whose way differs with the C extensions off, with
# MOCKBROKER_PURE_PYTHON=1, then the C extensions' tests on fresh Python 3.12 and 3.13 venvs (built there)
matrix: $(VENV)/.installed
	$(BIN)/nox

lint: $(VENV)/.installed
	$(BIN)/ruff check .

generate: $(VENV)/.installed
	$(BIN)/python tools/gen_protocol.py
	$(BIN)/python -m compileall -q mockbroker/protocol >/dev/null

# every load against mockbroker (in memory, with a data dir, ...), librdkafka's mock and Tansu; rewrites docs/benchmarks.md's table and docs/img/bench-results.png
bench: $(VENV)/.installed
	$(call EDITABLE,'.[bench]')
	$(BIN)/python -m bench.suite
	$(BIN)/python bench/codec_bench.py
	$(BIN)/python -m bench.data_dir_bench  # the data directory against memory; a start from a 1M-record snapshot

# docs/console.md's pictures, taken by the console's and report's browser tests (tests/console) as they run
screenshots: $(VENV)/.installed
	MOCKBROKER_SCREENSHOTS=docs/img/console $(PYTEST) -q tests/console -k browser

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
