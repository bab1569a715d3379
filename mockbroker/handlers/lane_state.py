"""The broker and connection state that keeps requests from a lane: each lane's ``usual_for``, made from
the lane's declaration.

Each lane (handlers/produce_lane.py, handlers/k01_fetch.py) declares what makes a request "not usual"
whatever its bytes say, as data: attribute paths from the connection and from the broker, each keeping
requests away while its value is truthy, and broker config names (read in ``cluster.config.values``),
each keeping them away while its value is truthy.  :func:`usual_function` makes the lane's
``usual_for(broker, conn)`` from it, and the produce lane hands the same declaration to C once
(``_producelane.setup_usual``, native/lanes/lane_usual.h), whose borrow() reads the same paths for each
read: C keeps no list of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CONFIG_VALUES = "cluster.config.values"  # where a lane's config names are read, from the broker (C reads the same)

# What keeps requests from EVERY lane (each lane's declaration starts with these and adds its own): a feature
# that must see each request whatever its API goes here, once.  Each blocks while its value is truthy.
EVERY_LANE_ON_CONNECTION: tuple[str, ...] = (
    "sasl",  # a SASL listener: dispatch checks each request against the login first
)
EVERY_LANE_WHILE: tuple[str, ...] = (  # attribute paths from the broker (BrokerServer)
    "partitioned",  # a network partition: nothing is answered
    "cluster.faults.rules",  # fault rules see each request
    "cluster.quotas.enabled",  # client quotas measure and throttle each answer
)
EVERY_LANE_WITH_CONFIG: tuple[str, ...] = (  # broker configs, in cluster.config.values
    "authorizer.class.name",  # ACLs on (state.acls.Authorizer.enabled): each topic is authorized
)


def usual_function(on_connection: tuple[str, ...], on_broker: tuple[str, ...],
                   with_config: tuple[str, ...]) -> Callable[[Any, Any], bool]:
    """``usual_for(broker, conn)``: True while none of the declared conditions holds.  It is compiled
    from the declaration into one expression of plain attribute reads (as dataclasses and namedtuple
    make their methods), as fast as writing it out: dispatch asks it for every request of the lane."""
    for path in (*on_connection, *on_broker, CONFIG_VALUES):
        if not all(name.isidentifier() for name in path.split(".")):
            raise ValueError(f"not an attribute path: {path!r}")
    terms = [f"conn.{path}" for path in on_connection] + [f"broker.{path}" for path in on_broker]
    terms += [f"broker.{CONFIG_VALUES}.get({name!r})" for name in with_config]
    source = f"def usual_for(broker, conn):\n    return not ({' or '.join(terms) or 'False'})\n"
    namespace: dict[str, Any] = {}
    exec(compile(source, f"<usual_for: {', '.join(terms)}>", "exec"), namespace)  # (every name checked above)
    usual_for: Callable[[Any, Any], bool] = namespace["usual_for"]
    usual_for.__doc__ = "May the lane take a request on ``conn`` now, as far as broker and connection state go?"
    return usual_for


def split(paths: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """The paths as tuples of attribute names, as setup_usual takes them."""
    return tuple(tuple(path.split(".")) for path in paths)
