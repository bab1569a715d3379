"""Cluster actions from plain data, shared by scenario steps and the HTTP control API.

    await run_action(cluster, {"action": "move_leader", "topic": "orders", "partition": 0})

Runs on the cluster's event loop; returns a one-line description of what happened.  Bad arguments
raise ``ValueError``; actions Kafka would refuse raise ``KafkaError``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.nearest import hint
from mockbroker.state import broker_actions
from mockbroker.state.inspect import append_records

if TYPE_CHECKING:
    from mockbroker.cluster import MockCluster

ACTIONS = {
    "broker_down": ["broker"], "broker_up": ["broker"], "add_broker": [], "remove_broker": ["broker"],
    "partition_broker": ["broker"], "move_leader": ["topic", "partition"], "move_coordinator": ["key"],
    "produce": ["topic", "count"], "reset": [],
    # the Schema Registry's (MockCluster(schema_registry=True)): mockbroker.registry.faults for the rule's fields
    "registry_down": [], "registry_up": [], "registry_fault": ["rule"], "registry_clear_faults": [],
}
OPTIONAL = {"move_leader": ["broker"], "move_coordinator": ["broker"], "produce": ["partition", "value_size", "prefix"]}
BATCH_RECORDS = 500


def check_action(spec: dict[str, Any]) -> str:
    action = spec.get("action")
    if action not in ACTIONS:
        raise ValueError(f"unknown action {action!r}"
                         + (hint(str(action), ACTIONS) or f" (one of {', '.join(ACTIONS)})"))
    missing = [n for n in ACTIONS[action] if n not in spec]
    allowed = {"action", *ACTIONS[action], *OPTIONAL.get(action, [])}
    extra = sorted(set(spec) - allowed, key=str)
    problems = [f"{action} needs {', '.join(missing)}"] if missing else []
    if extra:  # (a misspelt field is both: the nearest name says which)
        problems.append(f"{action} does not take {', '.join(map(str, extra))}"
                        + "".join(hint(str(key), sorted(allowed)) for key in extra))
    if problems:
        raise ValueError("; ".join(problems))
    return action


async def run_action(cluster: MockCluster, spec: dict[str, Any]) -> str:
    action = check_action(spec)
    state = cluster.state
    if action == "broker_down":
        await cluster.broker_down_async(int(spec["broker"]))
    elif action == "broker_up":
        await cluster.broker_up_async(int(spec["broker"]))
    elif action == "add_broker":
        return f"broker {await cluster.add_broker_async()} added"
    elif action == "remove_broker":
        await cluster.remove_broker_async(int(spec["broker"]))
    elif action == "partition_broker":
        cluster.partition_broker_async(int(spec["broker"]))
    elif action == "move_leader":
        leader = broker_actions.move_leader(state, spec["topic"], int(spec["partition"]), spec.get("broker"))
        return f"{spec['topic']}-{spec['partition']} now led by broker {leader}"
    elif action == "move_coordinator":
        node = broker_actions.move_coordinator(state, spec["key"], spec.get("broker"))
        return f"coordinator of {spec['key']!r} now broker {node}"
    elif action == "produce":
        return produce(cluster, spec["topic"], int(spec["count"]), spec.get("partition"),
                       int(spec.get("value_size", 100)), str(spec.get("prefix", "record")))
    elif action == "reset":
        await cluster.reset_async()
    elif action.startswith("registry_"):
        return await _registry_action(cluster, action, spec)
    return action + (f" broker {spec['broker']}" if "broker" in spec else "")


async def _registry_action(cluster: MockCluster, action: str, spec: dict[str, Any]) -> str:
    if cluster.schema_registry is None:
        raise ValueError(f"{action}: this cluster runs no schema registry (start it with a schema registry port)")
    registry = cluster.schema_registry
    if action == "registry_down":
        await registry.down()
        return "schema registry down (connections refused)"
    if action == "registry_up":
        await registry.up()
        return f"schema registry up at {registry.url}"
    if action == "registry_clear_faults":
        registry.clear_faults()
        return "schema registry faults cleared"
    if not isinstance(spec["rule"], dict):
        raise ValueError("registry_fault: rule must be an object of fault fields")
    try:
        fault = registry.add_fault(spec["rule"])
    except ValueError as error:  # the rule's fields (mockbroker.registry.faults.FaultSpecError)
        raise ValueError(f"registry_fault: {error}") from None
    return f"schema registry fault {fault.name!r} added"


def produce(cluster: MockCluster, topic: str, count: int, partition: int | None = None, value_size: int = 100,
            prefix: str = "record") -> str:
    """Write ``count`` records (key = index, value = prefix-index padded to ``value_size``) round-robin over
    the topic's partitions (or into one), straight into the logs as a producer without idempotence would."""
    state = cluster.state
    logs = state.topic_or_autocreate(topic).partitions
    if partition is not None:
        logs = [state.partition(topic, int(partition))]
    per: dict[int, list[Any]] = {}
    for i in range(count):
        value = f"{prefix}-{i}".encode().ljust(value_size, b".")
        per.setdefault(i % len(logs), []).append((str(i).encode(), value, []))
    now = state.clock.now_ms()
    for index, items in per.items():
        for start in range(0, len(items), BATCH_RECORDS):
            size_before = logs[index].size_bytes
            append_records(logs[index], items[start:start + BATCH_RECORDS], now)
            state.memory_cap.added(logs[index], size_before)
    return f"{count} records produced to {topic}"
