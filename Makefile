# Two commands on a fresh machine: `make run` (the broker: the runtime alone, ~15 s and ~110 MB from a fresh
# clone) and `make test` (the whole suite: the [test] extra, pyspark and all).  Both share .venv: the runtime
# stamp (.venv/.runtime) is what `make run` needs, the test stamp (.venv/.installed) also sets the runtime one.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# make run PORT=19092: the broker's port
PORT ?= 9092
# An editable install whose .pth file is a plain path: setuptools' default editable mode installs an
# import hook that loads pathlib and more into every Python start (~15-25 ms of the broker's start-up).
# If a future setuptools drops the compat mode, the default mode still works, only slower to start.
EDITABLE = $(BIN)/pip install -q --config-settings editable_mode=compat -e $(1) || $(BIN)/pip install -q -e $(1)

.PHONY: run test lint generate bench clean matrix

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

test: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy  # the type check: [tool.mypy] in pyproject.toml
	$(BIN)/python tools/gen_protocol.py --check
	$(BIN)/python -m pytest

# CI's runs after `make test` (noxfile.py): the broker, client, scenario, control and plugin suites with
# MOCKBROKER_PURE_PYTHON=1, then the core suites on fresh Python 3.12 and 3.13 venvs (C extensions built there)
matrix: $(VENV)/.installed
	$(BIN)/nox

lint: $(VENV)/.installed
	$(BIN)/ruff check .

generate: $(VENV)/.installed
	$(BIN)/python tools/gen_protocol.py
	$(BIN)/python -m compileall -q mockbroker/protocol >/dev/null

# every load against mockbroker, librdkafka's mock and Tansu; rewrites docs/benchmarks.md's table and docs/img/bench-results.png
bench: $(VENV)/.installed
	$(call EDITABLE,'.[bench]')
	$(BIN)/python -m bench.suite
	$(BIN)/python bench/codec_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
