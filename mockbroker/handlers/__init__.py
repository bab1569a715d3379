"""Request handlers, one module per API key (``kNN_name.py``), each opening with what it does.

Importing this package imports every ``kNN_*`` module, which registers its handler in
``registry.HANDLERS``.  Handlers are thin: read the request, call broker state, build the response.
"""

import importlib
import pkgutil

HANDLER_MODULES = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name[0] == "k" and m.name[1:3].isdigit())
for _name in HANDLER_MODULES:
    importlib.import_module(f"{__name__}.{_name}")
