"""Promotion and re-pointing: REPLICAOF NO ONE starts a new history that keeps the old one
as replid2, so the old primary's other replicas continue partially; group state is replicated
exactly (Redis issue #5433); an old primary with a divergent tail loses it through a full
sync; clients blocked on a primary that becomes a replica are told so."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import redis

from tests.conftest import Server
from tests.replication_node.nodes import digest, info, raw_client, start_node, stat, wait_synced, wait_until
from tests.replication_node.workload import Workload

UNBLOCKED = "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"


def test_acknowledged_entries_are_not_redelivered_after_a_replica_is_promoted(trio: tuple[Server, Server, Server]) -> None:
    # Redis issue #5433: a promoted replica must know the group's last-delivered-id,
    # entries-read and PEL, or `>` re-delivers what consumers already processed.
    primary, a, _ = trio
    with raw_client(primary) as c:
        ids = [c.execute_command("XADD", "jobs", "*", "n", i) for i in range(5)]
        c.execute_command("XGROUP", "CREATE", "jobs", "workers", "0")
        delivered = c.execute_command("XREADGROUP", "GROUP", "workers", "w1", "COUNT", 3, "STREAMS", "jobs", ">")
        assert [e[0] for e in delivered[0][1]] == ids[:3]
        assert c.execute_command("XACK", "jobs", "workers", *ids[:3]) == 3
        c.execute_command("XREADGROUP", "GROUP", "workers", "w1", "COUNT", 1, "STREAMS", "jobs", ">")
        groups_before = c.execute_command("XINFO", "GROUPS", "jobs")
    wait_synced(primary, a)
    with raw_client(a) as c:
        c.execute_command("REPLICAOF", "NO", "ONE")
        assert c.execute_command("XINFO", "GROUPS", "jobs") == groups_before  # last id, entries-read, lag
        reply = c.execute_command("XREADGROUP", "GROUP", "workers", "w2", "STREAMS", "jobs", ">")
        assert [e[0] for e in reply[0][1]] == ids[4:], "only the never-delivered entry"
        pending = c.execute_command("XPENDING", "jobs", "workers", "-", "+", 10)
        assert [(p[0], p[1]) for p in pending] == [(ids[3], b"w1"), (ids[4], b"w2")]


def test_a_replica_repointed_to_the_promoted_one_resumes_partially_and_the_old_primary_loses_its_tail(
    trio: tuple[Server, Server, Server],
) -> None:
    primary, a, b = trio
    with raw_client(primary) as c:
        Workload(c, 11).run(300)
    switch = wait_synced(primary, a, b)
    old_replid = info(primary)["master_replid"]
    with raw_client(a) as c:
        assert c.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
    promoted = info(a)
    assert promoted["role"] == "master"
    assert promoted["master_replid"] != old_replid
    assert (promoted["master_replid2"], int(promoted["second_repl_offset"])) == (old_replid, switch + 1)

    full, partial = stat(a, "sync_full"), stat(a, "sync_partial_ok")
    with raw_client(b) as c:
        assert c.execute_command("REPLICAOF", "127.0.0.1", a.port) == b"OK"
    with raw_client(a) as c:
        Workload(c, 12).run(100)  # the new primary's writes reach the re-pointed replica
    wait_synced(a, b)
    assert (stat(a, "sync_full"), stat(a, "sync_partial_ok")) == (full, partial + 1)
    assert info(b)["master_replid"] == info(a)["master_replid"]

    # The old primary accepted writes no one replicated: re-pointed, it is past the switch
    # point of the new history, so it takes a full sync and those writes are gone.
    with raw_client(primary) as c:
        lost = c.execute_command("XADD", "divergent", "*", "lost", "yes")
        assert lost
        assert c.execute_command("REPLICAOF", "127.0.0.1", a.port) == b"OK"
    wait_synced(a, b, primary)
    assert stat(a, "sync_full") == full + 1
    with raw_client(primary) as c:
        assert c.execute_command("EXISTS", "divergent") == 0
    assert digest(primary) == digest(a) == digest(b)


def test_an_old_primary_without_divergent_writes_rejoins_partially(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    with raw_client(primary) as c:
        c.execute_command("XADD", "s", "*", "f", "v")
    wait_synced(primary, a, b)
    with raw_client(a) as c:
        c.execute_command("REPLICAOF", "NO", "ONE")
    full, partial = stat(a, "sync_full"), stat(a, "sync_partial_ok")
    for node in (primary, b):
        with raw_client(node) as c:
            c.execute_command("REPLICAOF", "127.0.0.1", a.port)
    with raw_client(a) as c:
        c.execute_command("XADD", "s", "*", "f", "after")
    wait_synced(a, primary, b)
    assert (stat(a, "sync_full"), stat(a, "sync_partial_ok")) == (full, partial + 2)
    assert digest(primary) == digest(a) == digest(b)


def test_clients_blocked_on_a_primary_that_becomes_a_replica_get_unblocked_errors(
    trio: tuple[Server, Server, Server],
) -> None:
    primary, a, _ = trio
    results: dict[str, object] = {}

    def blocked(name: str, *command: object) -> None:
        with raw_client(primary) as c:
            try:
                results[name] = c.execute_command(*command)
            except redis.ResponseError as exc:
                results[name] = exc

    with raw_client(a) as c:
        c.execute_command("REPLICAOF", "NO", "ONE")
    threads = [
        threading.Thread(target=blocked, args=("xread", "XREAD", "BLOCK", 0, "STREAMS", "s", "$")),
        threading.Thread(target=blocked, args=("wait", "WAIT", 5, 0)),
    ]
    for t in threads:
        t.start()
    wait_until(lambda: int(info(primary, "clients")["blocked_clients"]) == 2, "two blocked clients")
    with raw_client(primary) as c:
        assert c.execute_command("REPLICAOF", "127.0.0.1", a.port) == b"OK"
    for t in threads:
        t.join(10)
    assert all(str(results[name]) == UNBLOCKED for name in ("xread", "wait")), results


def test_an_old_primary_with_an_aof_keeps_a_correct_aof_after_losing_its_tail(started: list[Server]) -> None:
    # The full sync takes the old primary back to a lower offset than its own log reached;
    # its AOF must then describe the new history, so a restart comes back with exactly it.
    old = start_node("--appendonly", "yes", "--appendfsync", "always")
    started.append(old)
    new = start_node(replicaof=old)
    started.append(new)
    with raw_client(old) as c:
        Workload(c, 21).run(100)
    wait_synced(old, new)
    with raw_client(new) as c:
        c.execute_command("REPLICAOF", "NO", "ONE")
    with raw_client(old) as c:
        Workload(c, 22).run(300)  # the divergent tail: longer than anything the new primary has
        assert c.execute_command("REPLICAOF", "127.0.0.1", new.port) == b"OK"
    wait_synced(new, old)
    with raw_client(old) as c:
        c.execute_command("REPLICAOF", "NO", "ONE")
        c.execute_command("XADD", "after", "*", "f", "v")
        assert c.execute_command("WAITAOF", 1, 0, 5000) == [1, 0]
    expected = digest(old)
    assert old.stop() == 0
    restarted = start_node("--appendonly", "yes", dir=old.dir)
    started.append(restarted)
    assert digest(restarted) == expected


def test_a_promoted_replica_killed_at_once_restarts_with_the_promoted_history(started: list[Server]) -> None:
    # The new id is on disk (a new AOF incr file's manifest line) before REPLICAOF NO ONE
    # returns: a crash right after the promotion restarts with the promoted history as
    # replid2, not the old primary's id, which the old primary's other replicas could
    # otherwise use to "continue" across the writes accepted after the promotion.
    primary, replica = _primary_and_synced_aof_replica(started, 23)
    with raw_client(replica) as c:
        assert c.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        c.execute_command("XADD", "after", "*", "f", "v")
    promoted = info(replica)
    assert promoted["master_replid"] != info(primary)["master_replid"]
    _assert_killed_and_restarted_with(started, replica, promoted)


def test_a_promotion_while_the_aof_is_rewritten_keeps_its_id_past_the_rewrite(started: list[Server]) -> None:
    # The promotion's record lands in an incr file the rewrite's base (taken before it) does
    # not cover: after the rewrite the record still names the end's identity, once.
    # Enough keys that the rewrite child takes ~0.1 s.
    _, replica = _primary_and_synced_aof_replica(started, 24, filler_keys=50_000)
    with raw_client(replica) as c:
        assert c.execute_command("BGREWRITEAOF") == b"Background append only file rewriting started"
        children = Path(f"/proc/{replica.proc.pid}/task/{replica.proc.pid}/children").read_text().split()
        assert len(children) == 1
        child = int(children[0])
        os.kill(child, signal.SIGSTOP)  # the rewrite stays in progress while the id changes
        try:
            # Stopped, not already done: writing 50,000 keys outlasts this round trip.
            assert wait_until(lambda: _stopped_or_exited(child), "the rewrite child to stop") == "T"
            assert c.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
            c.execute_command("XADD", "after", "*", "f", "v")
        finally:
            os.kill(child, signal.SIGCONT)
    _wait_rewrites_done(replica, 2)
    promoted = info(replica)
    manifest = Path(replica.dir, "appendonlydir", "appendonly.aof.manifest").read_text()
    assert manifest.count(" replid ") == 1 and f" replid {promoted['master_replid']} " in manifest
    _assert_killed_and_restarted_with(started, replica, promoted)


def _primary_and_synced_aof_replica(started: list[Server], seed: int, filler_keys: int = 0) -> tuple[Server, Server]:
    """A primary with a workload (and `filler_keys` small strings) and a replica with an
    AOF, synced, the base of its full sync written (until then its AOF holds the pre-sync
    data)."""
    primary = start_node()
    started.append(primary)
    replica = start_node("--appendonly", "yes", "--appendfsync", "always", replicaof=primary)
    started.append(replica)
    with raw_client(primary) as c:
        Workload(c, seed).run(100)
        pipe = c.pipeline(transaction=False)
        for i in range(filler_keys):
            pipe.set(f"filler:{i}", "x")
        pipe.execute()
    wait_synced(primary, replica)
    _wait_rewrites_done(replica, 1)
    return primary, replica


def _assert_killed_and_restarted_with(started: list[Server], node: Server, promoted: dict[str, str]) -> None:
    """SIGKILL `node`, restart it on its AOF: it comes back at the promoted history's end,
    keeping that history's id as replid2."""
    node.kill()
    restarted = start_node("--appendonly", "yes", dir=node.dir)
    started.append(restarted)
    after = info(restarted)
    assert after["master_replid2"] == promoted["master_replid"]
    assert after["master_repl_offset"] == promoted["master_repl_offset"]


def _wait_rewrites_done(node: Server, count: int) -> None:
    def done() -> bool:
        persistence = info(node, "persistence")
        return persistence["aof_rewrites"] == str(count) and persistence["aof_rewrite_in_progress"] == "0"

    wait_until(done, f"AOF rewrite number {count} to finish")


def _stopped_or_exited(pid: int) -> str | None:
    """"T" once the process is stopped, "Z" if it exited first, else None (the state letter
    of /proc/PID/stat)."""
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    return state if state in ("T", "Z") else None
