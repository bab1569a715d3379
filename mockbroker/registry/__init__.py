"""A Confluent-compatible Schema Registry beside the broker (REST API v1; AVRO, JSON and PROTOBUF
schemas with Confluent's compatibility levels; kept in the cluster's ``_schemas`` topic; faults like the
broker's).  Start it with ``MockCluster(schema_registry=True)`` or ``mockbroker serve
--schema-registry-port 0``; see docs/schema-registry.md.

Modules: server (the HTTP server and its faults middleware), routes (the REST API), state (subjects,
versions, ids, levels, modes), store (``_schemas``), compatibility (the levels), faults, errors, kinds
(what a schema type provides), one module per schema type (avro, json_schema, protobuf), and decode (record
bytes in Confluent's framing decoded with their registered schema, for the console and the report).
"""

from __future__ import annotations

import importlib.util

NEEDS = {"fastavro": "AVRO schemas", "grpc_tools": "PROTOBUF schemas (protoc)"}


def missing_extra() -> str | None:
    """One line naming the extra to install when this install lacks the schema parsers, or None."""
    absent = [f"{name} ({what})" for name, what in NEEDS.items() if importlib.util.find_spec(name) is None]
    if not absent:
        return None
    return (f"the schema registry needs {' and '.join(absent)}: pip install 'mockbroker[schema-registry]'")
