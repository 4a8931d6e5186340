"""A primary with two replicas, started for each test that asks for them and always stopped.

When a test fails, its report ends with the server.log of every node it started (in the
`started` list), and their directories are kept (their paths are in the section titles);
after a passing test they are removed."""

from __future__ import annotations

import shutil
from collections.abc import Generator, Iterator

import pytest

from tests.conftest import Server
from tests.replication_node.nodes import start_node, stop_all, wait_synced

_FAILED = pytest.StashKey[bool]()
LOG_LINES = 400  # of each node's log in a failure report (its directory keeps the whole)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                           pytest.TestReport]:
    report = yield
    if report.failed and report.when in ("setup", "call"):
        item.stash[_FAILED] = True
        funcargs = getattr(item, "funcargs", {})
        for value in funcargs.values():
            if hasattr(value, "failure_report"):  # a test's own set of processes
                report.sections.extend(value.failure_report())
        nodes: list[Server] = funcargs.get("started") or []
        for node in nodes:
            lines = node.log.splitlines()
            cut = f"[first {len(lines) - LOG_LINES} lines left out]\n" if len(lines) > LOG_LINES else ""
            report.sections.append((f"node :{node.port} {node.dir}/server.log", cut + "\n".join(lines[-LOG_LINES:])))
    return report


@pytest.fixture
def started(request: pytest.FixtureRequest) -> Iterator[list[Server]]:
    """Nodes a test starts itself: append them here and they are stopped afterwards."""
    procs: list[Server] = []
    try:
        yield procs
    finally:
        stop_all(procs)
        if not request.node.stash.get(_FAILED, False):
            for node in procs:
                shutil.rmtree(node.dir, ignore_errors=True)


@pytest.fixture
def trio(started: list[Server]) -> tuple[Server, Server, Server]:
    primary = start_node()
    started.append(primary)
    a = start_node(replicaof=primary)
    started.append(a)
    b = start_node(replicaof=primary)
    started.append(b)
    wait_synced(primary, a, b)
    return primary, a, b
