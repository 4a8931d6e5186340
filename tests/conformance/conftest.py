"""Fixtures for differential tests: a redis-server oracle and a Rill node (shared for the
session), and `pair`/`pair3` connections to both, flushed before each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.harness import Pair
from tests.conftest import Server


def _pair(redis_server: Server, rill_node: Server, proto: int) -> Iterator[Pair]:
    p = Pair(redis_server.port, rill_node.port, proto)
    p.oracle.call("FLUSHALL")
    p.rill.call("FLUSHALL")
    yield p
    p.close()


@pytest.fixture
def pair(redis_server: Server, rill_node: Server) -> Iterator[Pair]:
    yield from _pair(redis_server, rill_node, 2)


@pytest.fixture
def pair3(redis_server: Server, rill_node: Server) -> Iterator[Pair]:
    yield from _pair(redis_server, rill_node, 3)


@pytest.fixture(params=[2, 3], ids=["resp2", "resp3"])
def pair_any(request: pytest.FixtureRequest, redis_server: Server, rill_node: Server) -> Iterator[Pair]:
    yield from _pair(redis_server, rill_node, request.param)
