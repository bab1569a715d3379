"""Request handlers, one module per API key (``kNN_name.py``), each opening with what it does.

Importing this package registers every handler in ``registry.HANDLERS``.  Handlers are thin:
read the request, call broker state, build the response.
"""

from mockbroker.handlers import (
    k00_produce,
    k01_fetch,
    k02_list_offsets,
    k03_metadata,
    k18_api_versions,
    k22_init_producer_id,
)

__all__ = [
    "k00_produce",
    "k01_fetch",
    "k02_list_offsets",
    "k03_metadata",
    "k18_api_versions",
    "k22_init_producer_id",
]
