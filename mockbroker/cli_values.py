"""The command line's argparse types: each turns one flag's text into its value or raises
``argparse.ArgumentTypeError`` naming what is wrong (argparse adds "argument --flag:"), so a bad value is one
line and exit status 2 (mockbroker/cli.py)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from mockbroker.errors import KafkaError

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
SWITCH_ON, SWITCH_OFF = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def fail(message: str) -> NoReturn:
    """One line on stderr (``mockbroker ...: error: ...``) and exit status 2, as argparse's errors."""
    sys.stderr.write(" ".join(str(message).split()) + "\n")
    sys.stderr.flush()
    raise SystemExit(2)


def switch(text: str) -> bool:
    """An on/off setting's text: true/false, 1/0, yes/no, on/off, any case (empty: off); ValueError otherwise."""
    raw = text.strip().lower()
    if raw in SWITCH_OFF:
        return False
    if raw in SWITCH_ON:
        return True
    raise ValueError(f"{raw!r} is not true or false")


def port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is a number from 0 to 65535, not {text!r}")
    return port


def broker_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"the number of brokers must be at least 1, not {text!r}")
    return count


def log_level(text: str) -> str:
    level = text.strip().upper()
    if level not in LOG_LEVELS:
        raise argparse.ArgumentTypeError(f"one of {', '.join(LOG_LEVELS)}, not {text!r}")
    return level


def latency(text: str) -> str:
    from mockbroker.faults import latency  # (one line naming the nearest preset)
    if text not in latency.PRESETS:
        raise argparse.ArgumentTypeError(latency.unknown(text))
    return text


def topic(text: str) -> tuple[str, int | None]:
    from mockbroker.cluster_args import parse_topic_spec
    from mockbroker.state.topic_rules import validate_topic_name

    try:
        name, partitions = parse_topic_spec(text)
        validate_topic_name(name)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    except KafkaError as exc:
        raise argparse.ArgumentTypeError(exc.message) from None
    return name, partitions


def config_item(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"KEY=VALUE expected, not {text!r}")
    return key.strip(), value.strip()


def sasl_user(text: str) -> tuple[str, str]:
    user, sep, password = text.partition(":")
    if not sep or not user:
        raise argparse.ArgumentTypeError(f"NAME:PASSWORD expected, not {text!r}")
    return user, password


def existing_file(text: str) -> str:
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"no such file: {text!r}")
    return text


def folder_path(text: str) -> str:
    """A folder (``serve --data-dir``, ``--snapshot``): not empty, not a file."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a folder path is needed")
    if os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text!r} is a file, not a folder")
    return text


def report_path(text: str) -> str:
    """Where ``serve --report`` writes its HTML report: a file (its folder is made when missing)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a file path is needed")
    if os.path.isdir(text):
        example = os.path.join(text, "report.html")
        raise argparse.ArgumentTypeError(f"{text!r} is a folder: give the report's file, e.g. {example!r}")
    return text
