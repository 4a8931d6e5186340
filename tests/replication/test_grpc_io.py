"""The link's gRPC I/O (replication/grpc_io.py): the poller I/O is chosen before grpc is first
imported, unless GRPC_EXPERIMENTS is already set, and the link works on either stack."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from replication.grpc_io import GRPC_IO_EXPERIMENTS, prefer_poller_io
from tests.conftest import ROOT

# Records GRPC_EXPERIMENTS at the moment grpc is first imported, which is when gRPC reads it.
_SEEN_AT_GRPC_IMPORT = """
import os, sys
seen = []
class Finder:
    def find_spec(self, name, path=None, target=None):
        if name == "grpc" and not seen:
            seen.append(os.environ.get("GRPC_EXPERIMENTS"))
        return None
sys.meta_path.insert(0, Finder())
import {module}
print(repr(seen))
"""


def _fresh(code: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("module", ["replication", "node.server.server"])
def test_the_poller_io_is_chosen_before_grpc_is_imported(module: str) -> None:
    # node.server.server is what the node imports (node/main.py): grpc comes in through it.
    env = {k: v for k, v in os.environ.items() if k != "GRPC_EXPERIMENTS"}
    result = _fresh(_SEEN_AT_GRPC_IMPORT.format(module=module), env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr([GRPC_IO_EXPERIMENTS])


def test_a_value_already_set_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    for chosen in ("", "event_engine_client"):  # "" keeps gRPC's own default (EventEngine)
        monkeypatch.setenv("GRPC_EXPERIMENTS", chosen)
        prefer_poller_io()
        assert os.environ["GRPC_EXPERIMENTS"] == chosen
    env = dict(os.environ, GRPC_EXPERIMENTS="")
    result = _fresh(_SEEN_AT_GRPC_IMPORT.format(module="replication"), env)
    assert result.stdout.strip() == repr([""]), result.stderr


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
