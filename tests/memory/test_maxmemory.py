"""maxmemory with noeviction, as Redis enforces it (server.c processCommand): over the limit,
commands that may add memory get -OOM, and in MULTI every command but EXEC, DISCARD, QUIT and
RESET (EXEC then aborts); reads, deletes and XACK/XDEL/XTRIM still run. The refusals are
compared byte for byte with redis-server's; the rest is Rill's own accounting: what it
accepts before refusing, that the figure falls when data goes, and the node's peak memory."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.conformance.harness import RawConnection
from tests.conftest import Server, start_redis, start_rill
from tests.memory.peak import MB, peak_rss, rss
from tests.replication_node.nodes import digest, start_node, wait_synced

OOM = b"-OOM command not allowed when used memory > 'maxmemory'.\r\n"


def _full(proc: Server) -> Server:
    """proc holding some data, with maxmemory set below what it uses (1 byte)."""
    conn = RawConnection(proc.port)
    conn.call("SET", "k", "v" * 10_000)
    conn.call("XADD", "s", "1-1", "f", "v")
    conn.call("XADD", "s", "1-2", "f", "v")
    conn.call("XGROUP", "CREATE", "s", "g", "0")
    conn.call("XREADGROUP", "GROUP", "g", "c", "COUNT", "1", "STREAMS", "s", ">")
    assert conn.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
    conn.close()
    return proc


@pytest.fixture(params=["redis", "rill"])
def full_server(request: pytest.FixtureRequest) -> Iterator[Server]:
    proc = _full(start_redis() if request.param == "redis" else start_rill())
    yield proc
    proc.stop()


REFUSED_OR_NOT = [
    # Commands that may add memory are refused...
    ("SET", "k2", "v"), ("XADD", "s", "*", "f", "v"), ("APPEND", "k", "x"), ("SET", "k", "v"),
    ("XGROUP", "CREATE", "s", "g2", "0"), ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
    ("XCLAIM", "s", "g", "c2", "0", "1-1"), ("XSETID", "s", "1-5"), ("INCR", "n"),
    # ...reads, deletes and trims run.
    ("GET", "k"), ("XLEN", "s"), ("XRANGE", "s", "-", "+"), ("XPENDING", "s", "g"), ("PING",),
    ("XACK", "s", "g", "1-1"), ("XDEL", "s", "1-2"), ("XTRIM", "s", "MAXLEN", "0"), ("EXPIRE", "k", "100"),
    ("DEL", "k"), ("UNLINK", "s"), ("DBSIZE",),
]


def test_over_maxmemory_writes_that_add_memory_are_refused() -> None:
    replies = {}
    for kind, start in (("redis", start_redis), ("rill", start_rill)):
        proc = _full(start())
        try:
            conn = RawConnection(proc.port)
            replies[kind] = [conn.call(*command) for command in REFUSED_OR_NOT]
            conn.close()
        finally:
            proc.stop()
    assert replies["rill"] == replies["redis"]
    refused = [command[0] for command, reply in zip(REFUSED_OR_NOT, replies["rill"], strict=True) if reply == OOM]
    assert refused == ["SET", "XADD", "APPEND", "SET", "XGROUP", "XSETID", "INCR"]


def test_over_maxmemory_a_transaction_is_refused_at_queue_time(full_server: Server) -> None:
    conn = RawConnection(full_server.port)
    assert conn.call("MULTI") == b"+OK\r\n"
    assert conn.call("SET", "k2", "v") == OOM
    assert conn.call("GET", "k") == OOM  # in MULTI even a read takes memory to queue
    assert conn.call("EXEC") == b"-EXECABORT Transaction discarded because of previous errors.\r\n"
    assert conn.call("MULTI") == b"+OK\r\n"
    assert conn.call("DISCARD") == b"+OK\r\n"
    assert conn.call("MULTI") == b"+OK\r\n"
    assert conn.call("EXEC") == b"*0\r\n"
    conn.close()


def test_exec_of_a_write_queued_before_the_limit_is_refused(full_server: Server) -> None:
    conn = RawConnection(full_server.port)
    admin = RawConnection(full_server.port)
    assert admin.call("CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
    assert conn.call("MULTI") == b"+OK\r\n"
    assert conn.call("SET", "k2", "v") == b"+QUEUED\r\n"
    assert admin.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
    assert conn.call("EXEC") == b"-EXECABORT Transaction discarded because of: " + OOM[1:]
    assert conn.call("MULTI") == b"+OK\r\n"
    assert admin.call("CONFIG", "SET", "maxmemory", "0") == b"+OK\r\n"
    assert conn.call("GET", "k2") == b"+QUEUED\r\n"
    assert admin.call("CONFIG", "SET", "maxmemory", "1") == b"+OK\r\n"
    assert conn.call("EXEC") == b"*1\r\n$-1\r\n"  # nothing in it adds memory
    conn.close()
    admin.close()


def test_rill_refuses_writes_at_maxmemory_and_takes_them_again_once_data_goes() -> None:
    limit = 8 * MB
    node = start_rill("--maxmemory", "8mb")
    try:
        client = node.client()
        before = rss(node.proc.pid)
        accepted = 0
        with pytest.raises(redis.exceptions.ResponseError, match="command not allowed when used memory"):
            while accepted < 1_000_000:
                pipe = client.pipeline(transaction=False)
                for _ in range(1000):
                    pipe.xadd("s", {"f": b"v" * 90})
                pipe.execute()
                accepted += 1000
        memory = client.info("memory")
        # The estimate reached the limit with entries of ~100 bytes (Redis took ~117 bytes
        # an entry in the same run), and the process grew by about that much.
        assert 40_000 < client.xlen("s") < 90_000
        assert limit <= memory["used_memory"] < limit + 64 * 1024
        assert peak_rss(node.proc.pid) <= before + 2 * limit
        # Reads and deletes still run, and the figure falls with the data.
        assert len(client.xrange("s", count=10)) == 10
        assert client.delete("s") == 1
        assert client.info("memory")["used_memory_dataset"] < 64 * 1024
        assert client.xadd("s", {"f": "v"})
        client.close()
    finally:
        node.stop()


def test_the_dataset_estimate_kept_write_by_write_equals_a_fresh_count() -> None:
    node = start_rill("--maxmemory", "1gb")
    try:
        client = node.client()
        pipe = client.pipeline(transaction=False)
        for i in range(3000):
            pipe.xadd(f"s{i % 7}", {"f": b"v" * (i % 200), f"g{i % 3}": "x"}, maxlen=500 if i % 5 == 0 else None)
            pipe.set(f"k{i % 50}", b"x" * i)
            if i % 11 == 0:
                pipe.xdel(f"s{i % 7}", f"0-{i}")
                pipe.expire(f"k{i % 50}", 1000)
            if i % 97 == 0:
                pipe.delete(f"s{(i + 1) % 7}")
                pipe.xgroup_create(f"s{i % 7}", f"g{i}", id="0")
                pipe.xreadgroup(f"g{i}", "c", {f"s{i % 7}": ">"}, count=50)
        pipe.execute()
        kept = client.info("memory")["used_memory_dataset"]
        client.config_set("maxmemory", "1gb")  # counts it all again
        assert client.info("memory")["used_memory_dataset"] == kept
        client.close()
    finally:
        node.stop()


def test_eviction_policies_are_refused() -> None:
    node = start_rill()
    try:
        client = node.client()
        with pytest.raises(redis.exceptions.ResponseError, match="'allkeys-lru' is not supported"):
            client.config_set("maxmemory-policy", "allkeys-lru")
        assert client.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}
        client.close()
    finally:
        node.stop()
    with pytest.raises(RuntimeError, match="only implements noeviction"):
        start_rill("--maxmemory-policy", "volatile-lru")


def test_a_replica_over_maxmemory_still_applies_its_primarys_stream() -> None:
    primary = start_node()
    replica = start_node("--maxmemory", "1mb", replicaof=primary)
    try:
        client = primary.client()
        pipe = client.pipeline(transaction=False)
        for i in range(30_000):
            pipe.xadd("s", {"f": b"v" * 90}, id=f"1-{i + 1}")
            pipe.set(f"k{i % 100}", b"x" * 100)
        pipe.execute()
        wait_synced(primary, replica)
        assert replica.client().xlen("s") == 30_000
        assert digest(replica) == digest(primary)
        # The replica is over its maxmemory (3 MB of data) and refuses no write of its primary.
        assert replica.client().info("memory")["used_memory"] > 1024 * 1024
        client.close()
    finally:
        replica.stop()
        primary.stop()
