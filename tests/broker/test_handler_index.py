"""The handler index (mockbroker/handlers/index.py) says what every handler module registers.

Handlers load on their key's first request, and ApiVersions advertises the index, so the index must
match the ``@register`` of every ``kNN_*`` module: a new or changed handler fails here with the table to
paste.  Also: a fresh interpreter serving ApiVersions and Metadata loads only the handlers it needed.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap

from mockbroker.handlers import handler_modules, load_all
from mockbroker.handlers.index import HANDLER_INDEX
from mockbroker.handlers.registry import HANDLERS


def test_the_index_matches_every_handler_module() -> None:
    load_all()
    registered = {key: (h.fn.__module__.rsplit(".", 1)[1], h.min_version, h.max_version)
                  for key, h in HANDLERS.items()}
    table = "\n".join(f"    {k}: {v!r}," for k, v in sorted(registered.items())).replace("'", '"')
    assert registered == HANDLER_INDEX, f"mockbroker/handlers/index.py should read:\n{table}"
    assert sorted(module for module, _lo, _hi in HANDLER_INDEX.values()) == handler_modules()


def test_a_fresh_broker_loads_only_the_handlers_it_used() -> None:
    script = textwrap.dedent("""
        import sys
        from confluent_kafka.admin import AdminClient
        from mockbroker.cluster import MockCluster
        with MockCluster(brokers=1, topics={"t": 1}) as cluster:
            AdminClient({"bootstrap.servers": cluster.bootstrap_servers}).list_topics(timeout=10)
            print(sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("mockbroker.handlers.k")))
    """)
    # the warm-up off: after the first answer it loads the usual requests' handlers (server/warm_up.py)
    env = dict(os.environ, MOCKBROKER_WARM_UP="0")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True,
                         env=env)
    loaded = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert "k03_metadata" in loaded and "k18_api_versions" in loaded
    assert "k00_produce" not in loaded and len(loaded) < len(handler_modules()) // 2, loaded
