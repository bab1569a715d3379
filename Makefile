# Two commands on a fresh machine: `make run` (the broker) and `make test` (the whole suite).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run test lint generate bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml setup.py mockbroker/records/_speedups.c mockbroker/records/batch_checks.h \
		mockbroker/protocol/_fastproduce.c mockbroker/protocol/wire_reader.h mockbroker/handlers/_producelane.c \
		mockbroker/handlers/produce_lane_wire.h | $(BIN)/python
	$(BIN)/pip install -q -e '.[test]'
	$(BIN)/python -m compileall -q mockbroker bench >/dev/null  # bytecode for fast starts, even with PYTHONDONTWRITEBYTECODE
	$(BIN)/python -c "from mockbroker.records.check import SPEEDUPS; print('C extension:', 'built' if SPEEDUPS else 'not built: pure Python')"
	touch $@

run: $(VENV)/.installed
	$(BIN)/python -m mockbroker serve --brokers 1 --port 9092 --topic demo:3

test: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/python tools/gen_protocol.py --check
	$(BIN)/python -m pytest

lint: $(VENV)/.installed
	$(BIN)/ruff check .

generate: $(VENV)/.installed
	$(BIN)/python tools/gen_protocol.py
	$(BIN)/python -m compileall -q mockbroker/protocol >/dev/null

# every load against mockbroker, librdkafka's mock and Tansu; rewrites README's table and bench/results.png
bench: $(VENV)/.installed
	$(BIN)/pip install -q -e '.[bench]'
	$(BIN)/python -m bench.suite
	$(BIN)/python bench/codec_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
