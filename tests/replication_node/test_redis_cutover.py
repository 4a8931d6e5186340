"""Moving a live Redis deployment to Rill (docs/migration.md, "Live migration"), end to end:
a redis-server primary watched by three of Debian's redis-sentinel, producers and a consumer
writing to it through redis-py's Sentinel client; a Rill node replicating from it (Redis's
protocol) with a Rill replica of its own (gRPC). `rill cutover` pauses the source's writes,
waits for the Rill node to reach its offset, has the sentinels promote it, and turns the
source into a replica of it; the clients find the new primary through Sentinel and go on.

What must hold: every write the clients saw acknowledged, on either side of the cut-over,
is on the new primary, on its Rill replica and on the old primary (now its replica), and
nothing else is; the consumer group's acknowledgements too; the sentinels agree on the new
primary. Waits are bounded; nothing asserts a duration.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest
import redis
from redis.sentinel import MasterNotFoundError, Sentinel

from bench.cluster import Launcher, Member
from bench.procs import free_port
from tests.conftest import ROOT
from tests.replication_node.nodes import wait_until

SERVICE = "mymaster"
TIMEOUT = 60.0
_ERRORS = (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError, MasterNotFoundError, redis.ResponseError)


class Deployment:
    """The source redis-server, the Rill node that replicates from it and its Rill replica,
    three sentinels monitoring the source; members of one bench.cluster.Launcher."""

    def __init__(self) -> None:
        self.launcher = Launcher(prefix="rill-cutover-")
        self.source = self.launcher.add("source", "redis")
        self.rill = self.launcher.add("rill", "rill")
        self.rill_replica = self.launcher.add("rill-replica", "rill")
        self.sentinels = [self.launcher.add(f"s{i}", "redis-sentinel") for i in range(3)]

    @property
    def members(self) -> list[Member]:
        return [*self.sentinels, self.source, self.rill, self.rill_replica]

    def start(self) -> None:
        self._conf(self.source, ['save ""', "repl-diskless-sync yes", "repl-diskless-sync-delay 0", "appendonly no"])
        self._conf(self.rill, [f"repl-port {free_port()}", "appendonly yes",
                               f"replicaof 127.0.0.1 {self.source.port}"])
        self._conf(self.rill_replica, [f"repl-port {free_port()}", "appendonly yes",
                                       f"replicaof 127.0.0.1 {self.rill.port}"])
        for node in (self.source, self.rill, self.rill_replica):
            node.start()
        for sentinel in self.sentinels:
            sentinel.write_conf("\n".join([
                f"port {sentinel.port}", "bind 127.0.0.1", f"dir {sentinel.dir}", f"logfile {sentinel.logfile}",
                f"sentinel monitor {SERVICE} 127.0.0.1 {self.source.port} 2",
                f"sentinel down-after-milliseconds {SERVICE} 5000",
                f"sentinel failover-timeout {SERVICE} 20000",
            ]) + "\n")
            sentinel.start()

    def _conf(self, node: Member, extra: list[str]) -> None:
        lines = [f"port {node.port}", "bind 127.0.0.1", f"dir {node.dir}", f"logfile {node.logfile}", *extra]
        node.write_conf("\n".join(lines) + "\n")

    def close(self) -> None:
        self.launcher.close()

    def sentinels_see_the_rill_replica(self) -> bool:
        for sentinel in self.sentinels:
            with sentinel.client(1.0) as c:
                replicas = c.sentinel_slaves(SERVICE)
                if not any(r["port"] == self.rill.port and not r["is_sdown"] for r in replicas):
                    return False
                if c.sentinel_master(SERVICE)["num-other-sentinels"] != 2:
                    return False
        return True

    def failure_report(self) -> list[tuple[str, str]]:
        """The end of every member's log, for a failing test's report (conftest.py)."""
        return [(f"{m.name} ({m.kind}, :{m.port}) log", m.tail(150)) for m in self.members]

    def master_ports(self) -> set[int]:
        ports = set()
        for sentinel in self.sentinels:
            with sentinel.client(1.0) as c:
                ports.add(int(c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)[1]))
        return ports


@pytest.fixture
def deployment() -> Iterator[Deployment]:
    d = Deployment()
    try:
        d.start()
        yield d
    finally:
        d.close()


@dataclass
class Clients:
    """Producers and a consumer writing through Sentinel, recording what was acknowledged."""

    sentinel: Sentinel
    stop: threading.Event = field(default_factory=threading.Event)
    added: dict[str, dict[str, str]] = field(default_factory=dict)  # acknowledged XADD ID -> fields
    attempted: set[tuple[str, str]] = field(default_factory=set)  # (producer, n) of every attempt
    counter_acks: list[int] = field(default_factory=list)
    acked: set[str] = field(default_factory=set)  # entries whose XACK was acknowledged with 1
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    threads: list[threading.Thread] = field(default_factory=list)

    def client(self) -> redis.Redis:
        return self.sentinel.master_for(SERVICE, socket_timeout=1.0, socket_connect_timeout=1.0, decode_responses=True)

    def start(self, producers: int = 3) -> None:
        for p in range(producers):
            self.threads.append(threading.Thread(target=self._produce, args=(f"p{p}",), daemon=True))
        self.threads.append(threading.Thread(target=self._consume, daemon=True))
        for t in self.threads:
            t.start()

    def finish(self) -> None:
        self.stop.set()
        for t in self.threads:
            t.join(30)

    def _produce(self, name: str) -> None:
        client = self.client()
        n = 0
        while not self.stop.is_set():
            n += 1
            fields = {"producer": name, "n": str(n)}
            with self.lock:
                self.attempted.add((name, str(n)))
            try:
                entry_id = client.xadd("orders", fields)
                with self.lock:
                    self.added[entry_id] = fields
                count = client.incr("orders-counter")
                with self.lock:
                    self.counter_acks.append(int(count))
            except _ERRORS as exc:
                with self.lock:
                    self.errors.append(f"{name}: {type(exc).__name__}: {exc}")
                time.sleep(0.05)
            time.sleep(0.002)

    def _consume(self) -> None:
        client = self.client()
        while not self.stop.is_set():
            try:
                reply = client.xreadgroup("billing", "worker", {"orders": ">"}, count=20, block=100)
                for _, entries in reply or []:
                    for entry_id, _ in entries:
                        if client.xack("orders", "billing", entry_id) == 1:
                            with self.lock:
                                self.acked.add(entry_id)
            except _ERRORS:
                time.sleep(0.05)


def test_a_live_redis_deployment_moves_to_rill_losing_no_acknowledged_write(deployment: Deployment) -> None:
    d = deployment
    with d.source.client() as c:
        c.xgroup_create("orders", "billing", id="0", mkstream=True)
    wait_until(d.sentinels_see_the_rill_replica, "the sentinels to know the Rill replica and each other", TIMEOUT)
    clients = Clients(Sentinel([("127.0.0.1", s.port) for s in d.sentinels], socket_timeout=1.0))
    clients.start()
    try:
        wait_until(lambda: len(clients.added) >= 200, "writes to the source", TIMEOUT)
        before = len(clients.added)
        done = subprocess.run(
            [sys.executable, "-m", "node.main", "cutover", "--source", f"127.0.0.1:{d.source.port}",
             "--target", f"127.0.0.1:{d.rill.port}", "--sentinel", f"127.0.0.1:{d.sentinels[0].port}",
             "--name", SERVICE, "--pause-ms", "30000"],
            cwd=ROOT, capture_output=True, text=True, timeout=120,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "target promoted" in done.stdout
        print(done.stdout)  # the steps and their times (pytest -s shows them)
        wait_until(lambda: d.master_ports() == {d.rill.port}, "every sentinel to name the Rill node", TIMEOUT)
        wait_until(lambda: len(clients.added) >= before + 200, "writes to the Rill primary", TIMEOUT)
    finally:
        clients.finish()

    # Everything acknowledged is on the new primary, on its Rill replica and on the old
    # primary (now a replica of it, fed over Redis's protocol), and nothing else is.
    with d.rill.client() as rill:
        final_offset = int(rill.info("replication")["master_repl_offset"])
        assert rill.info("replication")["role"] == "master"
    for node in (d.rill, d.rill_replica, d.source):
        def caught_up(node: Member = node) -> bool:
            with node.client() as c:
                info = c.info("replication")
                return node is d.rill or (info.get("master_link_status") == "up"
                                          and int(info["slave_repl_offset"]) >= final_offset)
        wait_until(caught_up, f"{node.name} to catch up", TIMEOUT)
        with node.client() as c:
            stored = {entry_id: fields for entry_id, fields in c.xrange("orders")}
            missing = [entry_id for entry_id in clients.added if entry_id not in stored]
            assert not missing, f"{node.name} lost {len(missing)} acknowledged entries, e.g. {missing[:3]}"
            invented = [f for f in stored.values() if (f["producer"], f["n"]) not in clients.attempted]
            assert not invented, f"{node.name} holds entries nobody wrote: {invented[:3]}"
            for entry_id, fields in clients.added.items():
                assert stored[entry_id] == fields
            assert int(c.get("orders-counter")) >= max(clients.counter_acks)
            pending = {p["message_id"] for p in c.xpending_range("orders", "billing", "-", "+", 1_000_000)}
            assert not pending & clients.acked, f"{node.name}: acknowledged entries pending again"
    # Both sides of the cut-over saw acknowledged writes, from producers that never stopped.
    with d.source.client() as c:
        assert c.info("replication")["role"] == "slave"
    assert before >= 200 and len(clients.added) >= before + 200
