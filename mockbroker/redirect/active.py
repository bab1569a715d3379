"""The process-wide stack of active mock_kafka targets, which the patched constructors read at call time.

The patches are installed when the stack goes from empty to one target and removed when it goes back to
empty (under one lock); in between, a client constructed on any thread goes to the top target.  A target
leaves the stack by identity, so scopes that end out of order (on different threads) leave the right one.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster


@dataclass(frozen=True, eq=False)
class Target:
    """Where new clients go while this target is on top: the cluster's bootstrap servers and registry."""

    cluster: MockCluster
    bootstrap_servers: str
    registry_url: str | None
    no_registry_because: str  # why schema registry clients are left alone (when registry_url is None)


_lock = threading.RLock()
_stack: list[Target] = []
_local = threading.local()  # constructing: the depth of redirected constructions running on this thread


def top() -> Target | None:
    """The target new clients go to, or None when no mock_kafka is active."""
    try:
        return _stack[-1]
    except IndexError:
        return None


def depth() -> int:
    """How many mock_kafka scopes are active (process-wide)."""
    return len(_stack)


def push(target: Target, install: Callable[[], None]) -> None:
    """Put a target on top, installing the patches first when it is the only one."""
    with _lock:
        if not _stack:
            install()
        _stack.append(target)


def pop(target: Target, uninstall: Callable[[], None]) -> None:
    """Take a target off the stack (wherever it is), removing the patches when none is left."""
    with _lock:
        _stack.remove(target)
        if not _stack:
            uninstall()


@contextlib.contextmanager
def constructing() -> Iterator[None]:
    """Mark this thread as inside a redirected construction: a client the constructor itself creates
    (confluent-kafka's AIOProducer makes a Producer) gets the already rewritten configuration as it is."""
    _local.depth = getattr(_local, "depth", 0) + 1
    try:
        yield
    finally:
        _local.depth -= 1


def inside_construction() -> bool:
    return bool(getattr(_local, "depth", 0))
