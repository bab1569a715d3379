"""Property-based round trips for every (api, version, request/response) the codec generates.

encode -> decode gives the same object, decode -> encode gives the same bytes, and the decoder
consumes exactly what the encoder wrote.  Headers and data types are covered too.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mockbroker.protocol import api
from mockbroker.protocol.generated import APIS, OTHERS

from .strategies import message

CASES: list[tuple[str, int]] = []
for _key, (_name, _req, _resp, (_lo, _hi), _flex) in sorted(APIS.items()):
    for _v in range(_lo, _hi + 1):
        CASES.append((_req, _v))
        CASES.append((_resp, _v))
for _name in sorted(OTHERS):
    _mod = api.module(_name)
    for _v in range(_mod.VERSIONS[0], _mod.VERSIONS[1] + 1):
        CASES.append((_name, _v))

COVERED: set[tuple[str, int]] = set()


def _flexible(mod, version: int) -> bool:
    return mod.FLEXIBLE is not None and mod.FLEXIBLE[0] <= version <= mod.FLEXIBLE[1]


@pytest.mark.parametrize(("mod_name", "version"), CASES, ids=[f"{m}-v{v}" for m, v in CASES])
@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
@given(data=st.data())
def test_round_trip(mod_name: str, version: int, data: st.DataObject) -> None:
    mod = api.module(mod_name)
    obj = data.draw(message(mod.ROOT, version, _flexible(mod, version)))
    out = bytearray()
    holes: list = []
    api.encode_message(mod, version, obj, out, holes)
    wire = b"".join(api.assemble(out, holes)) if holes else bytes(out)
    decoded, pos = api.decode_message(mod, version, memoryview(wire))
    assert pos == len(wire)
    assert decoded == obj
    again = bytearray()
    api.encode_message(mod, version, decoded, again, [])
    assert bytes(again) == wire
    COVERED.add((mod_name, version))


def test_case_count_matches_generated_tables() -> None:
    expected = sum(2 * (hi - lo + 1) for _n, _a, _b, (lo, hi), _f in APIS.values())
    assert len([c for c in CASES if c[0] not in OTHERS]) == expected
    assert len(APIS) >= 70  # every API whose listeners include "broker", old versions included
