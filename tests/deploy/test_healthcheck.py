"""deploy/healthcheck.py (the image's `rill-healthcheck`) against local Rill nodes: healthy
means PING answered and, on a replica, a live link to its primary; the password comes from
RILL_PASSWORD. No Docker needed."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from bench.procs import free_port
from tests.conftest import Proc, start_rill
from tests.deploy.project import ROOT

SCRIPT = os.path.join(ROOT, "deploy", "healthcheck.py")
PASSWORD = "s3cret"


def _check(port: int, password: str | None, *flags: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "RILL_PASSWORD"}
    if password is not None:
        env["RILL_PASSWORD"] = password
    return subprocess.run([sys.executable, SCRIPT, "--port", str(port), *flags], env=env, capture_output=True,
                          text=True, timeout=30)


def _until_exit_code(port: int, code: int, *flags: str) -> subprocess.CompletedProcess[str]:
    deadline = time.monotonic() + 30
    while (done := _check(port, PASSWORD, *flags)).returncode != code:
        assert time.monotonic() < deadline, f"still {done.returncode}: {done.stdout}"
        time.sleep(0.2)
    return done


@pytest.fixture
def pair() -> Iterator[tuple[Proc, Proc]]:
    primary = start_rill("--requirepass", PASSWORD)
    replica = start_rill("--requirepass", PASSWORD, "--masterauth", PASSWORD, "--replicaof", "127.0.0.1",
                         str(primary.port))
    yield primary, replica
    replica.stop()
    primary.stop()


def test_a_primary_and_a_linked_replica_are_healthy(pair: tuple[Proc, Proc]) -> None:
    primary, replica = pair
    assert _check(primary.port, PASSWORD).returncode == 0
    _until_exit_code(replica.port, 0)


def test_a_wrong_or_missing_password_is_unhealthy(pair: tuple[Proc, Proc]) -> None:
    primary, _ = pair
    wrong = _check(primary.port, "nope")
    assert wrong.returncode == 1 and wrong.stdout.startswith("unhealthy: WRONGPASS")
    missing = _check(primary.port, None)
    assert missing.returncode == 1 and missing.stdout.startswith("unhealthy: NOAUTH")


def test_a_replica_whose_primary_is_gone_is_unhealthy(pair: tuple[Proc, Proc]) -> None:
    primary, replica = pair
    _until_exit_code(replica.port, 0)
    primary.kill()
    done = _until_exit_code(replica.port, 1)
    assert f"replica of 127.0.0.1:{primary.port}, link down" in done.stdout
    # A sentinel's check is PING alone.
    assert _check(replica.port, PASSWORD, "--sentinel").returncode == 0


def test_nothing_listening_is_unhealthy() -> None:
    done = _check(free_port(), PASSWORD)
    assert done.returncode == 1 and done.stdout.startswith("unhealthy: ")
