"""The cluster as the lab sees and drives it (`Cluster`: its nodes and sentinels, who is
primary, whether every node follows it in sync), and the lab's own cluster (`LabCluster`):
nodes and sentinels started in their namespaces from config files, with the process faults
(SIGKILL and restart, SIGSTOP/SIGCONT). Every process the lab starts it stops, also on
exceptions (`stop_all` is called by the runner's `finally`). A user's deployment is a `Cluster`
of processes the lab drives but did not start (`chaos.deployment`).

In the lab, nodes start as n1 primary and the others its replicas; the sentinels then monitor
n1. A node is restarted from the same config file, which Sentinel may have rewritten meanwhile
(CONFIG REWRITE in its promotion block), so it comes back in the role Sentinel last gave it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Protocol

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from chaos.clocks import Clock, shim_path
from chaos.diskfs import DiskControl
from chaos.targets import SERVICE, Settings, Target, node_argv, node_config, sentinel_argv, sentinel_config
from chaos.tls import TlsFiles, make_tls_files
from chaos.topology import Lab, LabError, Member

ADMIN_TIMEOUT = 1.0


class Proc(Protocol):
    """A node or a sentinel as the nemesis, the monitor and the runner drive it."""

    member: Member
    paused: bool
    clock: Clock | None  # its clocks, when the lab controls them
    disk: DiskControl | None  # its dir's filesystem, with the disk nemesis

    def start(self) -> None: ...

    def kill(self) -> None: ...

    def pause(self) -> None: ...

    def resume(self) -> None: ...

    def alive(self) -> bool:
        """Running, as far as the lab knows."""
        ...

    def admin(self, timeout: float = ADMIN_TIMEOUT) -> redis.Redis:
        """A client for the lab's own use, around the proxies."""
        ...


@dataclass
class Process:
    """One node or sentinel: how to start it, and the running process."""

    member: Member
    argv: list[str]
    workdir: str
    lab: Lab
    popen: subprocess.Popen[bytes] | None = None
    paused: bool = False
    starts: int = 0
    clock: Clock | None = None  # its clocks, when the lab controls them (the clock shim is built)
    disk: DiskControl | None = None  # its dir's filesystem, with the disk nemesis
    tls: TlsFiles | None = None  # with --tls: it serves TLS only, and the lab's clients use these

    def start(self) -> None:
        """Starts the process, unless it is running: overlapping faults (a kill inside a host
        crash) may both restart it, and a second instance would find its ports taken."""
        if self.alive():
            return
        log = open(os.path.join(self.workdir, f"stdout-{self.starts}.log"), "wb")  # noqa: SIM115
        shim = shim_path()
        env = {**os.environ, **self.clock.env(shim)} if self.clock is not None and shim else None
        self.popen = subprocess.Popen(self.lab.exec_argv(self.member, self.argv), stdout=log,
                                      stderr=subprocess.STDOUT, start_new_session=True, env=env)
        log.close()
        self.paused = False
        self.starts += 1

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill(self) -> None:
        """SIGKILL (a crash: nothing flushed that was not already written)."""
        if self.popen is not None and self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        self.paused = False

    def pause(self) -> None:
        if self.alive() and self.popen is not None:
            self.popen.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.alive() and self.popen is not None:
            self.popen.send_signal(signal.SIGCONT)
        self.paused = False

    def admin(self, timeout: float = ADMIN_TIMEOUT) -> redis.Redis:
        """A client on the real address (around the proxies), for the lab's own use (with
        --tls, a TLS one)."""
        self.lab.check_in_hub()
        tls: dict[str, Any] = {"ssl": True, **self.tls.client_kwargs()} if self.tls else {}
        return redis.Redis(self.member.real_ip, self.member.ports[0], socket_timeout=timeout,
                           socket_connect_timeout=timeout, decode_responses=True, **tls)


class Cluster:
    """Nodes and sentinels by member name, and what the lab reads of them. `members` names
    every member by the address it announces; `service` is the name the sentinels monitor."""

    def __init__(self, members: dict[str, Member], service: str = SERVICE) -> None:
        self.members = members
        self.service = service
        self.nodes: dict[str, Proc] = {}
        self.sentinels: dict[str, Proc] = {}

    def processes(self) -> list[Proc]:
        return [*self.nodes.values(), *self.sentinels.values()]

    def unsupported(self, fault: str, victim: str) -> str | None:
        """Why `fault` cannot be applied to `victim` here (None: it can; the lab can do them all)."""
        return None

    @staticmethod
    def try_call(proc: Proc, call: Any) -> Any:
        """call(client) on the process's admin client; None when it fails."""
        client = proc.admin()
        try:
            return call(client)
        except (redis.RedisError, OSError):
            return None
        finally:
            client.close()

    # -- what the cluster looks like -------------------------------------------------------

    def name_of(self, host: str, port: int) -> str | None:
        """The member announced at host:port."""
        for member in self.members.values():
            if member.announced_ip == host and port in member.ports:
                return member.name
        return None

    def role(self, name: str) -> list[Any] | None:
        """ROLE of a node (None when it does not answer)."""
        proc = self.nodes[name]
        if proc.paused or not proc.alive():
            return None
        result = self.try_call(proc, lambda c: c.execute_command("ROLE"))
        return list(result) if isinstance(result, (list, tuple)) else None

    def sentinel_primary(self) -> str | None:
        """The primary most answering sentinels name (None if none answers)."""
        votes: dict[str, int] = {}
        for proc in self.sentinels.values():
            if proc.paused or not proc.alive():
                continue
            addr = self.try_call(proc, lambda c: c.sentinel_get_master_addr_by_name(self.service))
            if addr:
                name = self.name_of(str(addr[0]), int(addr[1]))
                if name:
                    votes[name] = votes.get(name, 0) + 1
        return max(votes, key=lambda n: votes[n]) if votes else None

    def in_sync(self, primary: str) -> bool:
        """The primary says it is one and lists every other node as its replica, and each of
        them is connected to it and has reached the offset the primary had when this check
        began. (Not the offsets the primary lists: those are the replicas' acks, sent once a
        second, while the sentinels' hellos, PUBLISHed on the primary, move its offset every
        second or so: on a loaded machine they can fail to line up for the whole settle
        timeout, as in a redis partition-primary smoke run whose five nodes all held the same
        878 entries.)"""
        role = self.role(primary)
        if not role or role[0] != "master":
            return False
        offset = int(role[1])
        replicas = {self.name_of(str(r[0]), int(r[1])) for r in role[2]}
        for name in self.nodes:
            if name == primary:
                continue
            mine = self.role(name)
            if not mine or mine[0] != "slave" or mine[3] != "connected":
                return False
            if self.name_of(str(mine[1]), int(mine[2])) != primary or name not in replicas or int(mine[4]) < offset:
                return False
        return True

    def settled(self) -> str | None:
        """The primary, once sentinels agree on it and every node follows it in sync."""
        primary = self.sentinel_primary()
        return primary if primary and self.in_sync(primary) else None


class LabCluster(Cluster):
    """The lab's own cluster: processes it starts from the target's programs and configs."""

    def __init__(self, lab: Lab, target: Target, settings: Settings) -> None:
        super().__init__(lab.members)
        self.lab, self.target, self.settings = lab, target, settings
        self._own: list[Process] = []
        self.tls: TlsFiles | None = None
        # with --tls: what a plaintext PING to each node's and sentinel's port got (it must fail)
        self.plaintext_refused: dict[str, str] = {}

    def start(self, ready_timeout: float = 30.0, timings: dict[str, float] | None = None) -> None:
        """Writes the configs, starts the nodes (n1 primary), waits until every replica is
        in sync, starts the sentinels and waits until they know every replica and each other.
        With --tls, the run's certificates first, and at the end the check that no process
        answers a plaintext client."""
        members = self.lab.members.values()
        node_members = [m for m in members if m.kind == "node"]
        first = node_members[0]
        if self.settings.tls:
            servers = [m for m in members if m.kind in ("node", "sentinel")]
            self.tls = make_tls_files(os.path.join(self.lab.workdir, "tls"),
                                      sorted({ip for m in servers for ip in (m.real_ip, m.announced_ip)}))
        for member in node_members:
            workdir = self._workdir(member)
            conf = os.path.join(workdir, "node.conf")
            primary = None if member is first else first.address
            disk = None
            if self.settings.disk_nemesis:
                disk = DiskControl(os.path.join(workdir, "backing"), os.path.join(workdir, "data"),
                                   os.path.join(workdir, "diskfs.log"))
            with open(conf, "w", encoding="utf-8") as f:
                f.write(node_config(self.target, self.settings, member.real_ip, member.announced_ip, workdir, primary,
                                    disk.mountpoint if disk else None, self.tls))
            self._own.append(Process(member, node_argv(self.target, conf), workdir, self.lab, disk=disk,
                                     tls=self.tls))
            self.nodes[member.name] = self._own[-1]
        for member in (m for m in members if m.kind == "sentinel"):
            workdir = self._workdir(member)
            conf = os.path.join(workdir, "sentinel.conf")
            with open(conf, "w", encoding="utf-8") as f:
                f.write(sentinel_config(self.target, self.settings, member.real_ip, member.announced_ip, workdir,
                                        first.address, self.tls))
            shutil.copyfile(conf, f"{conf}.initial")  # what a sentinel restarted from a stale config gets
            self._own.append(Process(member, sentinel_argv(self.target, conf), workdir, self.lab, tls=self.tls))
            self.sentinels[member.name] = self._own[-1]
        if shim_path() is not None:
            for proc in self._own:
                proc.clock = Clock(os.path.join(proc.workdir, "clock"))
        nodes = [p for p in self._own if p.member.kind == "node"]
        sentinels = [p for p in self._own if p.member.kind == "sentinel"]
        phases = timings if timings is not None else {}
        mark = time.monotonic()

        def phase(name: str) -> None:
            nonlocal mark
            phases[name] = round(time.monotonic() - mark, 2)
            mark = time.monotonic()
        for proc in nodes:
            proc.start()
        deadline = time.monotonic() + ready_timeout
        for proc in nodes:
            self._wait_ping(proc, deadline)
        phase("nodes_up_s")
        self._wait(deadline, lambda: self.in_sync(first.name), "the replicas to sync with n1")
        phase("replicas_synced_s")
        for proc in sentinels:
            proc.start()
        for proc in sentinels:
            self._wait_ping(proc, deadline)
        phase("sentinels_up_s")
        self._wait(deadline, self._sentinels_know_everyone, "the sentinels to discover replicas and each other")
        phase("sentinels_know_everyone_s")
        for proc in sentinels:
            conf = proc.argv[-1]
            shutil.copyfile(conf, f"{conf}.ready")
        if self.tls is not None:
            self._check_tls_only()

    def _check_tls_only(self) -> None:
        """Every node and sentinel refuses a plaintext client on its port: what --tls
        promises (the lab's own clients just reached them all over TLS)."""
        for proc in self._own:
            # once: redis-py's default retries a refused PING with backoff
            client = redis.Redis(proc.member.real_ip, proc.member.ports[0], socket_timeout=ADMIN_TIMEOUT,
                                 socket_connect_timeout=ADMIN_TIMEOUT, retry=Retry(NoBackoff(), 0))
            try:
                client.ping()
            except (redis.RedisError, OSError) as exc:
                self.plaintext_refused[proc.member.name] = f"{type(exc).__name__}: {exc}"
                continue
            finally:
                client.close()
            raise LabError(f"{proc.member.name} answered a plaintext PING on port {proc.member.ports[0]}: "
                           "it does not serve TLS only")

    def _workdir(self, member: Member) -> str:
        path = os.path.join(self.lab.workdir, member.name)
        os.makedirs(path, exist_ok=True)
        return path

    def _wait_ping(self, proc: Process, deadline: float) -> None:
        def answers() -> bool:
            if not proc.alive():
                raise LabError(f"{proc.member.name} exited (code {proc.popen.returncode if proc.popen else '?'}); "
                               f"see {proc.workdir}")
            return self.try_call(proc, lambda c: c.ping()) is True

        self._wait(deadline, answers, f"{proc.member.name} to answer PING")

    def _wait(self, deadline: float, ready: Any, what: str) -> None:
        while not ready():
            if time.monotonic() > deadline:
                raise LabError(f"timed out waiting for {what}")
            time.sleep(0.1)

    def _sentinels_know_everyone(self) -> bool:
        for proc in self.sentinels.values():
            info = self.try_call(proc, lambda c: c.sentinel_master(self.service))
            if not info or int(info.get("num-slaves", 0)) < len(self.nodes) - 1 \
                    or int(info.get("num-other-sentinels", 0)) < len(self.sentinels) - 1:
                return False
        return True

    def stop_all(self) -> None:
        for proc in self.processes():
            proc.resume()
            proc.kill()
            if proc.clock is not None:
                proc.clock.close()
            if proc.disk is not None:
                proc.disk.close()
