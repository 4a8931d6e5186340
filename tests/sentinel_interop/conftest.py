"""When a Sentinel interop test fails, its report ends with the log of every sentinel and node
of its cluster (the `cluster` fixture's), so a failure seen once in CI can be read afterwards."""

from __future__ import annotations

from collections.abc import Generator

import pytest

from bench.sentinel_cluster import SentinelCluster

LOG_LINES = 200  # of each member's log in a failure report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, pytest.TestReport,
                                                                                           pytest.TestReport]:
    report = yield
    if report.failed and report.when in ("setup", "call"):
        cluster = getattr(item, "funcargs", {}).get("cluster")
        if isinstance(cluster, SentinelCluster):
            for member in [*cluster.sentinels, *cluster.nodes]:
                report.sections.append((f"{member.name} ({member.kind}, :{member.port}) log",
                                        member.tail(LOG_LINES)))
    return report
