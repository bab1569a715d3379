"""The Schema Registry's state: schemas by id (identical schemas share one id across subjects), subjects
and their versions (soft-deleted or not), compatibility levels and modes, global and per subject.  No
I/O here: each change is planned first (every refusal raised as a RegistryError) as the records it
writes to ``_schemas`` in Confluent's key/value format, and applied once the store has written them,
as the real registry applies what it reads back from its topic.

    change = state.plan_register("orders-value", "AVRO", text, references)
    await store.write(change.records)
    schema_id = change.apply()
"""

from __future__ import annotations

import functools
import uuid
from dataclasses import dataclass, field
from typing import Any

from mockbroker.registry import errors as E
from mockbroker.registry.compatibility import DEFAULT_LEVEL, LEVELS, incompatibilities, parse
from mockbroker.registry.errors import RegistryError
from mockbroker.registry.kinds import ParsedSchema
from mockbroker.registry.settings import Change, Record, SubjectSetting

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")


@dataclass
class StoredSchema:
    schema_id: int
    parsed: ParsedSchema
    references: list[dict[str, Any]]  # [{"name", "subject", "version"}], as registered

    @property
    def guid(self) -> str:
        return str(uuid.uuid5(uuid.NAMESPACE_OID, f"{self.parsed.kind}:{self.parsed.canonical}:{self.references}"))

    def body(self) -> dict[str, Any]:
        """The fields every answer about a schema carries (schemaType and references only when not the default)."""
        out: dict[str, Any] = {"schema": self.parsed.canonical}
        if self.parsed.kind != "AVRO":
            out["schemaType"] = self.parsed.kind
        if self.references:
            out["references"] = self.references
        return out


@dataclass
class Version:
    subject: str
    version: int
    schema_id: int
    deleted: bool = False


@dataclass
class RegistryState:
    schemas: dict[int, StoredSchema] = field(default_factory=dict)
    subjects: dict[str, list[Version]] = field(default_factory=dict)
    levels: SubjectSetting = field(default_factory=lambda: SubjectSetting(
        "CONFIG", "compatibilityLevel", "compatibility", E.SUBJECT_CONFIG_NOT_FOUND, DEFAULT_LEVEL))
    modes: SubjectSetting = field(default_factory=lambda: SubjectSetting(
        "MODE", "mode", "mode", E.SUBJECT_MODE_NOT_FOUND, "READWRITE"))
    next_id: int = 1

    # -- reading ---------------------------------------------------------------------------------
    def schema(self, schema_id: int) -> StoredSchema:
        if schema_id not in self.schemas:
            raise RegistryError(E.SCHEMA_NOT_FOUND, f"Schema {schema_id} not found")
        return self.schemas[schema_id]

    def versions(self, subject: str, deleted: bool = False) -> list[Version]:
        """The subject's versions (soft-deleted ones only with ``deleted``); 40401 when it has none."""
        found = [v for v in self.subjects.get(subject, []) if deleted or not v.deleted]
        if not found:
            raise RegistryError(E.SUBJECT_NOT_FOUND, f"Subject '{subject}' not found.")
        return found

    def subject_names(self, deleted: bool = False, prefix: str = "") -> list[str]:
        return sorted(s for s, vs in self.subjects.items()
                      if s.startswith(prefix) and any(deleted or not v.deleted for v in vs))

    def version(self, subject: str, version: str | int, deleted: bool = False) -> Version:
        """One version: a number, ``latest`` or -1; 42202 for anything else, 40401 / 40402 when absent."""
        number = _version_number(version)
        found = self.versions(subject, deleted)
        if number == -1:
            return found[-1]
        for v in found:
            if v.version == number:
                return v
        raise RegistryError(E.VERSION_NOT_FOUND, f"Version {number} not found.")

    def version_body(self, v: Version) -> dict[str, Any]:
        return {"subject": v.subject, "version": v.version, "id": v.schema_id, **self.schema(v.schema_id).body()}

    def uses_of(self, schema_id: int, deleted: bool = False) -> list[Version]:
        return [v for vs in self.subjects.values() for v in vs
                if v.schema_id == schema_id and (deleted or not v.deleted)]

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the live schemas that reference ``subject`` version ``version``."""
        return sorted({v.schema_id for vs in self.subjects.values() for v in vs if not v.deleted
                       for ref in self.schemas[v.schema_id].references
                       if ref["subject"] == subject and ref["version"] == version})

    # -- parsing and checking ----------------------------------------------------------------------
    def resolve(self, references: list[dict[str, Any]]) -> dict[str, str]:
        """Import name -> schema text for the references and theirs (dependencies first); 42201 if one is
        missing or malformed."""
        out: dict[str, str] = {}
        for ref in references:
            if not isinstance(ref, dict) or not {"name", "subject", "version"} <= set(ref):
                raise RegistryError(E.INVALID_SCHEMA, f"Invalid schema reference {ref!r}: name, subject and "
                                                      "version are required")
            try:
                target = self.schema(self.version(ref["subject"], ref["version"]).schema_id)
            except RegistryError:
                raise RegistryError(E.INVALID_SCHEMA, f"Invalid schema: reference {ref['name']!r} names subject "
                                                      f"{ref['subject']!r} version {ref['version']}, which does "
                                                      "not exist") from None
            out.update(self.resolve(target.references))
            out[str(ref["name"])] = target.parsed.canonical
        return out

    def parse(self, kind: str, text: Any, references: Any) -> ParsedSchema:
        if not isinstance(text, str) or not text.strip():
            raise RegistryError(E.INVALID_SCHEMA, "Invalid schema: 'schema' (a non-empty string) is required")
        if not isinstance(references, list):
            raise RegistryError(E.INVALID_SCHEMA, "Invalid schema: 'references' must be a list")
        return parse(kind, text, self.resolve(references))

    def _find(self, parsed: ParsedSchema, references: list[dict[str, Any]]) -> int | None:
        for schema_id, stored in self.schemas.items():
            if stored.parsed == parsed and stored.references == references:
                return schema_id
        return None

    def check(self, subject: str, parsed: ParsedSchema, against: list[Version] | None = None,
              level: str | None = None) -> list[str]:
        earlier = against if against is not None else [v for v in self.subjects.get(subject, []) if not v.deleted]
        return incompatibilities(level or self.levels.of(subject), parsed,
                                 [self.schemas[v.schema_id].parsed for v in earlier])

    # -- changes -------------------------------------------------------------------------------------
    def plan_register(self, subject: str, kind: str, text: Any, references: Any, schema_id: int | None = None,
                      version: int | None = None) -> Change:
        """Register (or find) a schema under ``subject``; ``apply`` returns its id.  ``schema_id`` and
        ``version`` are honoured in IMPORT mode only."""
        mode = self.modes.of(subject)
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise RegistryError(E.OPERATION_NOT_PERMITTED, f"Subject {subject} is in read-only mode")
        parsed = self.parse(kind, text, references)
        live = [v for v in self.subjects.get(subject, []) if not v.deleted]
        for v in live:
            if self.schemas[v.schema_id].parsed == parsed and self.schemas[v.schema_id].references == references:
                return Change([], functools.partial(int, v.schema_id))
        if mode != "IMPORT":
            problems = self.check(subject, parsed, live)
            if problems:
                raise RegistryError(E.INCOMPATIBLE, "Schema being registered is incompatible with an earlier "
                                    f"schema for subject \"{subject}\", details: [{'; '.join(problems)}]")
            schema_id, version = self._find(parsed, references), None
        new_id = schema_id if schema_id is not None else self.next_id
        existing = self.schemas.get(new_id)
        if existing is not None and (existing.parsed != parsed or existing.references != references):
            raise RegistryError(E.OPERATION_NOT_PERMITTED, f"Overwrite new schema with id {new_id} is not "
                                                            "permitted: another schema has that id")
        number = version or max((v.version for v in self.subjects.get(subject, [])), default=0) + 1
        stored = StoredSchema(new_id, parsed, references)
        value = {"subject": subject, "version": number, "id": new_id, **stored.body(), "deleted": False}

        def apply() -> int:
            self.schemas.setdefault(new_id, stored)
            self.next_id = max(self.next_id, new_id + 1)
            self.subjects.setdefault(subject, []).append(Version(subject, number, new_id))
            return new_id

        return Change([(_schema_key(subject, number), value)], apply)

    def plan_delete_subject(self, subject: str, permanent: bool) -> Change:
        everything = self.versions(subject, deleted=True)
        live = [v for v in everything if not v.deleted]
        if permanent and live:
            raise RegistryError(E.SUBJECT_NOT_SOFT_DELETED, f"Subject '{subject}' was not deleted first before "
                                                             "being permanently deleted")
        if not permanent and not live:
            raise RegistryError(E.SUBJECT_SOFT_DELETED, f"Subject '{subject}' was soft deleted.Set permanent=true "
                                                         "to delete permanently")
        for v in live:
            self._refuse_if_referenced(v)
        if permanent:
            def remove() -> list[int]:
                del self.subjects[subject]
                self._forget_unused([v.schema_id for v in everything])
                return [v.version for v in everything]

            return Change([(_schema_key(subject, v.version), None) for v in everything], remove)
        records: list[Record] = [(_schema_key(subject, v.version), self._deleted_value(v)) for v in live]
        records.append(({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0},
                        {"subject": subject, "version": live[-1].version}))

        def soft() -> list[int]:
            for v in live:
                v.deleted = True
            return [v.version for v in live]

        return Change(records, soft)

    def plan_delete_version(self, subject: str, version: str | int, permanent: bool) -> Change:
        v = self.version(subject, version, deleted=True)
        if _version_number(version) == -1 and not permanent:
            v = self.version(subject, version)  # latest among the live ones
        if permanent and not v.deleted:
            raise RegistryError(E.VERSION_NOT_SOFT_DELETED, f"Subject '{subject}' Version {v.version} was not "
                                                             "deleted first before being permanently deleted")
        if not permanent and v.deleted:
            raise RegistryError(E.VERSION_SOFT_DELETED, f"Subject '{subject}' Version {v.version} was soft "
                                                         "deleted.Set permanent=true to delete permanently")
        self._refuse_if_referenced(v)
        if permanent:
            def remove() -> int:
                self.subjects[subject].remove(v)
                if not self.subjects[subject]:
                    del self.subjects[subject]
                self._forget_unused([v.schema_id])
                return v.version

            return Change([(_schema_key(subject, v.version), None)], remove)

        def soft() -> int:
            v.deleted = True
            return v.version

        return Change([(_schema_key(subject, v.version), self._deleted_value(v))], soft)

    def plan_level(self, subject: str | None, level: Any) -> Change:
        if not isinstance(level, str) or level.upper() not in LEVELS:
            raise RegistryError(E.INVALID_COMPATIBILITY, "Invalid compatibility level. Valid values are none, "
                                "backward, forward, full, backward_transitive, forward_transitive, and "
                                "full_transitive")
        return self.levels.plan_set(subject, level.upper())

    def plan_mode(self, subject: str | None, mode: Any, force: bool = False) -> Change:
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError(E.INVALID_MODE, "Invalid mode. Valid values are READWRITE, READONLY, "
                                                "READONLY_OVERRIDE, IMPORT")
        chosen = mode.upper()
        if chosen == "IMPORT" and not force and (self.subjects if subject is None else self.subjects.get(subject)):
            raise RegistryError(E.OPERATION_NOT_PERMITTED, "Cannot import since found existing subjects")
        return self.modes.plan_set(subject, chosen)

    # -- helpers -------------------------------------------------------------------------------------
    def _refuse_if_referenced(self, v: Version) -> None:
        users = self.referenced_by(v.subject, v.version)
        if users:
            raise RegistryError(E.REFERENCE_EXISTS, f"One or more references exist to the schema "
                                                     f"{{subject={v.subject},version={v.version}}}: ids {users}")

    def _deleted_value(self, v: Version) -> dict[str, Any]:
        return {"subject": v.subject, "version": v.version, "id": v.schema_id, **self.schema(v.schema_id).body(),
                "deleted": True}

    def _forget_unused(self, schema_ids: list[int]) -> None:
        for schema_id in schema_ids:
            if not self.uses_of(schema_id, deleted=True):
                self.schemas.pop(schema_id, None)


def _version_number(version: str | int) -> int:
    if version == "latest":
        return -1
    try:
        number = int(version)
    except (TypeError, ValueError):
        number = 0
    if number == -1 or 1 <= number <= 2**31 - 1:
        return number
    raise RegistryError(E.INVALID_VERSION, f"The specified version '{version}' is not a valid version id. "
                                           "Allowed values are between [1, 2^31-1] and the string \"latest\"")


def _schema_key(subject: str, version: int) -> dict[str, Any]:
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}
