"""The optional C codec for Fetch (``_fastfetch.c``): the request every consumer sends most, and its answer.

Importing this module gives the codec that encoder for API key 1 (``api.set_response_encoder``):
``encode(body, version, out, holes)`` appends the encoded body (v4-18) to ``out``, leaving record
buffers over ``runtime.HOLE_THRESHOLD`` bytes as holes as the generated writer does, and gives True;
or None ("not the usual answer": tagged fields, a leader hint, a value out of range), and the
generated writer runs and encodes it or names the problem.  Nothing is registered when the extension
was not built or ``MOCKBROKER_PURE_PYTHON`` is set.  In-process, a four-partition answer with one
small batch is framed and encoded (``api.encode_response``) in ~1.0 us instead of ~3.6 us.
``decode(frame, pos, version)`` (``api.set_request_decoder``) reads a FetchRequest body (v4-18) into the
generated classes as their reader would, or gives None (tagged fields, anything malformed) and the
generated reader runs.
``waiter(Encoded, fallback)`` gives ``park``, the long poll of such a fetch in C (fetch_wait.h), and
``wanted_reader(Wanted)`` gives the C reader of a request's partitions into the handler's ``Wanted``, and
``answer_from_logs(wanted, version, correlation_id, broker_id, budget, isolation[, min_bytes, session_id,
states, incremental])`` answers a usual Fetch, with or without a session, straight from the partition
logs, frame and all (fetch_from_logs.h; (None, bytes) while fewer than min_bytes are there; None: the
handler's Python path answers).
``lane`` (fetch_lane.h) is the Fetch lane's C: it decides only what the request's bytes and its
partitions' state say (v4+, no session, every partition known, led here, its offset in range); the
broker and connection state that keeps requests from the lane is decided before it is called, by
handlers/k01_fetch.usual_for (its declaration is the one place to add such a condition).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockbroker import native
from mockbroker.protocol import api
from mockbroker.protocol.generated import fetch_request as _req
from mockbroker.protocol.generated import fetch_response as _resp
from mockbroker.protocol.runtime import HOLE_THRESHOLD, ZERO_UUID

encode: Callable[[Any, int, bytearray, list[Any]], bool | None] | None = None
decode: Callable[[memoryview, int, int], tuple[Any, int] | None] | None = None
answer_from_logs: Callable[..., tuple[list[Any] | None, int] | None] | None = None
_setup_wanted: Callable[[type], None] | None = None
_setup_wait: Callable[[type, Callable[..., None]], None] | None = None
# fetch_lane(frame, version, correlation_id, topics, topics_by_id, broker_id, fetch_max_bytes, about_kind):
# the usual Fetch from its frame (fetch_lane.h), for handlers/k01_fetch.serve; None when not built
lane: Callable[..., tuple[Any, ...] | None] | None = None

# None (the generated codec does everything): not built, MOCKBROKER_PURE_PYTHON set, or an untested Python
_fastfetch = native.load("_fastfetch")
if _fastfetch is not None:
    _fastfetch.setup(_resp.FetchResponse, _resp.FetchableTopicResponse, _resp.PartitionData,
                     _resp.AbortedTransaction, _resp.EpochEndOffset, _resp.LeaderIdAndEpoch, _resp.SnapshotId,
                     HOLE_THRESHOLD)
    encode = _fastfetch.encode_response
    api.set_response_encoder(1, encode)
    _fastfetch.setup_request(_req.FetchRequest, _req.ReplicaState, _req.FetchTopic, _req.FetchPartition,
                             _req.ForgottenTopic, ZERO_UUID)
    decode = _fastfetch.decode_request
    api.set_request_decoder(1, decode)
    answer_from_logs = _fastfetch.answer_from_logs
    _setup_wanted = _fastfetch.setup_wanted
    _setup_wait = _fastfetch.setup_wait
    lane = _fastfetch.fetch_lane


def wanted_reader(wanted: type) -> Callable[[list[Any], dict[Any, Any], int, bool], list[Any] | None] | None:
    """``wanted_from_request(topics, known, broker_id, use_ids)``, which makes the Fetch handler's
    ``wanted`` (instances of the slotted class given) from a request's topics in C, or gives None when
    a topic or partition is not the usual one (fetch_from_logs.h); None when the extension is off."""
    if _setup_wanted is None:
        return None
    _setup_wanted(wanted)
    return _fastfetch.wanted_from_request  # type: ignore[union-attr, no-any-return]  # loaded whenever _setup_wanted is


def waiter(encoded: type, fallback: Callable[..., None]) -> Callable[..., None] | None:
    """``park(ctx, req, wanted, answer, loop, connection, version, correlation_id, broker_id, budget,
    isolation, min_bytes, wait_s)``: the long poll of a fetch ``answer_from_logs`` takes, in C
    (fetch_wait.h), settling ``answer`` with ``encoded(frame)``, or through ``fallback(ctx, req, wanted,
    answer, expired)`` where the partitions stopped being the usual ones; None when the extension is off."""
    if _setup_wait is None:
        return None
    _setup_wait(encoded, fallback)
    return _fastfetch.park  # type: ignore[union-attr, no-any-return]  # loaded whenever _setup_wait is
