"""A deleted topic takes its committed offsets with it, from every group, as Kafka's group coordinator
drops them on partition deletion; other topics' offsets, and groups that never met the topic, stay."""

from __future__ import annotations

from mockbroker.state.cluster import ClusterState


def test_deleting_a_topic_drops_its_committed_and_pending_offsets() -> None:
    state = ClusterState({})
    state.create_topic("gone", 2)
    state.create_topic("kept", 1)
    gc = state.groups
    gc.commit("a", "", -1, [("gone", 0, 5, -1, None), ("gone", 1, 6, -1, None), ("kept", 0, 7, -1, "m")])
    gc.commit("b", "", -1, [("kept", 0, 2, -1, None)])
    gc.txn_commit("c", 42, "", -1, [("gone", 0, 9, -1, None), ("kept", 0, 3, -1, None)])
    state.delete_topic("gone")
    assert gc.committed_all("a") == {("kept", 0): (7, -1, "m")}
    assert gc.committed_all("b") == {("kept", 0): (2, -1, None)}
    assert not gc.unstable("c", "gone", 0) and gc.unstable("c", "kept", 0)
    gc.complete_txn("c", 42, commit=True)
    assert gc.committed_all("c") == {("kept", 0): (3, -1, None)}
    state.create_topic("gone", 2)  # re-created under the same name: no offset of the old topic
    assert gc.committed("a", "gone", 0) == (-1, -1, "")


def test_deleting_a_topic_before_any_group_exists_makes_no_coordinator() -> None:
    state = ClusterState({})
    state.create_topic("t", 1)
    state.delete_topic("t")
    assert "groups" not in state.__dict__  # made on first use only
