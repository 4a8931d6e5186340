"""What clients see on replicas: blocking XREAD readers receive every entry the primary
accepted, in order, with no gaps or duplicates (read scaling); every write is refused with
READONLY while reads work; ROLE and INFO replication have Redis's shape (checked against a real
redis-server primary and replica); REPLICAOF's replies and errors are Redis's. A replica with
slicing on (off by default) whose CPU is contended applies large batches in slices, and still
converges."""

from __future__ import annotations

import itertools
import os
import re
import threading
import time

import pytest
import redis

from tests.conftest import Server, start_redis, start_spinner, stop_process
from tests.replication_node.nodes import digest, info, raw_client, wait_synced, wait_until

READONLY = "You can't write against a read only replica."  # redis-py's ReadOnlyError drops the code
ENTRIES = 1500


class _Reader(threading.Thread):
    """XREAD BLOCK from `$` on, following the last ID it got, until it saw ENTRIES entries."""

    def __init__(self, node: Server, start: threading.Barrier) -> None:
        super().__init__(daemon=True)
        self.node = node
        self.start_barrier = start
        self.ids: list[bytes] = []
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with raw_client(self.node, socket_timeout=10) as c:
                last: bytes = b"$"
                self.start_barrier.wait(10)
                while len(self.ids) < ENTRIES:
                    reply = c.execute_command("XREAD", "COUNT", 200, "BLOCK", 5000, "STREAMS", "feed", last)
                    if reply is None:
                        raise AssertionError(f"no entry for 5 s after {len(self.ids)}")
                    for entry_id, _ in reply[0][1]:
                        self.ids.append(entry_id)
                        last = entry_id
        except BaseException as exc:
            self.error = exc


def test_blocked_readers_on_replicas_receive_every_entry_in_order(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    with raw_client(primary) as c:
        c.execute_command("XADD", "feed", "0-1", "seed", 1)  # so `$` means "after the seed"
    wait_synced(primary, a, b)
    barrier = threading.Barrier(5)
    readers = [_Reader(node, barrier) for node in (a, a, b, b)]
    for reader in readers:
        reader.start()
    barrier.wait(10)
    wait_until(lambda: int(info(a, "clients")["blocked_clients"]) == 2 and int(info(b, "clients")["blocked_clients"]) == 2,
               "the readers to block")
    with raw_client(primary) as c:
        written = 0
        for batch in itertools.count():
            if written == ENTRIES:
                break
            # Every 10th batch is a MULTI of 10 (several entries in one unit), the others
            # pipelines of 25; exactly ENTRIES in all, the number the readers wait for.
            transaction = batch % 10 == 0
            size = min(10 if transaction else 25, ENTRIES - written)
            pipe = c.pipeline(transaction=transaction)
            for i in range(size):
                pipe.execute_command("XADD", "feed", "*", "n", written + i)
            pipe.execute()
            written += size
        expected = [e[0] for e in c.execute_command("XRANGE", "feed", "(0-1", "+")]
    assert len(expected) == ENTRIES
    for reader in readers:
        reader.join(30)
        assert reader.error is None, reader.error
        assert reader.ids == expected, "every entry, in order, no gaps, no duplicates"


WRITES = [
    ("XADD", "s", "*", "f", "v"),
    ("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"),
    ("XACK", "s", "g", "1-1"),
    ("XCLAIM", "s", "g", "c", 0, "1-1"),
    ("XAUTOCLAIM", "s", "g", "c", 0, "0-0"),
    ("XGROUP", "CREATE", "s", "g2", "$"),
    ("XGROUP", "SETID", "s", "g", "0"),
    ("XGROUP", "DESTROY", "s", "g"),
    ("XGROUP", "CREATECONSUMER", "s", "g", "c2"),
    ("XGROUP", "DELCONSUMER", "s", "g", "c"),
    ("XDEL", "s", "1-1"),
    ("XTRIM", "s", "MAXLEN", 0),
    ("XSETID", "s", "99999999999999-0"),
    ("SET", "k", "v"),
    ("DEL", "k"),
    ("FLUSHALL",),
]


def _names_and_pending(consumers: list[list[object]]) -> list[tuple[object, object]]:
    """XINFO CONSUMERS without its idle times (the local clock's)."""
    return [(dict(zip(c[::2], c[1::2]))[b"name"], dict(zip(c[::2], c[1::2]))[b"pending"]) for c in consumers]


def test_replicas_refuse_every_write_and_serve_reads(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    with raw_client(primary) as c:
        first = c.execute_command("XADD", "s", "1-1", "f", "v")
        c.execute_command("XGROUP", "CREATE", "s", "g", "0")
        c.execute_command("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
        c.execute_command("SET", "k", "v")
        reads = {
            "xrange": c.execute_command("XRANGE", "s", "-", "+"),
            "xrevrange": c.execute_command("XREVRANGE", "s", "+", "-"),
            "xlen": c.execute_command("XLEN", "s"),
            "xinfo": c.execute_command("XINFO", "GROUPS", "s"),
            "consumers": _names_and_pending(c.execute_command("XINFO", "CONSUMERS", "s", "g")),
            "xpending": c.execute_command("XPENDING", "s", "g"),
            "xread": c.execute_command("XREAD", "STREAMS", "s", "0"),
            "get": c.execute_command("GET", "k"),
        }
    wait_synced(primary, a, b)
    for replica in (a, b):
        with raw_client(replica) as c:
            for command in WRITES:
                with pytest.raises(redis.ReadOnlyError) as refused:
                    c.execute_command(*command)
                assert str(refused.value) == READONLY, command
            pipe = c.pipeline(transaction=True)
            pipe.execute_command("XADD", "s", "*", "f", "v")
            with pytest.raises(redis.ResponseError, match=READONLY):
                pipe.execute()
            assert reads == {
                "xrange": c.execute_command("XRANGE", "s", "-", "+"),
                "xrevrange": c.execute_command("XREVRANGE", "s", "+", "-"),
                "xlen": c.execute_command("XLEN", "s"),
                "xinfo": c.execute_command("XINFO", "GROUPS", "s"),
                "consumers": _names_and_pending(c.execute_command("XINFO", "CONSUMERS", "s", "g")),
                "xpending": c.execute_command("XPENDING", "s", "g"),
                "xread": c.execute_command("XREAD", "STREAMS", "s", "0"),
                "get": c.execute_command("GET", "k"),
            }
    assert first == b"1-1"


def test_role_and_replicaof_replies(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    with raw_client(primary) as c:
        c.execute_command("XADD", "s", "*", "f", "v")
    offset = wait_synced(primary, a, b)
    with raw_client(primary) as c:
        role, reported, replicas = c.execute_command("ROLE")
        assert (role, reported) == (b"master", offset)
        assert sorted(replicas) == sorted([b"127.0.0.1", str(r.port).encode(), str(offset).encode()] for r in (a, b))
    with raw_client(a) as c:
        assert c.execute_command("ROLE") == [b"slave", b"127.0.0.1", primary.port, b"connected", offset]
        assert c.execute_command("REPLICAOF", "127.0.0.1", primary.port) == b"OK Already connected to specified master"
        for port in ("x", "-1", "65536"):
            with pytest.raises(redis.ResponseError, match="^Invalid master port$"):
                c.execute_command("SLAVEOF", "127.0.0.1", port)
        with pytest.raises(redis.ResponseError, match="^Invalid master port$"):
            c.execute_command("REPLICAOF", "no", "two")
    fields = info(a)
    assert (fields["master_host"], fields["master_port"], fields["master_link_status"]) == (
        "127.0.0.1", str(primary.port), "up")
    slaves = info(primary)
    assert slaves["connected_slaves"] == "2"
    lines = {re.sub(r",lag=\d+$", "", slaves[f"slave{i}"]) for i in (0, 1)}
    assert lines == {f"ip=127.0.0.1,port={r.port},state=online,offset={offset}" for r in (a, b)}


def test_info_replication_has_redis_fields_for_both_roles(trio: tuple[Server, Server, Server]) -> None:
    primary, a, _ = trio
    redis_primary = start_redis()
    redis_replica = start_redis("--replicaof", "127.0.0.1", str(redis_primary.port))
    try:
        wait_until(lambda: info(redis_replica).get("master_link_status") == "up", "redis-server's replica")
        for ours, theirs in ((primary, redis_primary), (a, redis_replica)):
            names = [n for n in info(ours) if not n.startswith("slave") or not n[5:].isdigit()]
            expected = [n for n in info(theirs) if not n.startswith("slave") or not n[5:].isdigit()]
            # Rill adds the port its replicas connect to (and on a replica how many batches it
            # applied in slices); everything else is Redis's, in order.
            ours_extra = ["repl_grpc_port"] + (["repl_apply_sliced_batches"] if ours is a else [])
            assert names == [*expected, *ours_extra]
    finally:
        redis_replica.stop()
        redis_primary.stop()


def _monitored_xadds(primary: Server, replica: Server) -> tuple[list[str], str]:
    """The commands MONITOR on `replica` shows while the primary takes three XADDs (two of
    them in the spellings a replica applies without the dispatcher), and the replica's XADD
    statistics line."""
    with raw_client(replica, socket_timeout=10) as c, c.monitor() as monitor:
        with raw_client(primary) as p:
            p.execute_command("XADD", "mon", "1-1", "f", "v")
            p.execute_command("xadd", "mon", "2-1", "f", "v")
            p.execute_command("XAdd", "mon", "3-1", "f", "v")
            p.execute_command("SET", "mon:done", "1")
        seen: list[str] = []
        while not seen or seen[-1] != "SET mon:done 1":
            seen.append(monitor.next_command()["command"])
    stats = dict(field.split("=") for field in info(replica, "commandstats")["cmdstat_xadd"].split(","))
    return [line for line in seen if line != "SELECT 0"], f"calls={stats['calls']} failed={stats['failed_calls']}"


def test_monitor_on_a_replica_shows_the_primarys_writes_as_redis_does(trio: tuple[Server, Server, Server]) -> None:
    primary, replica, _ = trio
    oracle = start_redis("--repl-diskless-sync-delay", "0")
    oracle_replica = start_redis("--replicaof", "127.0.0.1", str(oracle.port))
    try:
        wait_until(lambda: info(oracle_replica)["master_link_status"] == "up", "the redis replica's link")
        expected = _monitored_xadds(oracle, oracle_replica)
    finally:
        oracle_replica.stop()
        oracle.stop()
    assert expected == (["XADD mon 1-1 f v", "xadd mon 2-1 f v", "XAdd mon 3-1 f v", "SET mon:done 1"], "calls=3 failed=0")
    assert _monitored_xadds(primary, replica) == expected


def test_a_replica_sharing_its_cpu_with_a_busy_process_applies_in_slices(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    # Replica a's event-loop thread (its main thread) and two spinning processes pinned to
    # one CPU: kept busy by a steady stream of pipelined XADDs, a waits for that CPU about as
    # long as it runs, so with slicing on (repl-apply-slice-time 500 µs of CPU; off by
    # default) it slices the large batches, and counts them in INFO.
    cpu = min(os.sched_getaffinity(0))
    saved = os.sched_getaffinity(a.proc.pid)
    spinners = [start_spinner(cpu, 60) for _ in range(2)]
    with a.client() as c:
        c.config_set("repl-apply-slice-time", 500)
    try:
        os.sched_setaffinity(a.proc.pid, {cpu})
        before = int(info(a)["repl_apply_sliced_batches"])
        deadline = time.monotonic() + 30
        with primary.client() as c:
            while int(info(a)["repl_apply_sliced_batches"]) == before:
                assert time.monotonic() < deadline, "no batch applied in slices within 30 s"
                pipe = c.pipeline(transaction=False)
                for _ in range(2000):
                    pipe.xadd("sliced", {"field": "value"})
                pipe.execute()
        wait_synced(primary, a, b)
        assert digest(a) == digest(b) == digest(primary)
    finally:
        for spinner in spinners:
            stop_process(spinner)
        os.sched_setaffinity(a.proc.pid, saved)
        with a.client() as c:
            c.config_set("repl-apply-slice-time", 0)
