"""A three-node Rill cluster with three `rill sentinel`s for failover tests, every node behind a
loopback proxy (tests/replication_node/netproxy.py) at an address of its own, which it
announces: replicas, sentinels and clients that found it through Sentinel all cross the proxy,
so a test can cut a node off from everyone (`partition`), SIGKILL and restart it, or hand the
primary over with SENTINEL FAILOVER. Fenced mode (docs/safety.md) or the default one. The
nodes and sentinels are members of a bench.cluster.Launcher (one temporary directory)."""

from __future__ import annotations

import random
import secrets
import time
from dataclasses import dataclass, field

import redis

from bench import cluster as launch
from bench.procs import free_port
from tests.replication_node.netproxy import NodeProxy

SERVICE = "rill"
LEASE_MS = 1000
DOWN_AFTER_MS = 1500
START_TIMEOUT = 10.0  # until a node or sentinel listens
FENCED = ("--fenced-mode", "yes", "--fenced-replica-set-size", "3", "--fenced-lease-milliseconds", str(LEASE_MS))


@dataclass
class Member:
    """One node: its process (a member of the cluster's launcher), its replication port and its
    proxy address."""

    process: launch.Member
    repl_port: int
    ip: str  # the proxy's address: what the node announces and everyone else dials
    proxy: NodeProxy

    @property
    def port(self) -> int:
        return self.process.port

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"


@dataclass
class FailoverCluster:
    fenced: bool
    launcher: launch.Launcher = field(default_factory=lambda: launch.Launcher(prefix="rill-failover-"))
    members: list[Member] = field(default_factory=list)
    sentinels: list[launch.Member] = field(default_factory=list)

    # -- starting and stopping -------------------------------------------------------------

    def start(self) -> None:
        used: set[str] = set()
        for i in range(3):
            ip = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
            while ip in used:
                ip = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
            used.add(ip)
            process = self.launcher.add(f"n{i}", "rill", ready="port")
            repl_port = free_port()
            self.members.append(Member(process, repl_port, ip, NodeProxy(ip, (process.port, repl_port))))
        first = self.members[0]
        self.start_node(first, None)
        for member in self.members[1:]:
            self.start_node(member, first)
        self._wait(lambda: self._synced(first), "the replicas to sync")
        self._start_sentinels(first)

    def start_node(self, member: Member, primary: Member | None) -> None:
        process = member.process
        args = ["--port", str(process.port), "--dir", process.dir, "--logfile", process.logfile,
                "--repl-port", str(member.repl_port), "--repl-timeout", "2", "--repl-ping-replica-period", "1",
                "--replica-announce-ip", member.ip, "--appendonly", "yes", *(FENCED if self.fenced else ())]
        if primary is not None:
            args += ["--replicaof", primary.ip, str(primary.port)]
        process.start(args, timeout=START_TIMEOUT)

    def _start_sentinels(self, primary: Member) -> None:
        ids = [secrets.token_hex(20) for _ in range(3)]
        sentinels = [self.launcher.add(f"s{i}", "rill-sentinel", ready="port") for i in range(3)]
        for i, (sentinel, myid) in enumerate(zip(sentinels, ids)):
            lines = [f"port {sentinel.port}", "bind 127.0.0.1", f'dir "{sentinel.dir}"',
                     f'logfile "{sentinel.logfile}"', f"sentinel myid {myid}",
                     f"sentinel monitor {SERVICE} {primary.ip} {primary.port} 2",
                     f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
                     f"sentinel failover-timeout {SERVICE} 6000"]
            if self.fenced:
                lines += [f"sentinel fenced-mode {SERVICE} yes", f"sentinel fenced-lease-milliseconds {SERVICE} {LEASE_MS}"]
            lines += [f"sentinel known-sentinel {SERVICE} 127.0.0.1 {other.port} {other_id}"
                      for j, (other, other_id) in enumerate(zip(sentinels, ids)) if j != i]
            sentinel.write_conf("\n".join(lines) + "\n")
            sentinel.start(timeout=START_TIMEOUT)
            self.sentinels.append(sentinel)
        self._wait(lambda: all(len(self._sentinel(s.port).sentinel_slaves(SERVICE)) == 2 for s in sentinels),
                   "the sentinels to know both replicas")

    def stop(self) -> None:
        for member in self.members:
            member.proxy.heal()  # a node cut off may still be told to stop
        self.launcher.close(15.0)
        for member in self.members:
            member.proxy.close()

    # -- what the cluster looks like -------------------------------------------------------

    @property
    def sentinel_addresses(self) -> str:
        return ",".join(f"127.0.0.1:{s.port}" for s in self.sentinels)

    def _sentinel(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, decode_responses=True, socket_timeout=2)

    def primary(self) -> Member:
        """The member the sentinels name as the primary."""
        with self._sentinel(self.sentinels[0].port) as s:
            host, port = s.sentinel_get_master_addr_by_name(SERVICE)
        return next(m for m in self.members if m.ip == host and m.port == int(port))

    def _synced(self, primary: Member) -> bool:
        with redis.Redis(port=primary.port, socket_timeout=2) as c:
            return int(c.execute_command("WAIT", 2, 200)) == 2

    def wait_for_new_primary(self, old: Member, timeout: float = 60) -> Member:
        """Until every sentinel names another primary than `old`, and it answers as one."""
        def moved() -> Member | None:
            named = set()
            for sentinel in self.sentinels:
                with self._sentinel(sentinel.port) as s:
                    named.add(tuple(s.sentinel_get_master_addr_by_name(SERVICE)))
            if len(named) != 1:
                return None
            host, port = named.pop()
            new = next(m for m in self.members if m.ip == host and m.port == int(port))
            if new is old:
                return None
            with redis.Redis(port=new.port, socket_timeout=2) as c:
                return new if c.execute_command("ROLE")[0] == b"master" else None

        return self._wait(moved, f"a primary other than {old.address}", timeout)

    @staticmethod
    def _wait(check, what: str, timeout: float = 60):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            try:
                last = check()
            except (redis.ConnectionError, redis.TimeoutError, StopIteration):
                last = None
            if last:
                return last
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")

    # -- faults ----------------------------------------------------------------------------

    def kill(self, member: Member) -> None:
        """SIGKILL (a crash), reaped."""
        member.process.kill()

    def restart_as_replica_of(self, member: Member, primary: Member) -> None:
        self.start_node(member, primary)

    def sentinel_failover(self) -> None:
        with self._sentinel(self.sentinels[0].port) as s:
            s.execute_command("SENTINEL", "FAILOVER", SERVICE)
