"""A primary, two replicas and three of Debian's redis-sentinel processes watching them, on
free loopback ports in one temporary directory: the cluster the failover bench
(bench/failover.py) and the Sentinel interoperability tests (tests/sentinel_interop/) fault.

The nodes are redis-server or Rill nodes (`kind`), each started from its own config file, so
the sentinels' `CONFIG REWRITE` rewrites it and a restarted node comes back with what Sentinel
made of it, as in production. Black-box: processes, signals and RESP (redis-py) only.
The processes are members of a bench.cluster.Launcher: `close()` stops everything and
removes the directory; so does its atexit hook, should the caller die first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import redis
from redis.sentinel import MasterNotFoundError, Sentinel

from bench.cluster import Launcher, Member
from bench.procs import BenchError, free_port

SERVICE = "mymaster"
T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """The sentinels' knobs (the same for every kind of node)."""

    down_after_ms: int = 1000
    # A split vote is retried after 2 x this; long enough for a slow replica to resync.
    failover_timeout_ms: int = 5000
    quorum: int = 2


class SentinelCluster:
    """nodes[0] starts as the primary, nodes[1..2] as its replicas; sentinels[0..2] monitor
    it as SERVICE with quorum 2."""

    def __init__(self, kind: str, settings: Settings = Settings()) -> None:
        if kind not in ("redis", "rill"):
            raise ValueError(f"unknown node kind {kind!r}")
        self.kind = kind
        self.settings = settings
        self.launcher = Launcher(prefix=f"sentinel-cluster-{kind}-")
        self.nodes = [self.launcher.add(f"n{i}", kind) for i in range(3)]
        self.sentinels = [self.launcher.add(f"s{i}", "redis-sentinel") for i in range(3)]

    # -- lifecycle ------------------------------------------------------------------------

    def start(self, timeout: float = 60.0) -> None:
        """Start the nodes, wait for the replicas to sync, start the sentinels and wait until
        they see the whole cluster (ready())."""
        primary = self.nodes[0]
        for node in self.nodes:
            self._write_node_config(node, None if node is primary else primary)
            node.start()
        for sentinel in self.sentinels:
            self._write_sentinel_config(sentinel, primary)
            sentinel.start()
        self.wait(self.ready, timeout, "the sentinels to see the primary, two replicas and each other")

    def close(self) -> None:
        self.launcher.close()

    def __enter__(self) -> SentinelCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _write_node_config(self, node: Member, primary: Member | None) -> None:
        lines = [f"port {node.port}", "bind 127.0.0.1", f"dir {node.dir}", f"logfile {node.logfile}", "appendonly no"]
        if self.kind == "rill":
            lines.append(f"repl-port {free_port()}")
        else:
            # No RDB on disk; full syncs stream over the socket at once (Rill's always do).
            lines += ['save ""', "repl-diskless-sync yes", "repl-diskless-sync-delay 0"]
        if primary is not None:
            lines.append(f"replicaof 127.0.0.1 {primary.port}")
        node.write_conf("# written by bench/sentinel_cluster.py; Sentinel may rewrite it\n" + "\n".join(lines) + "\n")

    def _write_sentinel_config(self, sentinel: Member, primary: Member) -> None:
        s = self.settings
        lines = [
            f"port {sentinel.port}", "bind 127.0.0.1", f"dir {sentinel.dir}", f"logfile {sentinel.logfile}",
            f"sentinel monitor {SERVICE} 127.0.0.1 {primary.port} {s.quorum}",
            f"sentinel down-after-milliseconds {SERVICE} {s.down_after_ms}",
            f"sentinel failover-timeout {SERVICE} {s.failover_timeout_ms}",
            f"sentinel parallel-syncs {SERVICE} 2",
        ]
        sentinel.write_conf("\n".join(lines) + "\n")

    # -- what the sentinels and nodes say -----------------------------------------------

    def node_at(self, port: int) -> Member:
        return next(n for n in self.nodes if n.port == port)

    def master_ports(self) -> list[int | None]:
        """Each sentinel's SENTINEL GET-MASTER-ADDR-BY-NAME port (None: no answer)."""
        ports: list[int | None] = []
        for sentinel in self.sentinels:
            try:
                with sentinel.client(0.5) as c:
                    addr = c.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", SERVICE)
                ports.append(int(addr[1]) if addr else None)
            except (redis.ConnectionError, redis.TimeoutError):
                ports.append(None)
        return ports

    def agreed_primary(self) -> Member | None:
        """The node every sentinel names as the primary, if they agree."""
        ports = self.master_ports()
        if ports[0] is None or any(p != ports[0] for p in ports):
            return None
        return self.node_at(ports[0])

    def role(self, node: Member) -> dict[str, str]:
        """The node's INFO replication (empty if it does not answer)."""
        try:
            with node.client(1.0) as c:
                return {k: str(v) for k, v in c.info("replication").items()}
        except (redis.ConnectionError, redis.TimeoutError):
            return {}

    def follows(self, node: Member, primary: Member) -> bool:
        """Whether `node` is a replica of `primary` with its link up."""
        fields = self.role(node)
        return (fields.get("role") == "slave" and fields.get("master_port") == str(primary.port)
                and fields.get("master_link_status") == "up")

    def sentinel_view(self, sentinel: Member) -> dict[str, Any]:
        """SENTINEL MASTER and REPLICAS of the service, as redis-py parses them."""
        with sentinel.client(1.0) as c:
            return {"master": c.sentinel_master(SERVICE), "replicas": c.sentinel_slaves(SERVICE)}

    def ready(self) -> bool:
        """Every sentinel agrees on a primary that says it is one, sees it healthy, knows two
        healthy replicas that follow it and the two other sentinels."""
        primary = self.agreed_primary()
        if primary is None or self.role(primary).get("role") != "master":
            return False
        for sentinel in self.sentinels:
            try:
                view = self.sentinel_view(sentinel)
            except (redis.ConnectionError, redis.TimeoutError):
                return False
            master = view["master"]
            if master["is_sdown"] or master["is_odown"] or master.get("num-other-sentinels") != 2:
                return False
            healthy = [r for r in view["replicas"] if not r["is_sdown"] and not r["is_disconnected"]
                       and r.get("master-link-status") == "ok"]
            if len(healthy) != 2:
                return False
        return all(self.follows(n, primary) for n in self.nodes if n is not primary)

    def sentinel_events(self, name: str) -> int:
        """How many times the sentinels logged an event (`+tilt`, `+switch-master`, ...)."""
        count = 0
        for sentinel in self.sentinels:
            try:
                with open(sentinel.logfile, encoding="utf-8", errors="replace") as f:
                    count += sum(1 for line in f if f" {name} " in line)
            except OSError:
                pass
        return count

    def sentinel_client(self, timeout: float = 1.0) -> Sentinel:
        """redis-py's Sentinel client over the three sentinels."""
        return Sentinel([("127.0.0.1", s.port) for s in self.sentinels], socket_timeout=timeout,  # type: ignore[no-untyped-call]
                        socket_connect_timeout=timeout)

    def discover_primary_port(self, sentinel: Sentinel) -> int | None:
        """Where a redis-py client would write now (Sentinel.discover_master)."""
        try:
            return int(sentinel.discover_master(SERVICE)[1])  # type: ignore[no-untyped-call]
        except (MasterNotFoundError, redis.ConnectionError, redis.TimeoutError):
            return None

    @staticmethod
    def wait(check: Callable[[], T], timeout: float, what: str, interval: float = 0.05) -> T:
        """Poll `check` until it returns something truthy; BenchError after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise BenchError(f"timed out after {timeout:.0f}s waiting for {what}")
            time.sleep(interval)
