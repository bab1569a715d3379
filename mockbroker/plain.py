"""Slotted record classes without ``@dataclass``'s cost at import time.

A dataclass writes its ``__init__``, ``__repr__`` and ``__eq__`` as source and compiles it with exec
when its module is imported: ~0.5-1 ms a class on this VM, and twenty of them were a tenth of the
broker's start-up.  Classes built on :class:`Slotted` write ``__init__`` by hand (compiled once, into
the .pyc) and get a dataclass's ``__repr__`` and ``__eq__`` from the base, over their ``__slots__``
in order; :class:`FrozenSlotted` adds a frozen dataclass's hash and refuses assignment after
``__init__`` (which sets fields with ``object.__setattr__``).
"""

from __future__ import annotations

from typing import Any


class Slotted:
    __slots__: tuple[str, ...] = ()

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable and compared by value, as a dataclass


class FrozenSlotted(Slotted):
    __slots__: tuple[str, ...] = ()

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r} of a frozen {type(self).__qualname__}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r} of a frozen {type(self).__qualname__}")

    # frozen, so hashable by value: the mutable base sets __hash__ = None on purpose
    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(getattr(self, name) for name in self.__slots__))
