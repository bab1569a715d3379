"""The per-library patch tables of mock_kafka, and installing / removing them.

Two ways to patch a client class:

- a Python class: its ``__init__`` is wrapped on the class itself, so every reference to the class (and
  every subclass that calls ``super().__init__``) is covered;
- a C extension type (confluent-kafka's ``Producer``, ``Consumer``, ``ShareConsumer``), whose attributes
  cannot be set: a subclass whose ``__init__`` rewrites the configuration replaces it in every module
  (mockbroker.redirect.swap), so code that did ``from confluent_kafka import Producer`` before is covered.

The patched constructors read the active target (mockbroker.redirect.active) at call time; with none
(a reference kept past the end), they construct the client as the original would.  A library that is not
installed is skipped without being imported; so is a class a library's version lacks.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mockbroker.redirect import active, rewrite, swap
from mockbroker.redirect.rewrite import CONFLUENT, PYTHON, REGISTRY

log = logging.getLogger("mockbroker.mock_kafka")


@dataclass(frozen=True)
class Patch:
    """One client class: where it is, how its configuration is rewritten, and whether it is a C type."""

    module: str
    attr: str
    style: str
    c_type: bool = False

    @property
    def name(self) -> str:
        return f"{self.module}.{self.attr}"


PATCHES = (
    # confluent-kafka 2.x (librdkafka config dicts)
    Patch("confluent_kafka", "Producer", CONFLUENT, c_type=True),
    Patch("confluent_kafka", "Consumer", CONFLUENT, c_type=True),
    Patch("confluent_kafka", "ShareConsumer", CONFLUENT, c_type=True),
    Patch("confluent_kafka", "SerializingProducer", CONFLUENT),
    Patch("confluent_kafka", "DeserializingConsumer", CONFLUENT),
    Patch("confluent_kafka", "DeserializingShareConsumer", CONFLUENT),
    Patch("confluent_kafka.admin", "AdminClient", CONFLUENT),
    Patch("confluent_kafka.aio", "AIOProducer", CONFLUENT),
    Patch("confluent_kafka.aio", "AIOConsumer", CONFLUENT),
    # kafka-python and aiokafka (bootstrap_servers= keyword arguments)
    Patch("kafka", "KafkaProducer", PYTHON),
    Patch("kafka", "KafkaConsumer", PYTHON),
    Patch("kafka", "KafkaAdminClient", PYTHON),
    Patch("aiokafka", "AIOKafkaProducer", PYTHON),
    Patch("aiokafka", "AIOKafkaConsumer", PYTHON),
    Patch("aiokafka.admin", "AIOKafkaAdminClient", PYTHON),
    # confluent-kafka's Schema Registry clients (url)
    Patch("confluent_kafka.schema_registry", "SchemaRegistryClient", REGISTRY),
    Patch("confluent_kafka.schema_registry", "AsyncSchemaRegistryClient", REGISTRY),
)

_subclasses: dict[type, type] = {}  # a C type -> its redirecting subclass (one per process)
_undo: list[Callable[[], None]] = []  # what install() did, undone by uninstall()


def _load(patch: Patch) -> type | None:
    """The class a patch names, or None when its library is absent (not imported) or lacks it."""
    if importlib.util.find_spec(patch.module.partition(".")[0]) is None:
        return None
    try:
        module = importlib.import_module(patch.module)
    except ImportError:  # installed but unusable here (a missing optional dependency)
        return None
    found = getattr(module, patch.attr, None)
    return found if isinstance(found, type) else None


def available() -> list[tuple[Patch, type]]:
    """The client classes installed here, in table order."""
    return [(patch, cls) for patch in PATCHES if (cls := _load(patch)) is not None]


def redirected(registry: bool) -> list[str]:
    """The dotted names of the classes an activation redirects (registry clients only with a registry)."""
    return [patch.name for patch, _ in available() if registry or patch.style != REGISTRY]


def _redirect(patch: Patch, args: tuple[Any, ...], kwargs: dict[str, Any]) -> rewrite.Rewrite | None:
    """The rewritten arguments of one construction, or None to construct the client as it is."""
    target = active.top()
    if target is None or active.inside_construction():
        return None
    if patch.style == REGISTRY:
        if target.registry_url is None:
            return None
        done = rewrite.registry(args, kwargs, target.registry_url)
    elif patch.style == CONFLUENT:
        done = rewrite.confluent(args, kwargs, target.bootstrap_servers)
    else:
        done = rewrite.python(args, kwargs, target.bootstrap_servers)
    log.debug("mock_kafka: %s %s", patch.name, done.describe())
    return done


def _construct(patch: Patch, init: Callable[..., None], self: object, args: tuple[Any, ...],
               kwargs: dict[str, Any]) -> None:
    done = _redirect(patch, args, kwargs)
    if done is None:
        init(self, *args, **kwargs)
        return
    with active.constructing():
        init(self, *done.args, **done.kwargs)


def _subclass(patch: Patch, cls: type) -> type:
    """The redirecting subclass of a C extension type (made once, reused by every activation)."""
    made = _subclasses.get(cls)
    if made is None:
        original_init: Callable[..., None] = getattr(cls, "__init__")  # noqa: B009 (the C type's slot)

        def __init__(self: object, *args: Any, **kwargs: Any) -> None:
            _construct(patch, original_init, self, args, kwargs)

        made = type(cls.__name__, (cls,), {"__init__": __init__, "__module__": __name__,
                                           "__qualname__": cls.__qualname__, "__doc__": cls.__doc__})
        _subclasses[cls] = made
    return made


def _wrap_init(patch: Patch, cls: type) -> Callable[[], None]:
    """Wrap ``cls.__init__`` on the class; the function that puts the original back."""
    own = "__init__" in cls.__dict__
    init: Callable[..., None] = cls.__dict__["__init__"] if own else getattr(cls, "__init__")  # noqa: B009

    @functools.wraps(init)
    def __init__(self: object, *args: Any, **kwargs: Any) -> None:
        _construct(patch, init, self, args, kwargs)

    setattr(cls, "__init__", __init__)  # noqa: B010 (mypy refuses assigning to a method)

    def undo() -> None:
        if cls.__dict__.get("__init__") is __init__:
            if own:
                setattr(cls, "__init__", init)  # noqa: B010
            else:
                delattr(cls, "__init__")

    return undo


def install() -> None:
    """Patch every installed client class (all or nothing: a failure undoes what was done)."""
    undo: list[Callable[[], None]] = []
    try:
        replacements: dict[object, object] = {}
        for patch, cls in available():
            if patch.c_type:
                replacements[cls] = _subclass(patch, cls)
            else:
                undo.append(_wrap_init(patch, cls))
        if replacements:
            swapped = swap.swap(replacements)
            undo.append(lambda: swap.restore(swapped, replacements))
    except BaseException:
        for step in reversed(undo):
            step()
        raise
    _undo[:] = undo


def uninstall() -> None:
    """Put back every class and module global install() changed (the rest is attempted if one fails)."""
    steps, _undo[:] = list(reversed(_undo)), []
    failed: BaseException | None = None
    for step in steps:
        try:
            step()
        except BaseException as exc:  # still restore the others
            failed = failed or exc
    if failed is not None:
        raise failed
