"""What a request is about, read from its decoded body: topics and partitions, group id, transactional id.

Fault rules match on these facts and the request journal records them.  The walk is generic over the
generated message classes: a struct that names a topic (``name``/``topic``, or a topic id) and lists
partitions (ints, or structs with ``partition_index``/``partition``/``index``) contributes them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from mockbroker.faults.journal import PRODUCE_ABOUT
from mockbroker.plain import Slotted
from mockbroker.protocol.runtime import EncodedList, Struct

_PARTITION_LISTS = ("partitions", "partition_data", "partition_indexes", "partition_responses")
_PARTITION_KEYS = ("partition_index", "partition", "index")
_GROUP_KEYS = ("group_id", "key")
_ZERO_UUID = b"\x00" * 16


class Facts(Slotted):
    __slots__ = ("group_ids", "topics", "transactional_id")

    def __init__(self, topics: dict[str, set[int]] | None = None, group_ids: set[str] | None = None,
                 transactional_id: str | None = None) -> None:
        self.topics: dict[str, set[int]] = {} if topics is None else topics  # topic -> partitions (empty: whole topic)
        self.group_ids: set[str] = set() if group_ids is None else group_ids
        self.transactional_id = transactional_id

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.topics:
            out["topics"] = {t: sorted(p) for t, p in sorted(self.topics.items())}
        if self.group_ids:
            out["groups"] = sorted(self.group_ids)
        if self.transactional_id:
            out["transactional_id"] = self.transactional_id
        return out

    def frozen(self) -> tuple[str, tuple[Any, ...]]:
        """:meth:`summary` in the journal's frozen form (nested tuples; see faults/journal.py)."""
        items: list[tuple[str, Any]] = []
        if self.topics:
            items.append(("topics", ("d", tuple((t, ("l", tuple(sorted(p)))) for t, p in sorted(self.topics.items())))))
        if self.group_ids:
            items.append(("groups", ("l", tuple(sorted(self.group_ids)))))
        if self.transactional_id:
            items.append(("transactional_id", self.transactional_id))
        return ("d", tuple(items))


@cache
def _struct_lists(cls: type) -> tuple[str, ...]:
    """The attributes of a generated class that hold lists of structs: the only ones the walk enters
    (the others were read and skipped on every request before)."""
    return tuple(f.attr for f in getattr(cls, "FIELDS", ())
                 if f.kind == "array" and isinstance(f.element, type) and issubclass(f.element, Struct))


@cache
def _scalar_keys(cls: type) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
    """(has group_id, attributes that may list group names, transactional id attributes) of a request
    class: what generic_facts reads besides the walk."""
    attrs = {f.attr for f in getattr(cls, "FIELDS", ())}
    return ("group_id" in attrs, tuple(k for k in ("groups", "groups_names", "group_ids") if k in attrs),
            tuple(k for k in ("transactional_id", "v3_and_below_transactional_id") if k in attrs))


def _topic_name(obj: Struct, topics_by_id: dict[bytes, Any]) -> str | None:
    for key in ("name", "topic", "topic_name"):  # topic_name: the share-group offsets APIs (90-92)
        value = getattr(obj, key, None)
        if isinstance(value, str) and value:
            return value
    topic_id = getattr(obj, "topic_id", None)
    if isinstance(topic_id, bytes) and topic_id != _ZERO_UUID and topic_id in topics_by_id:
        return topics_by_id[topic_id].name  # type: ignore[no-any-return]
    return None


def _partitions(obj: Struct) -> set[int] | None:
    for key in _PARTITION_LISTS:
        items = getattr(obj, key, None)
        if isinstance(items, list):
            out = set()
            for item in items:
                if isinstance(item, int):
                    out.add(item)
                elif isinstance(item, Struct):
                    for pk in _PARTITION_KEYS:
                        value = getattr(item, pk, None)
                        if isinstance(value, int):
                            out.add(value)
                            break
            return out
    return None


def _walk(obj: Struct, facts: Facts, topics_by_id: dict[bytes, Any], depth: int) -> None:
    if depth > 4:
        return
    for slot in _struct_lists(type(obj)):  # type: ignore[arg-type]  # a class is hashable: mypy reads the __hash__ = None its instances have
        value = getattr(obj, slot, None)
        if not isinstance(value, list) or not value or not isinstance(value[0], Struct):
            continue
        for item in value:
            name = _topic_name(item, topics_by_id)
            parts = _partitions(item)
            if name is not None and (parts is not None or slot in ("topics", "topic_data")):
                facts.topics.setdefault(name, set()).update(parts or ())
            else:
                for key in _GROUP_KEYS:
                    group = getattr(item, key, None) if slot == "groups" else None
                    if isinstance(group, str):
                        facts.group_ids.add(group)
                _walk(item, facts, topics_by_id, depth + 1)


Pairs = tuple[tuple[str, tuple[int, ...]], ...]


def _produce_pairs(body: Any, topics_by_id: dict[bytes, Any]) -> Pairs:
    """A Produce's (topic, partitions) pairs as they came; a topic id naming no topic is left out."""
    pairs = []
    for td in body.topic_data:
        name = td.name or _topic_name(td, topics_by_id)
        if name is not None:
            pairs.append((name, tuple([pd.index for pd in td.partition_data])))
    return tuple(pairs)


def _fetch_pairs(body: Any, topics_by_id: dict[bytes, Any]) -> Pairs:
    """A Fetch's (topic, partitions) pairs as they came, its forgotten topics' included."""
    pairs = []
    for t in body.topics:
        name = t.topic or _topic_name(t, topics_by_id)
        if name is not None:
            pairs.append((name, tuple([p.partition for p in t.partitions])))
    for t in body.forgotten_topics_data or ():
        name = t.topic or _topic_name(t, topics_by_id)
        if name is not None:
            pairs.append((name, tuple(t.partitions)))
    return tuple(pairs)


def _metadata_pairs(body: Any, topics_by_id: dict[bytes, Any]) -> Pairs:
    """A Metadata request's topics (by name, or by id from v10), each with no partitions: whole topics."""
    pairs = []
    for t in body.topics or ():
        name = t.name or _topic_name(t, topics_by_id)
        if name is not None:
            pairs.append((name, ()))
    return tuple(pairs)


def _transactional_id(body: Any) -> str | None:
    txn = body.transactional_id
    return txn if isinstance(txn, str) and txn else None


def facts_from_pairs(pairs: Pairs, transactional_id: str | None) -> Facts:
    """Facts from topic and partition pairs (a topic may come more than once)."""
    facts = Facts(transactional_id=transactional_id)
    for name, partitions in pairs:
        facts.topics.setdefault(name, set()).update(partitions)
    return facts


def _produce_facts(body: Any, topics_by_id: dict[bytes, Any]) -> Facts:
    """Produce, the hottest request, without the generic walk (same result: tests/broker/test_facts.py)."""
    return facts_from_pairs(_produce_pairs(body, topics_by_id), _transactional_id(body))


def _fetch_facts(body: Any, topics_by_id: dict[bytes, Any]) -> Facts:
    return facts_from_pairs(_fetch_pairs(body, topics_by_id), None)


def _metadata_facts(body: Any, topics_by_id: dict[bytes, Any]) -> Facts:
    return facts_from_pairs(_metadata_pairs(body, topics_by_id), None)


def _no_facts(body: Any, topics_by_id: dict[bytes, Any]) -> Facts:
    """ApiVersions names nothing; SASL and SCRAM-credential requests name users, not topics: nothing
    for rules or the journal."""
    return Facts()


_FAST = {0: _produce_facts, 1: _fetch_facts, 3: _metadata_facts, 17: _no_facts, 18: _no_facts, 36: _no_facts,
         50: _no_facts, 51: _no_facts}
NOTHING_ABOUT = Facts().frozen()  # what the journal keeps of a request about nothing


def request_facts(api_key: int, body: Struct, topics_by_id: dict[bytes, Any]) -> Facts:
    fast = _FAST.get(api_key)
    if fast is not None:
        return fast(body, topics_by_id)
    return generic_facts(api_key, body, topics_by_id)


def journal_about(api_key: int, body: Struct, topics_by_id: dict[bytes, Any]) -> tuple[str, Any]:
    """What the request journal keeps of a request's facts, in its frozen form.  A Produce or a Fetch
    keeps its topic and partition pairs as they came (the journal merges and sorts them when read: the
    same summary, tests/broker/test_facts.py checks it), which spares the hottest requests the Facts
    object and the sorting."""
    if api_key == 0:
        return (PRODUCE_ABOUT, (_produce_pairs(body, topics_by_id), _transactional_id(body)))
    if api_key == 1:  # Fetch, the next hottest (every long poll answered is one)
        return (PRODUCE_ABOUT, (_fetch_pairs(body, topics_by_id), None))
    if api_key == 3:  # Metadata and ApiVersions: every client's first requests on every connection
        return (PRODUCE_ABOUT, (_metadata_pairs(body, topics_by_id), None))
    if api_key == 18:
        return NOTHING_ABOUT
    return request_facts(api_key, body, topics_by_id).frozen()


def generic_facts(api_key: int, body: Any, topics_by_id: dict[bytes, Any]) -> Facts:
    """Facts from a walk over any generated request."""
    facts = Facts()
    _walk(body, facts, topics_by_id, 0)
    has_group, group_lists, txn_keys = _scalar_keys(type(body))  # type: ignore[arg-type]  # a class is hashable: mypy reads the __hash__ = None its instances have
    if has_group:
        group = body.group_id
        if isinstance(group, str) and group:
            facts.group_ids.add(group)
    for key in group_lists:
        names = getattr(body, key, None)
        if isinstance(names, list) and names and isinstance(names[0], str):
            facts.group_ids.update(names)
    if api_key == 10:  # FindCoordinator names its group or transactional id as a key
        keys = getattr(body, "coordinator_keys", None) or [getattr(body, "key", "")]
        (facts.group_ids if getattr(body, "key_type", 0) == 0 else set()).update(k for k in keys if k)
    for key in txn_keys:
        txn = getattr(body, key, None)
        if isinstance(txn, str) and txn:
            facts.transactional_id = txn
    return facts


def response_error_codes(api_key: int, body: Any) -> list[int]:
    """:func:`error_codes` of an answer, with Produce, Fetch, ApiVersions and Metadata read directly (the
    same list: a test checks)."""
    if api_key == 0:
        return [p.error_code for t in body.responses for p in t.partition_responses if p.error_code]
    if api_key == 1:
        out = [body.error_code] if body.error_code else []
        out += [p.error_code for t in body.responses for p in t.partitions if p.error_code]
        return out
    if api_key == 18:  # its lists (API keys, features) hold no error codes
        return [body.error_code] if body.error_code else []
    if api_key == 3 and type(body.topics) is not EncodedList:  # (an all-topics list keeps its codes itself)
        out = [body.error_code] if body.error_code else []  # brokers hold none; topics, then their partitions
        for topic in body.topics:
            if topic.error_code:
                out.append(topic.error_code)
            if topic.partitions:
                out += _partition_codes(topic.partitions)
        return out
    return error_codes(body)


def _partition_codes(partitions: list[Any]) -> list[int]:
    """A Metadata topic's partitions' error codes, kept with a shared (EncodedList) partition list."""
    if type(partitions) is not EncodedList:
        return [p.error_code for p in partitions if p.error_code]
    key = ("error_codes", 2)  # the key error_codes' walk keeps them under (a topic's partitions are at depth 2)
    found: list[int] | None = partitions.derived.get(key)
    if found is None:
        found = partitions.derived[key] = [p.error_code for p in partitions if p.error_code]
    return found


def error_codes(body: Struct, depth: int = 0) -> list[int]:
    """Every non-zero error code in a response, outermost first."""
    out: list[int] = []
    _codes_into(body, out, depth)
    return out


@cache
def _code_plan(cls: type) -> tuple[bool, tuple[str, ...], tuple[str, ...]]:
    """(has an error_code, attributes holding struct arrays, attributes holding structs) of a class."""
    fields = getattr(cls, "FIELDS", ())
    return (any(f.attr == "error_code" for f in fields), _struct_lists(cls),
            tuple(f.attr for f in fields if f.kind == "struct"))


def _codes_into(body: Any, out: list[int], depth: int) -> None:
    has_code, arrays, structs = _code_plan(type(body))  # type: ignore[arg-type]  # a class is hashable: mypy reads the __hash__ = None its instances have
    if has_code:
        code = body.error_code
        if isinstance(code, int) and code:
            out.append(code)
    if depth >= 5:
        return
    for attr in arrays:
        value = getattr(body, attr, None)
        if not value:
            continue
        if type(value) is EncodedList:  # a cached part of a repeated answer: walk it once
            key = ("error_codes", depth)
            if key not in value.derived:
                found: list[int]
                value.derived[key] = found = []
                for item in value:
                    _codes_into(item, found, depth + 1)
            out.extend(value.derived[key])
        else:
            for item in value:
                _codes_into(item, out, depth + 1)
    for attr in structs:
        value = getattr(body, attr, None)
        if value is not None:
            _codes_into(value, out, depth + 1)
