"""Real redis-server nodes and Debian's redis-sentinel for differential tests: each in its own
temporary directory on a free loopback port, stopped by the caller (a context manager stops
everything it started, whatever happens)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest

from bench.procs import Server, free_port, wait_for_port


def binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is not installed: `make test` installs Debian's redis-server and redis-sentinel")
    return path


@dataclass
class Cluster:
    """What a test started: servers by name, their ports and directories."""

    servers: dict[str, Server] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    dirs: dict[str, str] = field(default_factory=dict)

    def node(self, name: str, replica_of: str | None = None, kind: str = "redis") -> int:
        """A redis-server, or a Rill node for kind "rill", optionally a replica of another."""
        port = free_port()
        d = tempfile.mkdtemp(prefix=f"sentinel-diff-{name}-")
        log = ["--logfile", os.path.join(d, "server.log")]
        if kind == "redis":
            args = [binary("redis-server"), "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "",
                    "--appendonly", "no", *log,
                    # A replica (re)syncs at once, not after the default 5 s wait for others.
                    "--repl-diskless-sync-delay", "0"]
        else:
            args = [sys.executable, "-m", "node.main", "node", "--port", str(port), "--bind", "127.0.0.1",
                    "--dir", d, *log]
        if replica_of is not None:
            args += ["--replicaof", "127.0.0.1", str(self.ports[replica_of])]
        self._start(name, kind, port, d, args)
        return port

    def sentinel(self, name: str, conf: str | Callable[[int, str], str], kind: str = "redis") -> int:
        """A sentinel (Debian's redis-sentinel, or `rill sentinel` for kind "rill") with this
        sentinel.conf (or a function of its port and directory returning it)."""
        port = free_port()
        d = os.path.realpath(tempfile.mkdtemp(prefix=f"sentinel-{kind}-{name}-"))
        text = conf(port, d) if callable(conf) else conf
        path = os.path.join(d, "sentinel.conf")
        with open(path, "w") as f:
            f.write(text)
        program = [binary("redis-sentinel")] if kind == "redis" else [sys.executable, "-m", "node.main", "sentinel"]
        self._start(name, f"{kind}-sentinel", port, d, [*program, path])
        return port

    def rill_sentinel(self, name: str, conf: str | Callable[[int, str], str]) -> int:
        return self.sentinel(name, conf, kind="rill")

    def restart(self, name: str) -> None:
        """Start a stopped process again with the same arguments (same port, directory)."""
        old = self.servers[name]
        self._start(name, old.kind, old.port, old.dir, old.args)

    def _start(self, name: str, kind: str, port: int, d: str, args: list[str]) -> None:
        with open(os.path.join(d, "stderr.log"), "wb") as err:
            proc = subprocess.Popen(args, cwd=d, stdout=subprocess.DEVNULL, stderr=err)
        self.servers[name], self.ports[name], self.dirs[name] = Server(kind, port, proc, d, args), port, d
        wait_for_port(port, proc, timeout=30.0)  # a Python process on a loaded machine starts slowly

    def conf_path(self, name: str) -> str:
        return os.path.join(self.dirs[name], "sentinel.conf")

    def read_conf(self, name: str) -> str:
        with open(self.conf_path(name)) as f:
            return f.read()

    def kill(self, name: str) -> None:
        self.servers[name].kill()

    def pause(self, name: str) -> None:
        self.servers[name].pause()

    def resume(self, name: str) -> None:
        self.servers[name].resume()

    def stop(self) -> None:
        for server in self.servers.values():  # all told at once, then each waited for
            if server.alive():
                server.resume()
                server.proc.terminate()
        for server in self.servers.values():
            server.stop(10)
        for d in self.dirs.values():
            shutil.rmtree(d, ignore_errors=True)


@contextmanager
def cluster() -> Iterator[Cluster]:
    c = Cluster()
    try:
        yield c
    finally:
        c.stop()


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
