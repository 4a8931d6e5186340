"""The link's gRPC I/O: the node selects the poller I/O (replication/wire.py) unless
GRPC_EXPERIMENTS is already set, and the link works on either stack."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replication.wire import GRPC_IO_EXPERIMENTS, prefer_poller_io
from tests.conftest import ROOT


def test_poller_io_is_the_default_and_a_value_already_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GRPC_EXPERIMENTS", raising=False)
    prefer_poller_io()
    assert os.environ["GRPC_EXPERIMENTS"] == GRPC_IO_EXPERIMENTS
    for chosen in ("", "event_engine_client"):  # "" keeps gRPC's own default (EventEngine)
        monkeypatch.setenv("GRPC_EXPERIMENTS", chosen)
        prefer_poller_io()
        assert os.environ["GRPC_EXPERIMENTS"] == chosen


def test_the_link_works_on_grpc_event_engine_too() -> None:
    # A fresh process, since gRPC reads the variable once: the uvloop scenario (full sync, a
    # cut link and a partial resync, WAIT, equal digests) with gRPC's default I/O.
    env = dict(os.environ, GRPC_EXPERIMENTS="")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/replication/test_uvloop.py"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert "1 passed" in result.stdout
