"""Replicas converge: after a random workload of every stream write on the primary (consumer
groups, claims of deleted entries, approximate trims, transactions, other databases), once the
offsets match, DEBUG DIGEST is the same on the primary and both replicas; a replica that joins
afterwards gets the same state through a full sync and keeps following."""

from __future__ import annotations

import pytest

from tests.conftest import Server
from tests.replication_node.nodes import digest, info, raw_client, start_node, stat, stopped, wait_synced, wait_until
from tests.replication_node.workload import KEYS, Workload


def _assert_same_state(primary: Server, *replicas: Server) -> None:
    expected = digest(primary)
    assert expected != b"0" * 40, "the workload left data"
    for replica in replicas:
        assert digest(replica) == expected, f"replica {replica.port} diverged"
    # Group details (last-delivered-id, entries-read, lag, PELs) are part of the digest; XINFO
    # shows a mismatch legibly should the digest ever disagree.
    with raw_client(primary) as c:
        shown = {k: _deterministic(c.execute_command("XINFO", "STREAM", k, "FULL")) for k in KEYS if c.exists(k)}
    for replica in replicas:
        with raw_client(replica) as c:
            assert {k: _deterministic(c.execute_command("XINFO", "STREAM", k, "FULL")) for k in shown} == shown


# A consumer's seen-time and active-time are the clock of the node that ran the command (as in
# Redis, where a replica stamps them when it applies the XCLAIM): not part of the digest.
_LOCAL_CLOCK_FIELDS = {b"seen-time", b"active-time"}


def _deterministic(value: object) -> object:
    if isinstance(value, dict):
        return {k: _deterministic(v) for k, v in value.items() if k not in _LOCAL_CLOCK_FIELDS}
    if isinstance(value, list):
        kept: list[object] = []
        skip = False
        for item in value:
            if skip:
                skip = False
            elif isinstance(item, bytes) and item in _LOCAL_CLOCK_FIELDS:
                skip = True  # a flat RESP2 map: the name and its value go
            else:
                kept.append(_deterministic(item))
        return kept
    return value


@pytest.mark.parametrize("seed", [1, 2])
def test_random_stream_workload_converges_on_both_replicas(trio: tuple[Server, Server, Server], seed: int) -> None:
    primary, a, b = trio
    with raw_client(primary) as c, raw_client(primary, db=3) as other_db:
        work = Workload(c, seed)
        for round_ in range(8):
            work.run(150)
            # Effects in another database: every unit there names it (SELECT).
            other_db.execute_command("XADD", "elsewhere", "*", "round", round_)
    assert work.commands > 1000 and work.errors < work.commands // 4
    wait_synced(primary, a, b)
    _assert_same_state(primary, a, b)
    with raw_client(a, db=3) as c:
        assert c.execute_command("XLEN", "elsewhere") == 8


def test_a_replica_joining_late_gets_the_state_by_full_sync_then_follows(
    trio: tuple[Server, Server, Server], started: list[Server]
) -> None:
    primary, a, b = trio
    with raw_client(primary) as c:
        Workload(c, 7).run(600)
        full_before = stat(primary, "sync_full")
        late = start_node(replicaof=primary)
        started.append(late)
        wait_synced(primary, late)
        assert stat(primary, "sync_full") == full_before + 1
        Workload(c, 8).run(300)
    wait_synced(primary, a, b, late)
    _assert_same_state(primary, a, b, late)
    assert info(late)["master_replid"] == info(primary)["master_replid"]


def test_a_primary_records_its_backlog_from_the_first_replica_on(started: list[Server]) -> None:
    """As Redis creates its backlog when the first replica syncs: before that the offset moves
    but no history is kept (a replica can only fully sync); from then on, it is kept, and a
    replica that loses its link resumes partially."""
    primary = start_node()
    started.append(primary)
    with raw_client(primary) as c:
        Workload(c, 3).run(200)
        before = info(primary)
        assert int(before["master_repl_offset"]) > 0
        assert (before["repl_backlog_active"], before["repl_backlog_histlen"]) == ("0", "0")
        replica = start_node(replicaof=primary)
        started.append(replica)
        wait_synced(primary, replica)
        assert stat(primary, "sync_full") == 1
        assert info(replica)["master_repl_offset"] == before["master_repl_offset"]
        Workload(c, 4).run(200)
    after = info(primary)
    assert after["repl_backlog_active"] == "1"
    assert int(after["repl_backlog_histlen"]) == int(after["master_repl_offset"]) - int(before["master_repl_offset"])
    wait_synced(primary, replica)
    _assert_same_state(primary, replica)
    with stopped(replica):
        wait_until(lambda: info(primary)["connected_slaves"] == "0", "the primary to drop the frozen replica")
    # Continued, the replica still sees its old link up at the same offset until it finds it
    # dead: only its reconnection says it resumed (wait_synced alone could return before).
    wait_until(lambda: stat(primary, "sync_partial_ok") + stat(primary, "sync_full") > 1, "the replica to reconnect")
    wait_synced(primary, replica)
    assert (stat(primary, "sync_full"), stat(primary, "sync_partial_ok")) == (1, 1)
    _assert_same_state(primary, replica)
