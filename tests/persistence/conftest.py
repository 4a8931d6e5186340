"""Fixtures for the persistence tests: private nodes on a data directory each test owns,
always stopped (and the directory removed) at the end, and helpers to restart them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.conftest import ROOT, Server, free_port, start_rill


class Nodes:
    """Starts Rill nodes on one data directory; stops every one still running at the end."""

    def __init__(self, data_dir: str) -> None:
        self.dir = data_dir
        self.procs: list[Server] = []

    def start(self, *flags: str) -> Server:
        node = start_rill(*flags, dir=self.dir)
        self.procs.append(node)
        return node

    def start_failure(self, *flags: str, timeout: float = 20.0) -> tuple[int, str]:
        """Start a node that must refuse to start: (exit code, stderr + log)."""
        args = [sys.executable, "-m", "node.main", "node", "--port", str(free_port()), "--dir", self.dir,
                "--logfile", os.path.join(self.dir, "server.log"), *flags]
        proc = subprocess.run(args, cwd=ROOT, capture_output=True, timeout=timeout)
        log_path = os.path.join(self.dir, "server.log")
        log = Path(log_path).read_text(errors="replace") if os.path.exists(log_path) else ""
        return proc.returncode, proc.stderr.decode(errors="replace") + log

    def stop_all(self) -> None:
        for node in self.procs:
            node.kill()


@pytest.fixture
def data_dir() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="rill-persist-")
    yield path
    subprocess.run(["chattr", "-R", "-i", path], capture_output=True)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def nodes(data_dir: str) -> Iterator[Nodes]:
    n = Nodes(data_dir)
    yield n
    n.stop_all()


def aof_dir(data_dir: str) -> str:
    return os.path.join(data_dir, "appendonlydir")


def incr_files(data_dir: str) -> list[str]:
    names = sorted(n for n in os.listdir(aof_dir(data_dir)) if n.endswith(".incr.aof"))
    return [os.path.join(aof_dir(data_dir), n) for n in names]


def wait_for(predicate: object, timeout: float = 10.0, what: str = "condition") -> None:
    assert callable(predicate)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what}")


def digest(client: redis.Redis) -> bytes:
    return client.execute_command("DEBUG", "DIGEST")  # type: ignore[no-any-return]


def wait_child_done(client: redis.Redis) -> None:
    """Until no BGSAVE / rewrite child runs."""
    def idle() -> bool:
        info = client.info("persistence")
        return info["rdb_bgsave_in_progress"] == 0 and info["aof_rewrite_in_progress"] == 0 and info["aof_rewrite_scheduled"] == 0
    wait_for(idle, 20.0, "background save to finish")
