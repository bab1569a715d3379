"""DescribeLogDirs: v0-5.

Behavior:
- The broker asked answers for itself: each of its log directories (``log.dirs``, default
  /var/lib/mockbroker/broker-<id>) with the replicas it hosts there (all of them for a null topic list,
  else only the partitions named; unknown names are left out, as Kafka does). Topics without a
  matching partition in a directory are left out of it.
- Partition size = the partition log's bytes; offset_lag 0 and is_future_key false (moves between
  directories are instant).
- v3+ top-level error_code 0; v4+ total_bytes = ``mock.log.dir.total.bytes`` and usable_bytes = that
  minus the directory's logs; v5 is_cordoned false.
- An offline directory (``ClusterState.log_dirs.set_offline``) answers KAFKA_STORAGE_ERROR without
  topics and with total/usable -1.
- With ACLs on: DESCRIBE on the cluster, else no results and (v3+) top-level
  CLUSTER_AUTHORIZATION_FAILED, as Kafka.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mockbroker.errors import ErrorCode
from mockbroker.handlers import authz
from mockbroker.handlers.registry import register
from mockbroker.protocol import api

if TYPE_CHECKING:
    from mockbroker.handlers.context import RequestContext
    from mockbroker.protocol.generated.describe_log_dirs_request import DescribeLogDirsRequest

RESP = api.response_module(35)


@register(35, 0, 5)
def handle(ctx: RequestContext, req: DescribeLogDirsRequest) -> Any:
    if not authz.authorize_cluster(ctx, authz.DESCRIBE):
        return RESP.DescribeLogDirsResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED, results=[])
    wanted: dict[str, set[int]] | None = None
    if req.topics is not None:
        wanted = {}
        for t in req.topics:
            wanted.setdefault(t.topic, set()).update(t.partitions)
    reports = ctx.cluster.log_dirs.describe(ctx.broker_id, wanted)
    return RESP.DescribeLogDirsResponse(error_code=0, results=[
        RESP.DescribeLogDirsResult(
            error_code=r.error_code, log_dir=r.path, total_bytes=r.total_bytes, usable_bytes=r.usable_bytes,
            topics=[
                RESP.DescribeLogDirsTopic(name=name, partitions=[
                    RESP.DescribeLogDirsPartition(partition_index=i, partition_size=size, offset_lag=0,
                                                  is_future_key=False)
                    for i, size in parts
                ])
                for name, parts in r.topics.items()
            ])
        for r in reports
    ])
