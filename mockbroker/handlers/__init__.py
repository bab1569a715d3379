"""Request handlers, one module per API key (``kNN_name.py``), each opening with what it does.

A handler module registers its handler in ``registry.HANDLERS`` when it is imported, which happens on
its API key's first request (``registry.handler_for``, from the table in ``index.py``); ``load_all``
imports every one (tests that walk all handlers).  Handlers are thin: read the request, call broker
state, build the response.
"""

import importlib


def handler_modules() -> list[str]:
    """The ``kNN_*`` modules on disk (listed on demand: a broker's start needs only ``index.py``)."""
    import pkgutil

    return sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name[0] == "k" and m.name[1:3].isdigit())


def load_all() -> None:
    """Import every handler module (each registers itself)."""
    for name in handler_modules():
        importlib.import_module(f"{__name__}.{name}")
