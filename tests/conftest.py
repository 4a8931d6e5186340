"""Shared fixtures: real processes on free loopback ports, always stopped at the end.

`rill_node` starts a Rill node (`python -m node.main node ...`); `redis_server` starts
Debian's redis-server (the oracle). Both are session-scoped by default; tests that need a
private node use `start_rill`/`start_redis` directly. Each is a `bench.procs.Server`, the one
server process class of the benchmarks and the tests (a test's keeps its directory when
stopped).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator

import pytest
import redis
from hypothesis import HealthCheck, settings

import replication  # noqa: F401  (before any test module imports grpc: the node's gRPC I/O)
from bench.procs import Server, free_port, wait_for_port

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Property tests judge behaviour, not speed: no per-example deadline (200 ms by default) and
# no health check on slow data generation, both of which fail on a busy machine.
settings.register_profile("rill", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("rill")


def start_spinner(cpu: int, seconds: float) -> subprocess.Popen[bytes]:
    """A process that pins itself to `cpu` and keeps it busy for `seconds` (then exits by
    itself, should the test die before killing it): CPU contention on demand. Returns once
    it is pinned and spinning."""
    code = (f"import os, time\nos.sched_setaffinity(0, {{{cpu}}})\nprint('pinned', flush=True)\n"
            f"end = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass")
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    assert proc.stdout is not None and proc.stdout.readline() == b"pinned\n"
    return proc


def stop_process(proc: subprocess.Popen[bytes]) -> None:
    proc.kill()
    proc.wait()


def start_rill(*extra: str, port: int | None = None, dir: str | None = None, config: str | None = None) -> Server:
    """A node; `config` is a config file read before the flags (as redis-server's)."""
    port = port or free_port()
    workdir = dir or tempfile.mkdtemp(prefix="rill-test-")
    args = [sys.executable, "-m", "node.main", "node", *([config] if config else []), "--port", str(port),
            "--dir", workdir, "--logfile", os.path.join(workdir, "server.log"), *extra]
    # stderr goes to a file, never a pipe nobody reads (a full pipe would block the node).
    stderr_path = os.path.join(workdir, "stderr.log")
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        wait_for_port(port, proc)
    except Exception:
        proc.kill()
        proc.wait()
        with open(stderr_path, encoding="utf-8", errors="replace") as f:
            err = f.read()
        raise RuntimeError(f"rill node failed to start: {err}") from None
    return Server("rill", port, proc, workdir, args)


def start_redis(
    *extra: str, port: int | None = None, dir: str | None = None, config: str | None = None, binary: str | None = None
) -> Server:
    """A redis-server (Debian's unless `binary` names another); `config` is a config file
    read before the flags."""
    binary = binary or shutil.which("redis-server")
    if binary is None:
        pytest.fail("redis-server is not installed: `make test` installs Debian's redis-server")
    port = port or free_port()
    workdir = dir or tempfile.mkdtemp(prefix="redis-oracle-")
    args = [binary, *([config] if config else []), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--dir", workdir, "--logfile", os.path.join(workdir, "server.log"), *extra]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_port(port, proc)
    return Server("redis", port, proc, workdir, args)


@pytest.fixture(scope="session")
def rill_node() -> Iterator[Server]:
    node = start_rill()
    yield node
    node.stop()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Server]:
    server = start_redis()
    yield server
    server.stop()


@pytest.fixture
def r(rill_node: Server) -> Iterator[redis.Redis]:
    """A redis-py client on the shared node, with the node flushed before the test."""
    client = rill_node.client()
    client.flushall()
    yield client
    client.close()
