"""Losing the link: a replica frozen past repl-timeout under a steady write load resumes
with a partial resync while its offset is still in the primary's backlog, and needs a full
sync once it is not; a replica restarted from its AOF continues partially from its offset."""

from __future__ import annotations

import threading
import time

from tests.conftest import Server
from tests.replication_node.nodes import (
    digest,
    info,
    raw_client,
    start_node,
    stat,
    stopped,
    wait_synced,
    wait_until,
)
from tests.replication_node.workload import Workload


class _Writer:
    """XADDs in batches of 20 on its own connection until stopped: a steady load during the
    outage, paced at `per_second` XADDs (about 105 bytes of log each). Paced, because a
    partial resync needs the frozen replica's offset to still be in the primary's backlog
    when it comes back: unpaced, a quiet host wrote 22 MB in a 3 s outage, more than the
    16 MB backlog (repl-backlog-size), and the replica rightly needed a full sync. At 2,000
    XADDs a second an outage would have to last over a minute to write that much."""

    def __init__(self, node: Server, per_second: int = 2000) -> None:
        self.node = node
        self.per_second = per_second
        self.stop = threading.Event()
        self.written = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        started = time.monotonic()
        with raw_client(self.node) as c:
            while not self.stop.is_set():
                pipe = c.pipeline(transaction=False)
                for _ in range(20):
                    pipe.execute_command("XADD", "load", "*", "payload", "x" * 40)
                pipe.execute()
                self.written += 20
                ahead = started + self.written / self.per_second - time.monotonic()
                if ahead > 0:
                    self.stop.wait(ahead)

    def __enter__(self) -> _Writer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)


def _replicas_connected(node: Server) -> int:
    return int(info(node)["connected_slaves"])


def test_a_replica_frozen_past_repl_timeout_under_load_resumes_partially(trio: tuple[Server, Server, Server]) -> None:
    primary, a, b = trio
    full, partial = stat(primary, "sync_full"), stat(primary, "sync_partial_ok")
    with _Writer(primary) as writer:
        with stopped(a):
            wait_until(lambda: _replicas_connected(primary) == 1, "the primary to drop the frozen replica")
        wait_until(lambda: info(a)["master_link_status"] == "up", "the replica's link to come back")
        wait_until(lambda: writer.written > 2000, "more writes after the resync")
    wait_synced(primary, a, b)
    assert stat(primary, "sync_full") == full, "no full sync: the offset was still in the backlog"
    assert stat(primary, "sync_partial_ok") >= partial + 1
    assert digest(a) == digest(b) == digest(primary)
    with raw_client(a) as c:
        assert c.execute_command("XLEN", "load") == writer.written


def test_a_replica_whose_offset_left_the_backlog_takes_a_full_sync(started: list[Server]) -> None:
    primary = start_node("--repl-backlog-size", "16kb")
    started.append(primary)
    replica = start_node(replicaof=primary)
    started.append(replica)
    wait_synced(primary, replica)
    full, errors = stat(primary, "sync_full"), stat(primary, "sync_partial_err")
    with stopped(replica), raw_client(primary) as c:
        Workload(c, 3).run(200)
        wait_until(lambda: _replicas_connected(primary) == 0, "the primary to drop the frozen replica")
        before = offset_now = int(info(primary)["master_repl_offset"])
        while offset_now - before < 64 * 1024:  # four backlogs' worth after the drop
            Workload(c, offset_now).run(100)
            offset_now = int(info(primary)["master_repl_offset"])
        assert int(info(primary)["repl_backlog_histlen"]) <= 16 * 1024
    wait_synced(primary, replica)
    assert stat(primary, "sync_full") == full + 1
    assert stat(primary, "sync_partial_err") == errors + 1
    assert digest(replica) == digest(primary)


def test_a_replica_restarted_from_its_aof_resumes_with_a_partial_resync(started: list[Server]) -> None:
    primary = start_node()
    started.append(primary)
    replica = start_node("--appendonly", "yes", replicaof=primary)
    started.append(replica)
    with raw_client(primary) as c:
        Workload(c, 5).run(300)
        # WAITAOF counts the replica once its AOF (rebuilt after the initial full sync) has
        # everything this client wrote on disk.
        assert c.execute_command("WAITAOF", 0, 1, 10_000) == [0, 1]
    wait_synced(primary, replica)
    assert replica.stop() == 0
    with raw_client(primary) as c:
        Workload(c, 6).run(200)  # written while the replica is down
    full, partial = stat(primary, "sync_full"), stat(primary, "sync_partial_ok")
    restarted = start_node("--appendonly", "yes", replicaof=primary, dir=replica.dir)
    started.append(restarted)
    wait_synced(primary, restarted)
    assert (stat(primary, "sync_full"), stat(primary, "sync_partial_ok")) == (full, partial + 1)
    assert digest(restarted) == digest(primary)


def test_a_replica_started_before_its_primary_finds_it_through_a_proxy(started: list[Server]) -> None:
    """Discovery attempts that meet a proxy closing the connection (the primary is not up
    yet) do not spoil the later ones (compiled by mypyc, they once did: every attempt kept
    failing with the first one's error)."""
    import random

    from bench.procs import free_port
    from tests.replication_node.netproxy import NodeProxy

    port, repl_port = free_port(), free_port()
    ip = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
    proxy = NodeProxy(ip, (port, repl_port))
    try:
        replica = start_node("--replicaof", ip, str(port))
        started.append(replica)
        time.sleep(1.5)  # several attempts, each accepted by the proxy and closed
        primary = start_node("--repl-port", str(repl_port), port=port)
        started.append(primary)
        wait_synced(primary, replica)
    finally:
        proxy.close()
