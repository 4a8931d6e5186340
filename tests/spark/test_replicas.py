"""Reads from replicas through real local Spark: a primary with two replicas (Rill, and
redis-server for comparison), found through Debian's redis-sentinel or named in replicaUrls;
the reads land on the replicas, not the primary, and return every entry."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from bench.cluster import Launcher
from tests.conftest import Server, start_redis
from tests.replication_node.nodes import start_node
from tests.spark.conftest import fill, run_available_now, url
from tests.spark.test_stream_read import Batches


def _calls(proc: Server, command: str) -> int:
    with proc.client() as c:
        stats = c.info("commandstats")
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


class Cluster:
    def __init__(self, kind: str) -> None:
        if kind == "rill":
            self.primary = start_node()
            self.replicas = [start_node(replicaof=self.primary) for _ in range(2)]
        else:
            self.primary = start_redis()
            self.replicas = [start_redis("--replicaof", "127.0.0.1", str(self.primary.port)) for _ in range(2)]

    def wait_replicated(self) -> None:
        with self.primary.client() as c:
            deadline = time.monotonic() + 30
            while c.execute_command("WAIT", 2, 1000) < 2:
                assert time.monotonic() < deadline, "the replicas did not catch up"

    def stop(self) -> None:
        for proc in [*self.replicas, self.primary]:
            proc.stop()


class SentinelProc:
    """Debian's redis-sentinel monitoring `primary` as "rillmaster" (a bench.cluster.Launcher's
    one member)."""

    def __init__(self, primary: Server) -> None:
        self.launcher = Launcher(prefix="rill-sentinel-")
        member = self.launcher.add("sentinel", "redis-sentinel", ready="port")
        self.port = member.port
        member.write_conf(f"port {self.port}\nbind 127.0.0.1\ndir {member.dir}\n"
                          f"sentinel monitor rillmaster 127.0.0.1 {primary.port} 1\n"
                          "sentinel down-after-milliseconds rillmaster 60000\n")
        member.start(timeout=10.0)

    def wait_for_replicas(self, count: int) -> None:
        with redis.Redis(port=self.port, decode_responses=True) as s:
            deadline = time.monotonic() + 30
            while len(s.sentinel_slaves("rillmaster")) < count:
                assert time.monotonic() < deadline, "Sentinel did not find the replicas"
                time.sleep(0.2)

    def stop(self) -> None:
        self.launcher.close()


@pytest.fixture(scope="module", params=["rill", "redis"])
def cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    c = Cluster(request.param)
    yield c
    c.stop()


@pytest.fixture(scope="module")
def sentinel(cluster: Cluster) -> Iterator[SentinelProc]:
    s = SentinelProc(cluster.primary)
    s.wait_for_replicas(2)
    yield s
    s.stop()


def _flushed(cluster: Cluster) -> redis.Redis:
    client = cluster.primary.client()
    client.flushall()
    return client


def test_batch_read_from_replicas_found_by_sentinel(spark: Any, cluster: Cluster, sentinel: SentinelProc) -> None:
    with _flushed(cluster) as c:
        entry_ids = fill(c, "orders", 400, spread=True)
    cluster.wait_replicated()
    before = [_calls(p, "xrange") for p in [cluster.primary, *cluster.replicas]]
    df = (spark.read.format("rill").option("sentinels", f"127.0.0.1:{sentinel.port}")
          .option("masterName", "rillmaster").option("readFrom", "replica").option("streams", "orders")
          .option("partitionsPerStream", "4").option("batchSize", "50").load())
    assert sorted(r.id for r in df.collect()) == sorted(entry_ids)
    after = [_calls(p, "xrange") for p in [cluster.primary, *cluster.replicas]]
    primary, *replicas = [a - b for a, b in zip(after, before)]
    assert primary == 0
    assert all(r >= 2 for r in replicas)  # the 4 ranges were dealt to both replicas


def test_streaming_read_from_replica_urls(spark: Any, cluster: Cluster, checkpoint: str) -> None:
    replica_urls = ",".join(url(r) for r in cluster.replicas)
    with _flushed(cluster) as c:
        first = fill(c, "s", 30)
        cluster.wait_replicated()
        options = {"url": url(cluster.primary), "readFrom": "replica", "replicaUrls": replica_urls,
                   "streams": "s", "startingOffsets": "earliest", "maxEntriesPerTrigger": "10"}
        before = _calls(cluster.primary, "xrange")
        batches = Batches()
        run_available_now(spark, options, checkpoint, batches)
        assert batches.all == first and batches.sizes == [10, 10, 10]
        assert _calls(cluster.primary, "xrange") == before
