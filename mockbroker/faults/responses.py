"""Answers carrying an injected error code, built without handling the request (so nothing changes).

Partitioned APIs (Produce, Fetch, ListOffsets, Metadata, OffsetCommit, TxnOffsetCommit,
OffsetForLeaderEpoch, AddPartitionsToTxn before v4, DescribeGroups) mirror the request's topics and
partitions, giving the error to those the rule names (``only``; None = all) and, for the others, an
empty answer (Fetch: no records this time) so the client simply asks again.  Every other API with a
top-level error code gets it there.  :func:`supports` says whether an API can carry an injected error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mockbroker.protocol import api

Only = dict[str, set[int]] | None
Builder = Callable[[Any, Any, int, Only, Any], Any]


def _code(code: int, only: Only, topic: str, partition: int | None) -> int:
    if only is None:
        return code
    parts = only.get(topic)
    if parts is None:
        return 0
    return code if not parts or partition is None or partition in parts else 0


def _produce(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    return resp.ProduceResponse(responses=[
        resp.TopicProduceResponse(name=t.name, topic_id=t.topic_id, partition_responses=[
            resp.PartitionProduceResponse(index=p.index, error_code=_code(code, only, t.name, p.index), base_offset=-1,
                                          log_append_time_ms=-1, log_start_offset=-1)
            for p in t.partition_data])
        for t in req.topic_data])


def _fetch(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    by_id = ctx.cluster.topics_by_id
    topics = []
    for t in req.topics:
        name = t.topic or (by_id[t.topic_id].name if t.topic_id in by_id else "")
        topics.append(resp.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=[
            resp.PartitionData(partition_index=p.partition, error_code=_code(code, only, name, p.partition),
                               high_watermark=-1, last_stable_offset=-1, log_start_offset=-1, records=b"",
                               aborted_transactions=None)
            for p in t.partitions]))
    return resp.FetchResponse(error_code=0, session_id=0, responses=topics)


def _list_offsets(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    return resp.ListOffsetsResponse(topics=[
        resp.ListOffsetsTopicResponse(name=t.name, partitions=[
            resp.ListOffsetsPartitionResponse(partition_index=p.partition_index, timestamp=-1, offset=-1,
                                              error_code=_code(code, only, t.name, p.partition_index))
            for p in t.partitions])
        for t in req.topics])


def _metadata(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    cluster = ctx.cluster
    if req.topics is None:
        wanted = [(name, cluster.topics[name].topic_id) for name in sorted(cluster.topics)]
    else:
        wanted = [(t.name, t.topic_id) for t in req.topics]
    nullable = ctx.api_version >= 12  # a v10-11 request may carry a null name its answer cannot hold
    return resp.MetadataResponse(
        brokers=[resp.MetadataResponseBroker(node_id=b.node_id, host=host, port=port, rack=b.rack)
                 for b in cluster.brokers.values() for host, port in (b.endpoint(ctx.connection.listener),)],
        cluster_id=cluster.cluster_id, controller_id=cluster.controller_id,
        topics=[resp.MetadataResponseTopic(error_code=_code(code, only, n or "", None),
                                           name=n if n is not None or nullable else "", topic_id=topic_id,
                                           partitions=[])
                for n, topic_id in wanted])


def _offset_commit(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    return resp.OffsetCommitResponse(topics=[
        resp.OffsetCommitResponseTopic(name=t.name, topic_id=getattr(t, "topic_id", None), partitions=[
            resp.OffsetCommitResponsePartition(partition_index=p.partition_index,
                                               error_code=_code(code, only, t.name, p.partition_index))
            for p in t.partitions])
        for t in req.topics])


def _txn_offset_commit(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    return resp.TxnOffsetCommitResponse(topics=[
        resp.TxnOffsetCommitResponseTopic(name=t.name, partitions=[
            resp.TxnOffsetCommitResponsePartition(partition_index=p.partition_index,
                                                  error_code=_code(code, only, t.name, p.partition_index))
            for p in t.partitions])
        for t in req.topics])


def _leader_epoch(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    return resp.OffsetForLeaderEpochResponse(topics=[
        resp.OffsetForLeaderTopicResult(topic=t.topic, partitions=[
            resp.EpochEndOffset(partition=p.partition, error_code=_code(code, only, t.topic, p.partition),
                                leader_epoch=-1, end_offset=-1)
            for p in t.partitions])
        for t in req.topics])


def _add_partitions(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    if ctx.api_version >= 4:
        return resp.AddPartitionsToTxnResponse(error_code=code, results_by_transaction=[])
    return resp.AddPartitionsToTxnResponse(results_by_topic_v3_and_below=[
        resp.AddPartitionsToTxnTopicResult(name=t.name, results_by_partition=[
            resp.AddPartitionsToTxnPartitionResult(partition_index=p, partition_error_code=_code(code, only, t.name, p))
            for p in t.partitions])
        for t in req.v3_and_below_topics])


def _describe_groups(resp: Any, req: Any, code: int, only: Only, ctx: Any) -> Any:
    return resp.DescribeGroupsResponse(groups=[
        resp.DescribedGroup(error_code=code, group_id=g, group_state="", protocol_type="", protocol_data="",
                            members=[], authorized_operations=-(2**31))
        for g in req.groups])


BUILDERS: dict[int, Builder] = {0: _produce, 1: _fetch, 2: _list_offsets, 3: _metadata, 8: _offset_commit,
                                15: _describe_groups, 23: _leader_epoch, 24: _add_partitions,
                                28: _txn_offset_commit}
PARTITIONED = frozenset(BUILDERS) - {15}


def supports(api_key: int) -> bool:
    return api_key in BUILDERS or "error_code" in api.response_module(api_key).ROOT.__slots__


def error_response(ctx: Any, body: Any, code: int, only: Only) -> Any:
    """The answer to ``body`` carrying ``code`` (for ``only`` the named partitions, when partitioned)."""
    resp = api.response_module(ctx.api_key)
    builder = BUILDERS.get(ctx.api_key)
    if builder is not None:
        return builder(resp, body, code, only, ctx)
    return resp.ROOT(error_code=code)
