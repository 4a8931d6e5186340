"""Server processes for the benchmarks: start redis-server and a Rill node on free loopback
ports, read their CPU time and memory from /proc, and always stop them (an atexit hook backs
up the callers' try/finally, so an exception or Ctrl-C never leaves a server behind).
"""

from __future__ import annotations

import atexit
import os
import platform
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import redis

from bench.client import RespClient, answers_ping

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_CLK_TCK = os.sysconf("SC_CLK_TCK")
_running: list[Server] = []


class BenchError(Exception):
    """The benchmark cannot go on (a server did not start or died)."""


def steal_share(before: tuple[int, int], after: tuple[int, int]) -> float:
    """The share of this VM's CPU the hypervisor gave to other guests between two readings of
    host_steal_ticks(): how much of a run's speed was the host's, not the code's."""
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total > 0 else 0.0


def busy_cpu_seconds() -> float:
    """CPU time this machine spent on anything but idling (all CPUs, since boot), from
    /proc/stat: with our processes' own CPU subtracted, what other users took meanwhile (other
    engineers' tests share this VM, which the host's steal does not show)."""
    with open("/proc/stat", "rb") as f:
        user, nice, system, _idle, _iowait, irq, softirq = (int(v) for v in f.readline().split()[1:8])
    return (user + nice + system + irq + softirq) / _CLK_TCK


@dataclass
class Server:
    """One server process listening on 127.0.0.1:port (a Rill node, a redis-server): what the
    benchmarks and the tests start, stop, pause and measure."""

    kind: str  # "redis" or "rill"
    port: int
    proc: subprocess.Popen[bytes]
    dir: str  # its working directory (its log is server.log there)
    args: list[str] = field(default_factory=list)
    stop_signal: int = signal.SIGTERM
    # stop() removes `dir`: a benchmark's throwaway directory. A test keeps it, to read the
    # log afterwards or to start another server on the same files.
    owns_dir: bool = False

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def client(self, **kwargs: Any) -> redis.Redis:
        return redis.Redis(host="127.0.0.1", port=self.port, **kwargs)

    @property
    def log(self) -> str:
        """server.log in its directory ("" before the server wrote one)."""
        path = os.path.join(self.dir, "server.log")
        if os.path.exists(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        return ""

    def cpu_seconds(self) -> float:
        """utime + stime of the process (all its threads), from /proc/<pid>/stat."""
        with open(f"/proc/{self.pid}/stat", "rb") as f:
            raw = f.read()
        # The command name (field 2) may hold spaces: the fields after it follow the last ')'.
        fields = raw[raw.rindex(b")") + 2 :].split()
        utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
        return (utime + stime) / _CLK_TCK

    def rss_bytes(self) -> int:
        with open(f"/proc/{self.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def pause(self) -> None:
        """SIGSTOP: the process stalls (no crash, no replies) until `resume`."""
        self.proc.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.proc.send_signal(signal.SIGCONT)

    def kill(self) -> None:
        """SIGKILL (a crash), reaped."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._forget()

    def stop(self, timeout: float = 15.0) -> int:
        """Graceful stop (`stop_signal`: SIGTERM, or SIGINT for a profiled node so cProfile
        writes its file; a paused process is resumed first, as it cannot act on it), then
        SIGKILL if it does not exit in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(self.stop_signal)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._forget()
        return self.proc.returncode

    def _forget(self) -> None:
        if self in _running:
            _running.remove(self)
        if self.owns_dir:
            shutil.rmtree(self.dir, ignore_errors=True)


# Ports handed out so far by this process, so two servers started in a row never get the same.
_handed_out: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as f:
            low, high = f.read().split()[:2]
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default


def free_port() -> int:
    """A loopback port nothing listens on, for a server about to be started. Taken outside
    the kernel's ephemeral range: a port bound with 0 comes from that range, and an outgoing
    connection (a client, a replica link) may take it before the server binds it. Above the
    range when there is room (61000-65535 by default), which also puts a Rill node's derived
    replication port (RESP port + 10000) past 65535, so the node lets the kernel choose it."""
    low, high = _ephemeral_range()
    first, last = (high + 1, 65535) if 65535 - high >= 2000 else (10_000, low - 1)
    if last - first < 1000:  # an unusual range: let the kernel choose
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return int(s.getsockname()[1])
    rng = random.Random()
    while True:
        port = rng.randint(first, last)
        if port in _handed_out:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out.add(port)
        return port


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout: float = 10.0) -> None:
    """Until something listens on `port` (a node that is loading its data listens, and answers
    -LOADING, before it is ready: `wait_pong` waits for that)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.02)
    raise TimeoutError(f"nothing listening on {port} after {timeout}s")


def _wait_ready(server: Server, timeout: float) -> None:
    """Until the server answers PING (a listening socket alone may precede readiness)."""
    wait_pong(server.port, server.proc, server.kind, timeout)


def wait_pong(port: int, proc: subprocess.Popen[bytes], name: str, timeout: float) -> None:
    """Until the process listening on `port` answers PING; BenchError if it exits first or
    does not answer within `timeout`."""
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise BenchError(f"{name} exited with code {proc.returncode} before it was ready")
        try:
            if answers_ping(port, 0.5):
                return
        except OSError as exc:
            last = str(exc)
        time.sleep(0.05)
    raise BenchError(f"{name} on port {port} not ready after {timeout}s ({last})")


def _launch(kind: str, args: list[str], workdir: str, port: int, stop_signal: int) -> Server:
    proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    server = Server(kind, port, proc, workdir, args, stop_signal, owns_dir=True)
    _running.append(server)
    try:
        _wait_ready(server, 20.0)
    except BaseException:
        server.stop()
        raise
    return server


def start_redis(*extra: str, copy_dump: str | None = None) -> Server:
    """A redis-server with `extra` flags (--tls-port …); `copy_dump`: an RDB file it starts from."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise BenchError("redis-server is not installed (`make bench` installs Debian's redis-server)")
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-redis-")
    if copy_dump is not None:
        shutil.copyfile(copy_dump, os.path.join(workdir, "dump.rdb"))
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
            "--dir", workdir, "--logfile", os.path.join(workdir, "server.log"), *extra]
    return _launch("redis", args, workdir, port, signal.SIGTERM)


def start_rill(profile_path: str | None = None, copy_dump: str | None = None, extra: Sequence[str] = ()) -> Server:
    """A Rill node; with `profile_path` it runs under cProfile, which writes the profile when
    the node exits after SIGINT; `copy_dump`: a (Redis or Rill) dump.rdb it starts from;
    `extra`: more flags (--tls-port …)."""
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-rill-")
    if copy_dump is not None:
        shutil.copyfile(copy_dump, os.path.join(workdir, "dump.rdb"))
    python = [sys.executable]
    if profile_path:
        python += ["-m", "cProfile", "-o", profile_path]
    args = [*python, "-m", "node.main", "node", "--port", str(port), "--dir", workdir,
            "--logfile", os.path.join(workdir, "server.log"), *extra]
    return _launch("rill", args, workdir, port, signal.SIGINT if profile_path else signal.SIGTERM)


def stop_all() -> None:
    for server in list(_running):
        server.stop()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    # SystemExit unwinds the callers' finally blocks, which stop the servers.
    raise SystemExit(128 + signum)


def install_exit_handlers() -> None:
    """Stop every started server on interpreter exit and on SIGTERM."""
    atexit.register(stop_all)
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)


def server_version(server: Server) -> str:
    with RespClient(server.port) as client:
        info = client.call("INFO", "server")
    if isinstance(info, bytes):
        for line in info.decode().splitlines():
            if line.startswith("redis_version:"):
                return line.split(":", 1)[1].strip()
    return "unknown"


def environment(servers: dict[str, Server]) -> dict[str, Any]:
    """What a run of the throughput-style suites ran on (the JSON's `environment` block)."""
    tool = subprocess.run(["redis-benchmark", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "redis_benchmark": tool,
        "redis_server_version": server_version(servers["redis"]),
        "rill_reported_version": server_version(servers["rill"]),
        # Compiled with mypyc (make native) or running from the .py sources.
        "rill_native": any(name.startswith("_native__mypyc.") for name in os.listdir(os.path.join(ROOT, "node"))),
    }
