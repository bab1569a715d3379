"""A Schema Registry setting kept globally and per subject (the compatibility level, the mode): a subject's
own value overrides the global one.  Changes are planned as the ``_schemas`` records they write (keytype
CONFIG or MODE, Confluent's format) and applied once written, like every other change of the registry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mockbroker.registry.errors import RegistryError

Record = tuple[dict[str, Any], dict[str, Any] | None]  # a _schemas key and value (None: a tombstone)


@dataclass
class Change:
    """What a request writes to ``_schemas`` and what it does to the state once written."""

    records: list[Record]
    apply: Callable[[], Any]


def config_key(keytype: str, subject: str | None) -> dict[str, Any]:
    return {"keytype": keytype, "subject": subject, "magic": 0}


@dataclass
class SubjectSetting:
    keytype: str  # CONFIG or MODE: the _schemas key's type
    value_field: str  # the field of the _schemas value (and of the answers): compatibilityLevel, mode
    noun: str  # in the "not configured" message: compatibility, mode
    missing_code: int  # a subject has no value of its own: 40408 / 40409
    default: str
    subjects: dict[str, str] = field(default_factory=dict)
    value: str = field(init=False)  # the global value

    def __post_init__(self) -> None:
        self.value = self.default

    def of(self, subject: str | None) -> str:
        """What applies to ``subject``: its own value, else the global one (``None``: the global one)."""
        return self.subjects.get(subject, self.value) if subject is not None else self.value

    def configured(self, subject: str | None, default_to_global: bool = False) -> str:
        """GET /config|/mode[/{subject}]: a subject without its own value is refused unless defaultToGlobal."""
        if subject is None or subject in self.subjects or default_to_global:
            return self.of(subject)
        raise self._missing(subject)

    def plan_set(self, subject: str | None, chosen: str) -> Change:
        def apply() -> str:
            if subject is None:
                self.value = chosen
            else:
                self.subjects[subject] = chosen
            return chosen

        return Change([(config_key(self.keytype, subject), {self.value_field: chosen})], apply)

    def plan_forget(self, subject: str | None) -> Change:
        """DELETE: a subject's own value goes (the answer is the value it had); the global one returns to the
        default (the answer is the value it had)."""
        if subject is not None and subject not in self.subjects:
            raise self._missing(subject)
        before = self.of(subject)

        def apply() -> str:
            if subject is None:
                self.value = self.default
            else:
                del self.subjects[subject]
            return before

        return Change([(config_key(self.keytype, subject), None)], apply)

    def _missing(self, subject: str) -> RegistryError:
        return RegistryError(self.missing_code, f"Subject '{subject}' does not have subject-level {self.noun} "
                                                "configured")
