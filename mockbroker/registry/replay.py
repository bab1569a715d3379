"""The registry's state rebuilt from ``_schemas``, as Confluent's registry rebuilds it at start (it reads its
topic from the beginning before it serves): each record, in offset order, applied as the registry applies
what it wrote (mockbroker.registry.state plans the same records).

Keys and values are Confluent's JSON (mockbroker.registry.store.encode): keytype SCHEMA (a version of a
subject: its id, schema, type, references and deleted flag; a tombstone removes the version for good),
DELETE_SUBJECT (the subject's versions up to the one named soft-deleted), CONFIG and MODE (a level or mode,
global when the subject is null; a tombstone forgets it), NOOP and anything else ignored.  A record that
does not decode, or a schema that no longer parses, is logged and skipped, as Confluent's reader skips
what it cannot deserialize.  Ids keep their values; the next id is one above the largest seen.
"""

from __future__ import annotations

import json
import logging
from bisect import insort
from collections.abc import Sequence
from typing import Any

from mockbroker.registry.errors import RegistryError
from mockbroker.registry.settings import SubjectSetting
from mockbroker.registry.state import RegistryState, StoredSchema, Version

log = logging.getLogger("mockbroker.registry")


def _json(raw: bytes | memoryview | None) -> Any:
    return None if raw is None else json.loads(bytes(raw))


def apply_records(state: RegistryState,
                  records: Sequence[tuple[bytes | memoryview | None, bytes | memoryview | None]]) -> int:
    """Apply ``_schemas`` records (key, value bytes) in order; how many were applied (not skipped)."""
    applied = 0
    for index, (raw_key, raw_value) in enumerate(records):
        try:
            key, value = _json(raw_key), _json(raw_value)
            if not isinstance(key, dict) or not (value is None or isinstance(value, dict)):
                raise ValueError("a JSON object expected")
            applied += apply_record(state, key, value)
        except (ValueError, KeyError, TypeError, RegistryError) as exc:
            message = exc.message if isinstance(exc, RegistryError) else exc
            log.warning("schema registry: _schemas record %d skipped: %s", index, message)
    return applied


def apply_record(state: RegistryState, key: dict[str, Any], value: dict[str, Any] | None) -> int:
    """Apply one record (1) or ignore it (0: NOOP or a key type this registry does not keep)."""
    keytype = key.get("keytype")
    if keytype == "SCHEMA":
        _schema(state, key, value)
    elif keytype == "DELETE_SUBJECT":
        if value is not None:
            _delete_subject(state, str(key["subject"]), int(value["version"]))
    elif keytype == "CONFIG":
        _setting(state.levels, key, value)
    elif keytype == "MODE":
        _setting(state.modes, key, value)
    else:
        return 0
    return 1


def _schema(state: RegistryState, key: dict[str, Any], value: dict[str, Any] | None) -> None:
    subject, number = str(key["subject"]), int(key["version"])
    versions = state.subjects.get(subject, [])
    old = next((v for v in versions if v.version == number), None)
    if value is None:  # a permanent delete
        if old is not None:
            versions.remove(old)
            if not versions:
                del state.subjects[subject]
            if not state.uses_of(old.schema_id, deleted=True):
                state.schemas.pop(old.schema_id, None)
        return
    schema_id = int(value["id"])
    state.next_id = max(state.next_id, schema_id + 1)  # an id once given is never given again, parsed or not
    if schema_id not in state.schemas:
        references = value.get("references") or []
        parsed = state.parse(str(value.get("schemaType") or "AVRO"), value["schema"], references)
        state.schemas[schema_id] = StoredSchema(schema_id, parsed, references)
    deleted = bool(value.get("deleted", False))
    if old is not None:
        old.schema_id, old.deleted = schema_id, deleted
        return
    insort(state.subjects.setdefault(subject, []), Version(subject, number, schema_id, deleted),
           key=lambda v: v.version)


def _delete_subject(state: RegistryState, subject: str, up_to: int) -> None:
    for v in state.subjects.get(subject, []):
        if v.version <= up_to:
            v.deleted = True


def _setting(setting: SubjectSetting, key: dict[str, Any], value: dict[str, Any] | None) -> None:
    subject = key.get("subject")
    if value is None:
        if subject is None:
            setting.value = setting.default
        else:
            setting.subjects.pop(str(subject), None)
        return
    chosen = str(value[setting.value_field])
    if subject is None:
        setting.value = chosen
    else:
        setting.subjects[str(subject)] = chosen
