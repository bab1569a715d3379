"""What `mockbroker serve` imports before it has answered its first Metadata, and its first Produce.

Process start to the first Metadata answer is a benchmark target (<= 150 ms); Python's and asyncio's
own imports take most of it.  Libraries only some brokers need load on first use: the compression
codecs (first compressed batch), hashlib/hmac (first SASL user), uuid (the broker makes its ids from
os.urandom); fault rules (random, dataclasses: the first rule added), json (the journal's first
export); so do the group and transaction coordinators, SASL users, log directories, reassignments,
dynamic config layers, fetch sessions and the legacy message formats.  argparse is told the
terminal's width (else it imports shutil, with bz2 and lzma), and listening sockets for literal
addresses are bound without the idna codec.  (pathlib is left
out: setuptools' default editable-install finder imports it at interpreter start; `make` installs
without it.)  The first Produce loads its CRC-32C function: mockbroker's own (``_speedups.crc32c``)
where the CPU folds with VPCLMULQDQ, else the crc32c package's extension module without the package's
``__init__``, which imports importlib.metadata (~15 ms the first produce waited for).

Each test runs the command's own ``main`` in a fresh interpreter, sends its requests, stops it and
reads the modules it had loaded by then (stopping adds none of these), and fails naming any of them
that came back.  They run with the warm-up off (MOCKBROKER_WARM_UP=0: after the first answer it
loads what the usual requests need, mockbroker/server/warm_up.py); the last test runs it on.
"""

from __future__ import annotations

import ast
import os
import socket
import struct
import subprocess
import sys
import time

from mockbroker import records as rec
from mockbroker.protocol import api
from mockbroker.records.crc import _folding_crc32c
from tests.broker.wire import produce_body

NOT_FOR_METADATA = ("cramjam", "lz4.frame", "zstandard", "hashlib", "hmac", "uuid",
                    "mockbroker.server.sasl", "mockbroker.handlers.k00_produce",
                    # coordinators and admin state made on first use (ClusterState), old formats
                    "mockbroker.state.groups", "mockbroker.state.consumer_groups", "mockbroker.state.transactions",
                    "mockbroker.state.credentials", "mockbroker.state.reassignments", "mockbroker.state.log_admin",
                    "mockbroker.state.config_admin", "mockbroker.state.fetch_sessions", "mockbroker.records.legacy",
                    "mockbroker.records.convert",
                    "mockbroker.faults.rules", "random", "dataclasses", "json", "shutil", "encodings.idna")
NOT_FOR_PRODUCE = ("crc32c", "importlib.metadata", "cramjam", "lz4.frame", "zstandard", "hashlib", "uuid")
#: the module of the CRC-32C function a broker here loads for its first Produce (see records/crc.py)
CRC_MODULE = "mockbroker.native._speedups" if _folding_crc32c() is not None else "crc32c._crc32c"


def _metadata_v1_all_topics() -> bytes:
    client = b"start-test"
    body = struct.pack(">hhih", 3, 1, 7, len(client)) + client + struct.pack(">i", -1)
    return struct.pack(">i", len(body)) + body


def _produce_one_record() -> bytes:
    batch = rec.build_batch([(None, b"value", [], int(time.time() * 1000))])
    return api.to_bytes(api.encode_request(0, 9, 8, produce_body(9, "t", 0, batch)))


def _modules_after(*frames: bytes, warm_up: bool = False, pause_s: float = 0.0) -> set[str]:
    """The modules a fresh `mockbroker serve --topic t:1` holds after answering ``frames`` in turn
    (``pause_s`` after the first answer)."""
    script = ("import atexit, sys; atexit.register(lambda: print(sorted(sys.modules), file=sys.stderr)); "
              "from mockbroker.cli import main; "
              "sys.exit(main(['serve', '--port', '0', '--log-level', 'WARNING', '--topic', 't:1']))")
    env = dict(os.environ, MOCKBROKER_WARM_UP="1" if warm_up else "0")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env)
    try:
        line = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert line.startswith("bootstrap.servers="), line
        host, port = line.split("=", 1)[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            for i, frame in enumerate(frames):
                sock.sendall(frame)
                size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
                answer = sock.recv(size, socket.MSG_WAITALL)
                assert answer[:4] == frame[8:12]  # the correlation id: this request was answered
                if i == 0:
                    time.sleep(pause_s)
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=30)
    return set(ast.literal_eval(err.strip().splitlines()[-1]))


def test_serve_answers_metadata_without_loading_what_it_does_not_need() -> None:
    imported = _modules_after(_metadata_v1_all_topics())
    assert "mockbroker.handlers.k03_metadata" in imported  # the report covers the Metadata answer
    early = [name for name in NOT_FOR_METADATA if name in imported]
    assert not early, f"imported before the first Metadata answer (start time): {early}"


def test_the_first_produce_loads_its_crc_function_alone() -> None:
    imported = _modules_after(_metadata_v1_all_topics(), _produce_one_record())
    assert "mockbroker.handlers.k00_produce" in imported and CRC_MODULE in imported
    extra = [name for name in NOT_FOR_PRODUCE if name in imported]
    assert not extra, f"imported by the first uncompressed Produce: {extra}"


def test_the_warm_up_loads_what_the_first_produce_needs() -> None:
    """With the warm-up on, the first Produce after it finds every module it needs already loaded."""
    warmed = _modules_after(_metadata_v1_all_topics(), warm_up=True, pause_s=1.0)
    assert {"mockbroker.handlers.k00_produce", "mockbroker.handlers.k01_fetch", CRC_MODULE} <= warmed
    produced = _modules_after(_metadata_v1_all_topics(), _produce_one_record(), warm_up=True, pause_s=1.0)
    new = sorted(name for name in produced - warmed if name.startswith(("mockbroker", "crc32c")))
    assert not new, f"the first Produce after the warm-up still imported {new}"
    extra = [name for name in NOT_FOR_PRODUCE if name in produced]
    assert not extra, f"the warm-up or the first Produce imported {extra}"
