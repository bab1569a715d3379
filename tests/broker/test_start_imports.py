"""What `mockbroker serve` imports before it has answered its first Metadata request.

Process start to the first Metadata answer is a benchmark target (<= 150 ms); Python's and asyncio's
own imports take most of it.  Libraries only some brokers need load on first use: the compression
codecs (first compressed batch), hashlib/hmac (first SASL user), uuid (the broker makes its ids from
os.urandom).  (pathlib is left out: setuptools' editable-install finder imports it at
interpreter start in a development venv.)  This test runs the command's own ``main`` in a fresh interpreter, asks it for
Metadata, stops it and reads the modules it had loaded by then (stopping adds none of these), and fails
naming any of them that came back into the start path.
"""

from __future__ import annotations

import ast
import socket
import struct
import subprocess
import sys

LOADED_ON_FIRST_USE = ("cramjam", "lz4.frame", "zstandard", "hashlib", "hmac", "uuid",
                       "mockbroker.server.sasl", "mockbroker.handlers.k00_produce")


def _metadata_v1_all_topics() -> bytes:
    client = b"start-test"
    body = struct.pack(">hhih", 3, 1, 7, len(client)) + client + struct.pack(">i", -1)
    return struct.pack(">i", len(body)) + body


def test_serve_answers_metadata_without_loading_what_it_does_not_need() -> None:
    script = ("import atexit, sys; atexit.register(lambda: print(sorted(sys.modules), file=sys.stderr)); "
              "from mockbroker.cli import main; sys.exit(main(['serve', '--port', '0', '--log-level', 'WARNING']))")
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()  # type: ignore[union-attr]
        assert line.startswith("bootstrap.servers="), line
        host, port = line.split("=", 1)[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(_metadata_v1_all_topics())
            size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
            answer = sock.recv(size, socket.MSG_WAITALL)
        assert struct.unpack_from(">i", answer)[0] == 7  # the correlation id: Metadata was answered
    finally:
        proc.terminate()
        _out, err = proc.communicate(timeout=30)
    imported = set(ast.literal_eval(err.strip().splitlines()[-1]))
    assert "mockbroker.handlers.k03_metadata" in imported  # the report covers the Metadata answer
    early = [name for name in LOADED_ON_FIRST_USE if name in imported]
    assert not early, f"imported before the first Metadata answer (start time): {early}"
