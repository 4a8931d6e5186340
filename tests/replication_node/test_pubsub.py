"""PUBLISH across replication, as Redis propagates it (PROPAGATE_REPL): a primary's PUBLISH
reaches subscribers on its replicas and on theirs (it is in every backlog), is never in an
AOF (the primary's or a replica's), and WAIT after it waits for replicas to have it. A
replica restarted from its AOF resumes at the primary's offset with a partial resync, its
PUBLISHes included. A PUBLISH sent to a replica is delivered there only."""

from __future__ import annotations

import glob
import os
import re

from tests.conformance.harness import RawConnection
from tests.conftest import Server
from tests.replication_node.nodes import digest, offset, raw_client, start_node, stat, wait_synced, wait_until


def _aof_bytes(node: Server) -> bytes:
    data = b""
    for path in sorted(glob.glob(os.path.join(node.dir, "appendonlydir", "*.incr.aof"))):
        with open(path, "rb") as f:
            data += f.read()
    return data


def _message(channel: bytes, payload: bytes) -> bytes:
    return b"*3\r\n$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (len(channel), channel, len(payload), payload)


def _chain(started: list[Server], *flags: str) -> tuple[Server, Server, Server]:
    """A primary, its replica and the replica's replica, in sync."""
    primary = start_node(*flags)
    started.append(primary)
    replica = start_node(*flags, replicaof=primary)
    started.append(replica)
    chained = start_node(replicaof=replica)
    started.append(chained)
    wait_synced(primary, replica)
    wait_synced(replica, chained)
    return primary, replica, chained


def test_a_primary_publish_reaches_replicas_and_their_replicas_but_no_aof(started: list[Server]) -> None:
    primary, replica, chained = _chain(started, "--appendonly", "yes")
    on_primary, on_replica, on_chained = RawConnection(primary.port), RawConnection(replica.port), RawConnection(chained.port)
    on_primary.call("SUBSCRIBE", "news")
    on_replica.call("SUBSCRIBE", "news")
    on_chained.call("HELLO", "3")
    assert on_chained.call("PSUBSCRIBE", "n*") == b">3\r\n$10\r\npsubscribe\r\n$2\r\nn*\r\n:1\r\n"
    before = offset(primary)
    with raw_client(primary) as c:
        c.execute_command("XADD", "s", "*", "f", "v")
        # The primary counts its own subscribers only, as Redis does.
        assert c.execute_command("PUBLISH", "news", "hello") == 1
        assert c.execute_command("WAIT", 1, 10_000) == 1
        assert c.execute_command("WAITAOF", 1, 1, 10_000) == [1, 1]
    assert offset(primary) > before
    assert on_primary.read_reply() == _message(b"news", b"hello")
    assert on_replica.read_reply() == _message(b"news", b"hello")
    assert on_chained.read_reply() == b">4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$5\r\nhello\r\n"
    wait_synced(primary, replica)
    wait_synced(replica, chained)
    for node in (primary, replica):
        aof = _aof_bytes(node)
        assert b"XADD" in aof and b"PUBLISH" not in aof and b"#OFFSET:" in aof


def test_a_replica_restarted_from_its_aof_resumes_partially_after_publishes(started: list[Server]) -> None:
    primary = start_node()
    started.append(primary)
    replica = start_node("--appendonly", "yes", replicaof=primary)
    started.append(replica)
    with raw_client(primary) as c:
        for i in range(20):
            c.execute_command("XADD", "s", "*", "i", i)
            c.execute_command("PUBLISH", "news", f"m{i}")
        c.execute_command("PUBLISH", "news", "last")  # the log ends with a PUBLISH
        assert c.execute_command("WAITAOF", 0, 1, 10_000) == [0, 1]
    at_stop = wait_synced(primary, replica)
    assert replica.stop() == 0
    full, partial = stat(primary, "sync_full"), stat(primary, "sync_partial_ok")
    restarted = start_node("--appendonly", "yes", replicaof=primary, dir=replica.dir)
    started.append(restarted)
    wait_synced(primary, restarted)
    # Its AOF gave it the primary's offset, the PUBLISHes at its end included, so nothing
    # was sent again.
    loaded = re.findall(r"DB loaded from disk: .* offset=(\d+)\)", restarted.log)
    assert loaded and int(loaded[-1]) == at_stop  # the log is the first run's too
    assert (stat(primary, "sync_full"), stat(primary, "sync_partial_ok")) == (full, partial + 1)
    assert digest(restarted) == digest(primary)
    subscriber = RawConnection(restarted.port)
    subscriber.call("SUBSCRIBE", "news")
    with raw_client(primary) as c:
        c.execute_command("PUBLISH", "news", "after")
    assert subscriber.read_reply() == _message(b"news", b"after")


def test_a_publish_on_a_replica_is_delivered_there_only(started: list[Server]) -> None:
    primary, replica, chained = _chain(started)
    on_primary, on_replica, on_chained = RawConnection(primary.port), RawConnection(replica.port), RawConnection(chained.port)
    for conn in (on_primary, on_replica, on_chained):
        conn.call("SUBSCRIBE", "local")
    before = offset(replica)
    with raw_client(replica) as c:
        assert c.execute_command("PUBLISH", "local", "here") == 1
    assert on_replica.read_reply() == _message(b"local", b"here")
    # Neither the primary nor the replica's own replica gets it: a marker published on the
    # primary afterwards is the next thing each of them reads.
    with raw_client(primary) as c:
        c.execute_command("PUBLISH", "local", "marker")
    assert on_primary.read_reply() == _message(b"local", b"marker")
    assert on_chained.read_reply() == _message(b"local", b"marker")
    assert on_replica.read_reply() == _message(b"local", b"marker")
    wait_until(lambda: offset(replica) == offset(primary), "the replica to follow the primary")
    assert offset(replica) > before
