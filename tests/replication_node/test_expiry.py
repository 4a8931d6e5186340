"""Key expiry across replication, with real nodes: only the primary expires keys and its DELs
reach the replicas; a replica serves a volatile key until its time, then answers as if it
were gone while still holding it (and keeps it through its own restart) until its primary's
DEL arrives; a blocked reader on a replica outlives the stream that expired; a promoted
replica starts expiring keys itself."""

from __future__ import annotations

import threading
import time

import redis

from tests.conftest import Server
from tests.replication_node.nodes import digest, raw_client, start_node, stat, wait_synced, wait_until


def _pair(started: list[Server], *flags: str) -> tuple[Server, Server]:
    primary = start_node()
    started.append(primary)
    replica = start_node(*flags, replicaof=primary)
    started.append(replica)
    wait_synced(primary, replica)
    return primary, replica


def test_replica_serves_a_volatile_key_until_its_time_then_waits_for_the_primarys_del(started: list[Server]) -> None:
    primary, replica = _pair(started)
    with raw_client(primary) as p, raw_client(replica) as r:
        p.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")  # only our reads delete on the primary
        p.execute_command("SET", "k", "v", "PX", 800)
        p.execute_command("XADD", "s", "1-1", "f", "v")
        p.execute_command("XGROUP", "CREATE", "s", "g", "0")
        p.execute_command("PEXPIRE", "s", 800)
        p.execute_command("SET", "keep", "v")
        wait_synced(primary, replica)
        assert r.execute_command("GET", "k") == b"v"
        assert 0 < r.execute_command("PTTL", "k") <= 800
        assert r.execute_command("XLEN", "s") == 1
        # Both deadlines passed (the stream's was set a few commands after the key's).
        wait_until(lambda: r.execute_command("EXISTS", "k", "s") == 0, "the keys' time to pass on the replica")
        assert r.execute_command("GET", "k") is None
        assert r.execute_command("EXISTS", "k", "s", "keep") == 1
        assert r.execute_command("TTL", "k") == -2
        assert r.execute_command("XLEN", "s") == 0
        assert r.execute_command("KEYS", "*") == [b"keep"]
        assert r.execute_command("SCAN", "0")[1] == [b"keep"]
        assert r.execute_command("DBSIZE") == 3  # still held: the replica deletes nothing itself
        assert stat(replica, "expired_keys") == 0
        assert p.execute_command("DBSIZE") == 3
        assert p.execute_command("GET", "k") is None  # the primary deletes it, logging a DEL
        assert p.execute_command("EXISTS", "s") == 0  # and the stream, with its group
        wait_synced(primary, replica)
        assert r.execute_command("DBSIZE") == 1
        assert digest(primary) == digest(replica)
        p.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_active_expiry_on_the_primary_reaches_its_replicas(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    with raw_client(primary) as p:
        pipe = p.pipeline(transaction=False)
        for i in range(500):
            pipe.execute_command("SET", f"k{i}", "v", "PX", 50 + i % 100)
        pipe.execute_command("XADD", "s", "1-1", "f", "v")
        pipe.execute_command("PEXPIRE", "s", 100)
        pipe.execute_command("SET", "keep", "v", "EX", 3600)
        pipe.execute()
    for node in (primary, a, b):
        wait_until(lambda node=node: raw_client(node).execute_command("DBSIZE") == 1, "every expired key deleted")
    assert stat(primary, "expired_keys") == 501
    assert stat(a, "expired_keys") == stat(b, "expired_keys") == 0
    wait_synced(primary, a, b)
    assert digest(primary) == digest(a) == digest(b)
    assert 3_590 < raw_client(a).execute_command("TTL", "keep") <= 3600


def test_a_restarted_replica_keeps_expired_keys_until_its_primarys_del(started: list[Server]) -> None:
    primary, replica = _pair(started, "--appendonly", "yes")
    with raw_client(primary) as p:
        p.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        p.execute_command("SET", "k", "v", "PX", 300)
        p.execute_command("SET", "keep", "v")
    wait_synced(primary, replica)
    replica.stop()
    time.sleep(0.4)
    restarted = start_node("--appendonly", "yes", replicaof=primary, port=replica.port, dir=replica.dir)
    started.append(restarted)
    wait_synced(primary, restarted)
    with raw_client(restarted) as r, raw_client(primary) as p:
        assert r.execute_command("DBSIZE") == 2  # loaded as it was: a replica expires nothing
        assert r.execute_command("GET", "k") is None  # but its clients see the key gone
        assert int(r.execute_command("INFO", "persistence").split(b"rdb_last_load_keys_expired:")[1].split(b"\r")[0]) == 0
        p.execute_command("EXISTS", "k")  # the primary finds it expired: DEL
        wait_synced(primary, restarted)
        assert r.execute_command("DBSIZE") == 1
        p.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "1")


def test_a_blocked_reader_on_a_replica_outlives_the_stream_that_expired(started: list[Server]) -> None:
    primary, replica = _pair(started)
    with raw_client(primary) as p:
        p.execute_command("XADD", "s", "5-1", "f", "v")
        p.execute_command("PEXPIRE", "s", 300)
    wait_synced(primary, replica)
    got: list[object] = []

    def read() -> None:
        with raw_client(replica, socket_timeout=15) as r:
            got.append(r.execute_command("XREAD", "BLOCK", "10000", "STREAMS", "s", "$"))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    wait_until(lambda: int(raw_client(replica).execute_command("INFO", "clients").split(b"blocked_clients:")[1].split(b"\r")[0]) == 1,
               "the reader to block on the replica")
    wait_until(lambda: raw_client(replica).execute_command("DBSIZE") == 0, "the primary's DEL on the replica")
    assert not got  # the deletion does not answer the reader
    with raw_client(primary) as p:
        p.execute_command("XADD", "s", "6-1", "new", "stream")
    reader.join(15)
    assert got == [[[b"s", [[b"6-1", [b"new", b"stream"]]]]]]


def test_a_promoted_replica_expires_keys_itself(started: list[Server]) -> None:
    primary, replica = _pair(started)
    with raw_client(primary) as p:
        p.execute_command("DEBUG", "SET-ACTIVE-EXPIRE", "0")
        for i in range(20):
            p.execute_command("SET", f"k{i}", "v", "PX", 100)
    wait_synced(primary, replica)
    time.sleep(0.15)
    with raw_client(replica) as r:
        assert r.execute_command("DBSIZE") == 20  # logically expired, held for the primary's DEL
        assert r.execute_command("REPLICAOF", "NO", "ONE") == b"OK"
        wait_until(lambda: r.execute_command("DBSIZE") == 0, "the new primary's active expiry")
        assert stat(replica, "expired_keys") == 20
    primary.stop()


def test_expiry_commands_are_refused_on_replicas(started: list[Server]) -> None:
    primary, replica = _pair(started)
    with raw_client(primary) as p:
        p.execute_command("SET", "k", "v")
    wait_synced(primary, replica)
    client = redis.Redis(port=replica.port)
    for args in (("EXPIRE", "k", "10"), ("PERSIST", "k"), ("GETEX", "k", "EX", "1"), ("SETEX", "k", "1", "v"),
                 ("COPY", "k", "x"), ("MOVE", "k", "1")):
        try:
            client.execute_command(*args)
        except redis.ReadOnlyError:
            continue
        raise AssertionError(f"{args} was accepted by a replica")
    assert client.execute_command("TTL", "k") == -1
    client.close()
