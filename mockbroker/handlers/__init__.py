"""Request handlers, one module per API key (``kNN_name.py``), each opening with what it does.

Importing this package registers every handler in ``registry.HANDLERS``.  Handlers are thin:
read the request, call broker state, build the response.
"""

from mockbroker.handlers import (
    k00_produce,
    k01_fetch,
    k02_list_offsets,
    k03_metadata,
    k08_offset_commit,
    k09_offset_fetch,
    k10_find_coordinator,
    k11_join_group,
    k12_heartbeat,
    k13_leave_group,
    k14_sync_group,
    k15_describe_groups,
    k16_list_groups,
    k18_api_versions,
    k19_create_topics,
    k20_delete_topics,
    k22_init_producer_id,
    k23_offset_for_leader_epoch,
    k37_create_partitions,
    k42_delete_groups,
    k60_describe_cluster,
)

__all__ = [
    "k00_produce",
    "k01_fetch",
    "k02_list_offsets",
    "k03_metadata",
    "k08_offset_commit",
    "k09_offset_fetch",
    "k10_find_coordinator",
    "k11_join_group",
    "k12_heartbeat",
    "k13_leave_group",
    "k14_sync_group",
    "k15_describe_groups",
    "k16_list_groups",
    "k18_api_versions",
    "k19_create_topics",
    "k20_delete_topics",
    "k22_init_producer_id",
    "k23_offset_for_leader_epoch",
    "k37_create_partitions",
    "k42_delete_groups",
    "k60_describe_cluster",
]
