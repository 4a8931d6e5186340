"""A primary with two replicas, started for each test that asks for them and always stopped."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conftest import Proc
from tests.replication_node.nodes import start_node, stop_all, wait_synced


@pytest.fixture
def started() -> Iterator[list[Proc]]:
    """Nodes a test starts itself: append them here and they are stopped afterwards."""
    procs: list[Proc] = []
    try:
        yield procs
    finally:
        stop_all(procs)


@pytest.fixture
def trio(started: list[Proc]) -> tuple[Proc, Proc, Proc]:
    primary = start_node()
    started.append(primary)
    a = start_node(replicaof=primary)
    started.append(a)
    b = start_node(replicaof=primary)
    started.append(b)
    wait_synced(primary, a, b)
    return primary, a, b
