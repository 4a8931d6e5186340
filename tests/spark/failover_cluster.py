"""A three-node Rill cluster with three `rill sentinel`s for failover tests, every node behind a
loopback proxy (tests/replication_node/netproxy.py) at an address of its own, which it
announces: replicas, sentinels and clients that found it through Sentinel all cross the proxy,
so a test can cut a node off from everyone (`partition`), SIGKILL and restart it, or hand the
primary over with SENTINEL FAILOVER. Fenced mode (docs/safety.md) or the default one."""

from __future__ import annotations

import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field

import redis

from tests.conftest import ROOT, Server, free_port, start_rill, wait_for_port
from tests.replication_node.netproxy import NodeProxy

SERVICE = "rill"
LEASE_MS = 1000
DOWN_AFTER_MS = 1500
FENCED = ("--fenced-mode", "yes", "--fenced-replica-set-size", "3", "--fenced-lease-milliseconds", str(LEASE_MS))


@dataclass
class Member:
    """One node: its ports, its proxy address, its data directory and its process."""

    port: int
    repl_port: int
    ip: str  # the proxy's address: what the node announces and everyone else dials
    dir: str
    proxy: NodeProxy
    proc: Server | None = None

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"


@dataclass
class FailoverCluster:
    fenced: bool
    members: list[Member] = field(default_factory=list)
    sentinels: list[tuple[int, subprocess.Popen[bytes], str]] = field(default_factory=list)

    # -- starting and stopping -------------------------------------------------------------

    def start(self) -> None:
        used: set[str] = set()
        for _ in range(3):
            ip = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
            while ip in used:
                ip = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
            used.add(ip)
            port, repl_port = free_port(), free_port()
            self.members.append(Member(port, repl_port, ip, tempfile.mkdtemp(prefix="rill-failover-"),
                                       NodeProxy(ip, (port, repl_port))))
        first = self.members[0]
        self.start_node(first, None)
        for member in self.members[1:]:
            self.start_node(member, first)
        self._wait(lambda: self._synced(first), "the replicas to sync")
        self._start_sentinels(first)

    def start_node(self, member: Member, primary: Member | None) -> None:
        args = ["--repl-port", str(member.repl_port), "--repl-timeout", "2", "--repl-ping-replica-period", "1",
                "--replica-announce-ip", member.ip, "--appendonly", "yes", *(FENCED if self.fenced else ())]
        if primary is not None:
            args += ["--replicaof", primary.ip, str(primary.port)]
        member.proc = start_rill(*args, port=member.port, dir=member.dir)

    def _start_sentinels(self, primary: Member) -> None:
        ids = [secrets.token_hex(20) for _ in range(3)]
        ports = [free_port() for _ in range(3)]
        for i, (port, myid) in enumerate(zip(ports, ids)):
            directory = tempfile.mkdtemp(prefix="rill-failover-sentinel-")
            lines = [f"port {port}", "bind 127.0.0.1", f'dir "{directory}"',
                     f'logfile "{os.path.join(directory, "server.log")}"', f"sentinel myid {myid}",
                     f"sentinel monitor {SERVICE} {primary.ip} {primary.port} 2",
                     f"sentinel down-after-milliseconds {SERVICE} {DOWN_AFTER_MS}",
                     f"sentinel failover-timeout {SERVICE} 6000"]
            if self.fenced:
                lines += [f"sentinel fenced-mode {SERVICE} yes", f"sentinel fenced-lease-milliseconds {SERVICE} {LEASE_MS}"]
            lines += [f"sentinel known-sentinel {SERVICE} 127.0.0.1 {p} {other}"
                      for j, (p, other) in enumerate(zip(ports, ids)) if j != i]
            conf = os.path.join(directory, "sentinel.conf")
            with open(conf, "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
            with open(os.path.join(directory, "stderr.log"), "wb") as stderr:
                proc = subprocess.Popen([sys.executable, "-m", "node.main", "sentinel", conf], cwd=ROOT,
                                        stdout=subprocess.DEVNULL, stderr=stderr)
            wait_for_port(port, proc)  # type: ignore[arg-type]
            self.sentinels.append((port, proc, directory))
        self._wait(lambda: all(len(self._sentinel(p).sentinel_slaves(SERVICE)) == 2 for p in ports),
                   "the sentinels to know both replicas")

    def stop(self) -> None:
        for _, proc, directory in self.sentinels:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            shutil.rmtree(directory, ignore_errors=True)
        for member in self.members:
            member.proxy.heal()
            if member.proc is not None:
                member.proc.stop()
            member.proxy.close()
            shutil.rmtree(member.dir, ignore_errors=True)

    # -- what the cluster looks like -------------------------------------------------------

    @property
    def sentinel_addresses(self) -> str:
        return ",".join(f"127.0.0.1:{port}" for port, _, _ in self.sentinels)

    def _sentinel(self, port: int) -> redis.Redis:
        return redis.Redis(port=port, decode_responses=True, socket_timeout=2)

    def primary(self) -> Member:
        """The member the sentinels name as the primary."""
        with self._sentinel(self.sentinels[0][0]) as s:
            host, port = s.sentinel_get_master_addr_by_name(SERVICE)
        return next(m for m in self.members if m.ip == host and m.port == int(port))

    def _synced(self, primary: Member) -> bool:
        with redis.Redis(port=primary.port, socket_timeout=2) as c:
            return int(c.execute_command("WAIT", 2, 200)) == 2

    def wait_for_new_primary(self, old: Member, timeout: float = 60) -> Member:
        """Until every sentinel names another primary than `old`, and it answers as one."""
        def moved() -> Member | None:
            named = set()
            for port, _, _ in self.sentinels:
                with self._sentinel(port) as s:
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
        assert member.proc is not None
        os.kill(member.proc.proc.pid, signal.SIGKILL)
        member.proc.proc.wait()

    def restart_as_replica_of(self, member: Member, primary: Member) -> None:
        self.start_node(member, primary)

    def sentinel_failover(self) -> None:
        with self._sentinel(self.sentinels[0][0]) as s:
            s.execute_command("SENTINEL", "FAILOVER", SERVICE)
