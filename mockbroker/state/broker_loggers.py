"""BROKER_LOGGER configs: mockbroker's Python loggers, described and changed as Kafka does its log4j
loggers (DescribeConfigs / IncrementalAlterConfigs with resource type 8 and the broker id as name).

Logger names are ``root`` and the ``mockbroker...`` loggers; levels are Kafka's names (FATAL maps to
Python's CRITICAL). SET changes a logger's level, DELETE unsets it (it inherits again; not allowed
for root). The loggers are process-wide, so every broker of every cluster in the process shares them.
"""

from __future__ import annotations

import logging

from mockbroker.errors import ErrorCode, KafkaError

ROOT = "root"
VALID_LEVELS = ("FATAL", "ERROR", "WARN", "INFO", "DEBUG", "TRACE")
_TO_PYTHON = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
              "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": 5}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OP_NAMES = {APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _kafka_level(level: int) -> str:
    if level >= logging.CRITICAL:
        return "FATAL"
    if level >= logging.ERROR:
        return "ERROR"
    if level >= logging.WARNING:
        return "WARN"
    if level >= logging.INFO:
        return "INFO"
    return "DEBUG" if level >= logging.DEBUG else "TRACE"


def _logger(name: str) -> logging.Logger:
    if name not in describe():
        raise KafkaError(ErrorCode.INVALID_CONFIG, f"Logger {name} does not exist!")
    return logging.getLogger() if name == ROOT else logging.getLogger(name)


def describe() -> dict[str, str]:
    """Logger name -> effective level, root first."""
    out = {ROOT: _kafka_level(logging.getLogger().getEffectiveLevel())}
    names = sorted(n for n in logging.Logger.manager.loggerDict if n == "mockbroker" or n.startswith("mockbroker."))
    for name in names:
        out[name] = _kafka_level(logging.getLogger(name).getEffectiveLevel())
    return out


def check_node(resource_name: str, node_id: int) -> None:
    try:
        requested = int(resource_name)
    except ValueError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {resource_name}") from None
    if requested != node_id:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unexpected node id. Expected {node_id}, but received {requested}")


def alter(ops: list[tuple[str, int, str | None]], node_id: int, resource_name: str, validate_only: bool) -> None:
    """Kafka's RuntimeLoggerManager: check every operation, then (unless validate_only) apply them."""
    check_node(resource_name, node_id)
    for name, op, value in ops:
        if op == SET:
            _logger(name)
            if value not in VALID_LEVELS:
                raise KafkaError(ErrorCode.INVALID_CONFIG,
                                 f"Cannot set the log level of {name} to {value} as it is not a supported log "
                                 f"level. Valid log levels are {', '.join(VALID_LEVELS)}")
        elif op == DELETE:
            _logger(name)
            if name == ROOT:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "Removing the log level of the root logger is not allowed")
        elif op in _OP_NAMES:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"{_OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource")
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST,
                             f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource")
    if validate_only:
        return
    for name, op, value in ops:
        if op == SET:
            _logger(name).setLevel(_TO_PYTHON[str(value)])
        else:
            _logger(name).setLevel(logging.NOTSET)
