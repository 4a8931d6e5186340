"""Real redis-server nodes and Debian's redis-sentinel for differential tests (and Rill's, to
compare): each in its own directory on a free loopback port, members of one
bench.cluster.Launcher, stopped by the caller (a context manager stops everything it
started, whatever happens)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from bench.cluster import Launcher
from bench.procs import Server


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: `make test` installs Debian's redis-server and redis-sentinel")
    return path


class Cluster(Launcher):
    """What a test started, by name: nodes and sentinels of a bench.cluster.Launcher, each
    ready once it listens (a test may probe its start-up itself, or give it a password) and
    run in its own directory (redis-sentinel writes its working directory into the config
    it rewrites when the file names no `dir`)."""

    def __init__(self) -> None:
        super().__init__(prefix="sentinel-diff-")

    @property
    def servers(self) -> dict[str, Server]:
        return {name: m.server for name, m in self.members.items() if m.server is not None}

    @property
    def ports(self) -> dict[str, int]:
        return {name: m.port for name, m in self.members.items()}

    @property
    def dirs(self) -> dict[str, str]:
        return {name: m.dir for name, m in self.members.items()}

    def node(self, name: str, replica_of: str | None = None, kind: str = "redis") -> int:
        """A redis-server, or a Rill node for kind "rill", optionally a replica of another."""
        member = self.add(name, kind, ready="port", in_own_dir=True)
        port, d = str(member.port), member.dir
        log = ["--logfile", member.logfile]
        if kind == "redis":
            args = ["--port", port, "--bind", "127.0.0.1", "--dir", d, "--save", "", "--appendonly", "no", *log,
                    # A replica (re)syncs at once, not after the default 5 s wait for others.
                    "--repl-diskless-sync-delay", "0"]
        else:
            args = ["--port", port, "--bind", "127.0.0.1", "--dir", d, *log]
        if replica_of is not None:
            args += ["--replicaof", "127.0.0.1", str(self.ports[replica_of])]
        member.start(args)  # 30 s: a Python process on a loaded machine starts slowly
        return member.port

    def sentinel(self, name: str, conf: str | Callable[[int, str], str], kind: str = "redis") -> int:
        """A sentinel (Debian's redis-sentinel, or `rill sentinel` for kind "rill") with this
        sentinel.conf (or a function of its port and directory returning it)."""
        member = self.add(name, f"{kind}-sentinel", ready="port", in_own_dir=True)
        member.write_conf(conf(member.port, member.dir) if callable(conf) else conf)
        member.start()
        return member.port

    def rill_sentinel(self, name: str, conf: str | Callable[[int, str], str]) -> int:
        return self.sentinel(name, conf, kind="rill")

    def conf_path(self, name: str) -> str:
        return self.members[name].conf

    def read_conf(self, name: str) -> str:
        with open(self.conf_path(name)) as f:
            return f.read()


@contextmanager
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.close()


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def watched_master(c: Cluster, down_after: int, failover_timeout: int | None = None) -> None:
    """A master ("m") with two replicas ("r1", "r2") and three sentinels ("s0".."s2")
    monitoring it as "mymaster" with quorum 2."""
    c.node("m")
    c.node("r1", replica_of="m")
    c.node("r2", replica_of="m")
    master = c.ports["m"]
    extra = f"sentinel failover-timeout mymaster {failover_timeout}\n" if failover_timeout else ""
    for i in range(3):
        c.sentinel(f"s{i}", lambda port, d: (
            f"port {port}\nbind 127.0.0.1\ndir {d}\nsentinel monitor mymaster 127.0.0.1 {master} 2\n"
            f"sentinel down-after-milliseconds mymaster {down_after}\n{extra}"
        ))


def run_sentinel_expecting_failure(conf: str) -> str:
    """Start redis-sentinel on a config it must refuse; return what it printed."""
    d = tempfile.mkdtemp(prefix="sentinel-diff-bad-")
    try:
        path = os.path.join(d, "sentinel.conf")
        with open(path, "w") as f:
            f.write(conf)
        done = subprocess.run([binary("redis-sentinel"), path], cwd=d, capture_output=True, timeout=20)
        assert done.returncode != 0, "redis-sentinel accepted the configuration"
        return done.stderr.decode() + done.stdout.decode()
    finally:
        shutil.rmtree(d, ignore_errors=True)
