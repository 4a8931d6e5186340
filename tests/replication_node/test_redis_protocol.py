"""Redis's replication protocol between Rill and Debian's redis-server 7.0, both ways:
a Rill node replicating from a redis-server (node/replication/redis_link.py), and a
redis-server replicating from a Rill node (node/replication/redis_primary.py). Every write
Redis 7 propagates for streams, strings, keys and expiry goes through (redis_workload.py);
the replica ends with the primary's data, byte for byte in DUMP, at the primary's offset,
and the primary's WAIT counts it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import redis

from tests.conftest import ROOT, Server, start_redis
from tests.replication_node.nodes import call, digest, info, start_node, stat, wait_synced, wait_until
from tests.replication_node.redis_workload import assert_same_data, write_everything

# A redis-server that starts a full sync at once (7.0 waits 5 s for more replicas to join a
# diskless one), with a short repl-timeout, and PINGs its replicas every second (they come
# in the stream and count in the offset).
REDIS_FLAGS = ("--repl-diskless-sync-delay", "0", "--repl-timeout", "5", "--repl-ping-replica-period", "1")


@pytest.fixture
def redis_nodes() -> Iterator[list[Server]]:
    """redis-servers a test starts: stopped and removed afterwards."""
    procs: list[Server] = []
    yield procs
    for proc in procs:
        proc.stop()
        shutil.rmtree(proc.dir, ignore_errors=True)


def _redis(redis_nodes: list[Server], *flags: str) -> Server:
    server = start_redis(*REDIS_FLAGS, *flags)
    redis_nodes.append(server)
    return server


def _preload(port: int) -> None:
    """Data that reaches the replica in the RDB of its full sync."""
    with redis.Redis(port=port) as c:
        pipe = c.pipeline(transaction=False)
        for i in range(2000):
            pipe.xadd("before", {"i": i, "payload": "p" * (i % 30)}, id=f"{i + 1}-0")
        pipe.execute()
        c.xgroup_create("before", "g", id="0")
        c.xreadgroup("g", "c", {"before": ">"}, count=500)
        c.set("before-string", "v", ex=1000)


# -- a Rill node replicating from a redis-server ------------------------------------------------


@pytest.mark.parametrize("diskless", ["yes", "no"])
def test_rill_replicates_a_redis_primary(started: list[Server], redis_nodes: list[Server], diskless: str) -> None:
    source = _redis(redis_nodes, "--repl-diskless-sync", diskless)
    _preload(source.port)
    rill = start_node("--rdb-version", "10", replicaof=source)
    started.append(rill)
    wait_synced(source, rill)
    begun = int(time.time() * 1000)
    write_everything(source.port)
    # The source's WAIT counts the Rill replica (its REPLCONF ACKs).
    assert call(source, "WAIT", 1, 5000) == 1
    wait_synced(source, rill)
    assert_same_data(source.port, rill.port, begun - 600_000)
    fields = info(source)
    assert fields["slave0"].startswith(f"ip=127.0.0.1,port={rill.port},state=online")
    replica = info(rill)
    assert replica["role"] == "slave" and replica["master_port"] == str(source.port)
    assert "(Redis replication protocol)" in rill.log
    assert ("received" in rill.log) and ("MASTER <-> REPLICA sync (Redis): loaded" in rill.log)
    # Read-only for its clients, as any replica.
    assert call(rill, "SET", "x", "y") == "-You can't write against a read only replica."


def test_a_rill_replica_of_redis_serves_rill_replicas_and_takes_over(started: list[Server], redis_nodes: list[Server]) -> None:
    source = _redis(redis_nodes)
    _preload(source.port)
    first = start_node("--rdb-version", "10", replicaof=source)
    started.append(first)
    second = start_node("--rdb-version", "10", replicaof=first)
    started.append(second)
    wait_synced(source, first)
    begun = int(time.time() * 1000)
    write_everything(source.port)
    wait_synced(source, first)
    wait_synced(first, second)
    assert_same_data(source.port, first.port, begun - 600_000)
    assert digest(second) == digest(first)
    assert_same_data(first.port, second.port, begun - 600_000)
    # The cut-over's last step: the first node is promoted, the second follows it partially.
    assert call(first, "REPLICAOF", "NO", "ONE") == b"OK"
    assert call(first, "XADD", "s", "*", "after", "promotion") != b""
    wait_synced(first, second)
    assert digest(second) == digest(first)
    assert stat(first, "sync_partial_ok") >= 1


def test_a_lost_link_continues_partially(started: list[Server], redis_nodes: list[Server]) -> None:
    source = _redis(redis_nodes)
    rill = start_node("--rdb-version", "10", replicaof=source)
    started.append(rill)
    _preload(source.port)
    wait_synced(source, rill)
    assert call(rill, "CLIENT", "KILL", "TYPE", "master") == 1
    with redis.Redis(port=source.port) as c:
        for i in range(100):
            c.xadd("before", {"more": i})
    wait_synced(source, rill)
    assert "Successful partial resynchronization with MASTER" in rill.log
    assert int(info(source, "stats")["sync_partial_ok"]) == 1
    assert_same_data(source.port, rill.port, int(time.time() * 1000) - 600_000)


def test_commands_rill_lacks_stop_the_link_or_are_skipped(started: list[Server], redis_nodes: list[Server]) -> None:
    source = _redis(redis_nodes)
    rill = start_node("--rdb-version", "10", replicaof=source)
    started.append(rill)
    wait_synced(source, rill)
    with redis.Redis(port=source.port) as c:
        c.xadd("s", {"f": "v"}, id="1-1")
        c.rpush("a-list", "x")
        c.xadd("s", {"f": "w"}, id="2-1")
    wait_until(lambda: "'rpush', which rill does not have" in rill.log.lower(), "the link to refuse RPUSH")
    assert info(rill)["master_link_status"] == "down"
    # Skipping what Rill lacks lets the link go on (a full sync skips the list's key too).
    assert call(rill, "CONFIG", "SET", "rdb-skip-unsupported", "yes") == b"OK"
    wait_synced(source, rill, timeout=30)
    assert call(rill, "XLEN", "s") == 2 and call(rill, "EXISTS", "a-list") == 0
    # A write to a string Rill lacks is never skipped: it would change data Rill holds.
    with redis.Redis(port=source.port) as c:
        c.set("text", "hello")
        c.setrange("text", 0, "J")
    wait_until(lambda: "'setrange', which rill does not have: it would change a string" in rill.log.lower(),
               "the link to refuse SETRANGE")
    assert call(rill, "GET", "text") == b"hello"


# -- a redis-server replicating from a Rill node ------------------------------------------------


def test_a_redis_server_replicates_a_rill_primary(started: list[Server], redis_nodes: list[Server]) -> None:
    rill = start_node("--rdb-version", "10")
    started.append(rill)
    _preload(rill.port)
    replica = _redis(redis_nodes, "--replicaof", "127.0.0.1", str(rill.port))
    wait_synced(rill, replica)
    begun = int(time.time() * 1000)
    write_everything(rill.port)
    # Rill's WAIT counts the redis-server (its REPLCONF ACKs, about once a second).
    assert call(rill, "WAIT", 1, 5000) == 1
    wait_synced(rill, replica)
    assert_same_data(rill.port, replica.port, begun - 600_000)
    assert info(rill)["slave0"].startswith(f"ip=127.0.0.1,port={replica.port},state=online")
    # ROLE lists it with the offset it acknowledged (once a second), which reaches the log's end.
    wait_until(lambda: call(rill, "ROLE")[2] == [[b"127.0.0.1", str(replica.port).encode(),
                                                  info(replica)["slave_repl_offset"].encode()]], "ROLE to list the replica")
    assert "CRITICAL" not in replica.log


def test_what_redis_7_lacks_reaches_it_in_as_many_bytes(started: list[Server], redis_nodes: list[Server]) -> None:
    rill = start_node("--rdb-version", "11")
    started.append(rill)
    replica = _redis(redis_nodes, "--replicaof", "127.0.0.1", str(rill.port))
    wait_synced(rill, replica)
    with redis.Redis(port=rill.port) as c:
        c.execute_command("XADD", "idmp", "IDMP", "producer", "iid-1", "*", "f", "v")
        c.execute_command("XCFGSET", "idmp", "IDMP-DURATION", "50")
        c.execute_command("XADD", "idmp", "IDMPAUTO", "producer", "*", "f", "w")
        c.execute_command("XADD", "idmp", "MAXLEN", "=", "5", "IDMP", "producer", "iid-2", "*", "f", "x")
        c.xadd("s", {"f": "v"}, id="1-1")
        c.xgroup_create("s", "g", id="0")
        c.xreadgroup("g", "alice", {"s": ">"})
        payload = c.dump("s")  # RDB 11: Redis 7.0 refuses it, so it reaches the replica as RDB 10
        c.restore("copy", 0, payload)
    wait_synced(rill, replica)
    call(rill, "CONFIG", "SET", "rdb-version", "10")
    assert_same_data(rill.port, replica.port, int(time.time() * 1000) - 600_000)
    assert "CRITICAL" not in replica.log


def test_a_redis_replica_continues_partially_and_an_idle_link_stays_up(started: list[Server], redis_nodes: list[Server]) -> None:
    rill = start_node("--rdb-version", "10")
    started.append(rill)
    _preload(rill.port)
    replica = _redis(redis_nodes, "--replicaof", "127.0.0.1", str(rill.port))
    wait_synced(rill, replica)
    assert call(replica, "CLIENT", "KILL", "TYPE", "master") == 1
    with redis.Redis(port=rill.port) as c:
        for i in range(50):
            c.xadd("before", {"more": i})
    wait_synced(rill, replica)
    assert "Successful partial resynchronization with master" in replica.log
    assert stat(rill, "sync_partial_ok") == 1 and stat(rill, "sync_full") == 1
    # Idle for longer than the replica's repl-timeout (5 s): the PINGs Rill logs every
    # repl-ping-replica-period (1 s in these tests) keep the link up.
    time.sleep(6.5)
    assert info(replica)["master_link_status"] == "up"
    assert "MASTER timeout" not in replica.log
    assert stat(rill, "sync_full") == 1 and stat(rill, "sync_partial_ok") == 1
    wait_synced(rill, replica)


def test_rdb_export_and_redis_cli_rdb_give_a_file_redis_loads(started: list[Server], redis_nodes: list[Server],
                                                           tmp_path: object) -> None:
    rill = start_node()
    started.append(rill)
    _preload(rill.port)
    write_everything(rill.port)
    directory = str(tmp_path)
    exported = os.path.join(directory, "exported.rdb")
    done = subprocess.run([sys.executable, "-m", "node.main", "rdb", "export", exported, "--port", str(rill.port)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    fetched = os.path.join(directory, "fetched.rdb")
    done = subprocess.run(["redis-cli", "-p", str(rill.port), "--rdb", fetched], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "Transfer finished with success" in done.stdout + done.stderr
    for path in (exported, fetched):
        server_dir = os.path.join(directory, os.path.basename(path) + ".dir")
        os.makedirs(server_dir)
        shutil.copyfile(path, os.path.join(server_dir, "dump.rdb"))
        loaded = start_redis(dir=server_dir)
        redis_nodes.append(loaded)
        # redis-server listens before it loads: wait for the load to finish.
        wait_until(lambda: "Done loading RDB" in loaded.log, "redis-server to load the file")  # noqa: B023
        call(rill, "CONFIG", "SET", "rdb-version", "10")
        assert_same_data(rill.port, loaded.port, int(time.time() * 1000) - 600_000)


def test_a_redis_8_write_sends_a_redis_replica_through_a_full_sync(started: list[Server], redis_nodes: list[Server]) -> None:
    rill = start_node("--rdb-version", "10")
    started.append(rill)
    replica = _redis(redis_nodes, "--replicaof", "127.0.0.1", str(rill.port))
    wait_synced(rill, replica)
    with redis.Redis(port=rill.port) as c:
        for i in range(1, 6):
            c.xadd("s", {"f": i}, id=f"{i}-1")
        c.xgroup_create("s", "g", id="0")
        c.xreadgroup("g", "alice", {"s": ">"})
        # XNACK (Redis 8.8) and XDELEX (8.2) have no Redis 7 command: the replica resyncs
        # fully, and the NACKed entries reach it as the pending entries of rill:nacked. One
        # transaction, one unit: sent apart, a replica back between them resyncs twice.
        tx = c.pipeline(transaction=True)
        tx.execute_command("XNACK", "s", "g", "SILENT", "IDS", 2, "2-1", "3-1")
        tx.execute_command("XDELEX", "s", "IDS", 1, "5-1")
        assert tx.execute()[0] == 2
        c.xadd("s", {"f": "after"}, id="6-1")
    wait_until(lambda: "a Redis 8 stream command Redis 7 has no form for" in rill.log, "the replica to be closed")
    wait_synced(rill, replica)
    assert stat(rill, "sync_full") == 2
    assert_same_data(rill.port, replica.port, int(time.time() * 1000) - 600_000)
    with redis.Redis(port=replica.port) as r:
        # (XDELEX keeps the group's reference to 5-1 by default: still pending for alice.)
        assert [p["consumer"] for p in r.xpending_range("s", "g", "-", "+", 10)] == [
            b"alice", b"rill:nacked", b"rill:nacked", b"alice", b"alice"]
    assert "CRITICAL" not in replica.log


def test_rill_replicates_a_redis_primary_as_its_masteruser(started: list[Server], redis_nodes: list[Server]) -> None:
    # The redis-server's default user has another password: only `masteruser` gets in.
    source = _redis(redis_nodes, "--requirepass", "admin-secret")
    with redis.Redis(port=source.port, password="admin-secret") as c:
        c.execute_command("ACL", "SETUSER", "replicator", "on", ">repl-secret", "+psync", "+replconf", "+ping", "+info")
        c.xadd("s", {"f": "v"}, id="1-0")
    rill = start_node("--masteruser", "replicator", "--masterauth", "repl-secret", replicaof=source)
    started.append(rill)
    wait_until(lambda: call(rill, "XLEN", "s") == 1, "the replica to load the primary's stream")
    assert info(rill)["master_link_status"] == "up"
