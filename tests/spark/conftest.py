"""Real local Spark (``local[2]``, task retries on) for the pipeline tests: one SparkSession per
test module (``spark`` fixture, started and stopped by the module), a Rill node and a
redis-server (the ``server`` fixture runs a read test against both), and helpers to fill
streams and to run a streaming query until it has read everything available.

Executors are Python worker processes: they import ``pipeline`` from the installed package and
test helpers from this repository, hence PYTHONPATH.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests.conftest import ROOT, Server
from tests.replication_node.nodes import start_node, stop_all, wait_synced

os.environ["PYSPARK_PYTHON"] = sys.executable
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)

# Spark's own threads and the worker pool outlive nothing: a session is stopped per module.
SESSION_START_TIMEOUT = 120


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    from pipeline import RillDataSource

    started = time.monotonic()
    session = (
        SparkSession.builder.master("local[2,4]")  # 2 cores, a failed task is tried up to 4 times
        .appName("rill-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    session.dataSource.register(RillDataSource)
    assert time.monotonic() - started < SESSION_START_TIMEOUT
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture(params=["rill", "redis"])
def server(request: pytest.FixtureRequest, rill_node: Server, redis_server: Server) -> Iterator[Server]:
    """The shared Rill node or redis-server, flushed: read tests run against both."""
    proc: Server = rill_node if request.param == "rill" else redis_server
    with proc.client() as client:
        client.flushall()
    yield proc


@pytest.fixture(scope="module")
def rill_trio() -> Iterator[list[Server]]:
    """A Rill primary and two replicas (in that order), for the module."""
    started: list[Server] = []
    try:
        primary = start_node()
        started.append(primary)
        started += [start_node(replicaof=primary) for _ in range(2)]
        wait_synced(*started)
        yield started
    finally:
        stop_all(started)


def url(proc: Server) -> str:
    return f"redis://127.0.0.1:{proc.port}/0"


SPREAD_BASE_MS = 1_700_000_000_000


def fill(client: redis.Redis, stream: str, count: int, start: int = 0, spread: bool = False,
         **extra: str) -> list[str]:
    """`count` entries {n: <number>, ...extra}; returns their IDs. With `spread`, entry n gets
    the ID <base + 10 n>-0: entries 10 ms apart, as a stream written over time has them
    (ranges are cut on millisecond boundaries)."""
    with client.pipeline(transaction=False) as pipe:
        for n in range(start, start + count):
            pipe.xadd(stream, {"n": str(n), **extra}, id=f"{SPREAD_BASE_MS + 10 * n}-0" if spread else "*")
        return [i.decode() for i in pipe.execute()]


def run_available_now(spark: Any, reader_options: dict[str, str], checkpoint: str,
                      on_batch: Callable[[Any, int], None], timeout: float = 120) -> Any:
    """A streaming query with Trigger.AvailableNow that hands each micro-batch to `on_batch`
    (on the driver, this process); returns the finished query (its exception re-raised)."""
    reader = spark.readStream.format("rill")
    for key, value in reader_options.items():
        reader = reader.option(key, value)
    query = (reader.load().writeStream.foreachBatch(on_batch).option("checkpointLocation", checkpoint)
             .trigger(availableNow=True).start())
    try:
        finished = query.awaitTermination(timeout)
    finally:
        if query.isActive:
            query.stop()
    assert finished, f"the query did not finish within {timeout}s"
    return query


@pytest.fixture
def checkpoint() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="rill-spark-ckpt-")
    yield path
    import shutil

    shutil.rmtree(path, ignore_errors=True)
