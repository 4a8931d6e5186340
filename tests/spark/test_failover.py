"""Exactly once through real failovers: a streaming query reads stream `in` from the replicas
(found through three `rill sentinel`s, committed reads on by default against Rill) and writes
each entry's ID and field to stream `out` (writeConcern majority, IDMP), while producers append
to `in` and the cluster goes through a SIGKILL of the primary, a partition of the next primary
from everyone (a producer pinned to it keeps writing), and a SENTINEL FAILOVER. Afterwards the
output is compared with the final input — what the last primary holds, not what producers were
told: every input entry once, no entry twice, no output row from an entry the input lost.

In fenced mode that must hold exactly. In default mode the test measures and prints the same
counts (docs/pipeline.md quotes them): there a failover may take back entries the query read
or writes a majority held; duplicates still must not appear."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from redis.sentinel import Sentinel

from tests.spark.failover_cluster import SERVICE, FailoverCluster, Member

FAILOVER_TIMEOUT_MS = "60000"


class Producer:
    """Appends `{n: <tag><k>}` to `in` until stopped, through Sentinel (or pinned to one node),
    and records which appends were acknowledged."""

    def __init__(self, cluster: FailoverCluster, tag: str, pinned: Member | None = None, rate: float = 40) -> None:
        self.cluster, self.tag, self.pinned, self.rate = cluster, tag, pinned, rate
        self.acked: list[str] = []
        self.refused = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Producer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(20)

    def _client(self) -> redis.Redis:
        if self.pinned is not None:
            return redis.Redis(port=self.pinned.port, socket_timeout=1, socket_connect_timeout=1)
        sentinels = [("127.0.0.1", s.port) for s in self.cluster.sentinels]
        return Sentinel(sentinels, socket_timeout=1).master_for(SERVICE, socket_timeout=1, socket_connect_timeout=1)

    def _run(self) -> None:
        client = self._client()
        k = 0
        while not self._stop.is_set():
            value = f"{self.tag}{k}"
            try:
                client.xadd("in", {"n": value})
                self.acked.append(value)
                k += 1
            except redis.RedisError:
                self.refused += 1
                time.sleep(0.1)
            self._stop.wait(1 / self.rate)
        client.close()


def _out_len(cluster: FailoverCluster) -> int:
    try:
        with redis.Redis(port=cluster.primary().port, socket_timeout=2) as c:
            return int(c.xlen("out"))
    except (redis.RedisError, StopIteration):
        return -1


def _grows(cluster: FailoverCluster, query: Any, by: int, timeout: float = 120) -> None:
    """Until `out` has `by` more entries (the query is alive and writing)."""
    start = max(_out_len(cluster), 0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert query.exception() is None, f"the query failed: {query.exception()}"
        if _out_len(cluster) >= start + by:
            return
        time.sleep(0.5)
    raise AssertionError(f"the output did not grow by {by} within {timeout}s (query status {query.status})")


@pytest.fixture(params=["fenced", "default"])
def cluster(request: pytest.FixtureRequest) -> Iterator[FailoverCluster]:
    c = FailoverCluster(fenced=request.param == "fenced")
    try:
        c.start()
        yield c
    finally:
        c.stop()


def test_exactly_once_through_kill_partition_and_handover(spark: Any, cluster: FailoverCluster,
                                                         checkpoint: str) -> None:
    from pyspark.sql import functions as F

    common = {"sentinels": cluster.sentinel_addresses, "masterName": SERVICE, "failoverTimeoutMs": FAILOVER_TIMEOUT_MS,
              "socketTimeoutMs": "2000"}
    source = (spark.readStream.format("rill").options(**common).option("readFrom", "replica")
              .option("streams", "in").option("startingOffsets", "earliest").option("maxEntriesPerTrigger", "300")
              .load().select(F.col("id").alias("src"), F.col("fields")["n"].alias("n")))
    # Small round trips: a partition's writes span many of them, so a fault lands in the middle
    # of a task's writes, whose retry must then add nothing twice.
    query = (source.writeStream.format("rill").options(**common).option("stream", "out").option("batchSize", "10")
             .option("checkpointLocation", checkpoint).trigger(processingTime="1 second").start())
    pinned_acked: list[str] = []
    faults: list[str] = []  # the faults that ran, for the summary
    try:
        with Producer(cluster, "p", rate=150) as producer:
            _grows(cluster, query, 100)
            # 1. SIGKILL the primary; it comes back as a replica of the one promoted.
            first = cluster.primary()
            cluster.kill(first)
            second = cluster.wait_for_new_primary(first)
            cluster.restart_as_replica_of(first, second)
            faults.append("SIGKILL")
            _grows(cluster, query, 100)
            # 2. The primary is cut off from everyone but a producer pinned to it.
            with Producer(cluster, "pinned", pinned=second) as pinned:
                time.sleep(0.5)
                second.proxy.partition()
                third = cluster.wait_for_new_primary(second)
                time.sleep(1)
                second.proxy.heal()
            faults.append("partition")
            pinned_acked = pinned.acked
            _grows(cluster, query, 100)
            # 3. A planned handover.
            cluster.sentinel_failover()
            cluster.wait_for_new_primary(third)
            faults.append("SENTINEL FAILOVER")
            _grows(cluster, query, 100)
        # Every entry the final input holds reaches the output.
        with redis.Redis(port=cluster.primary().port, decode_responses=True) as c:
            final_input = {entry_id: fields["n"] for entry_id, fields in c.xrange("in")}
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and query.exception() is None:
            with redis.Redis(port=cluster.primary().port, decode_responses=True) as c:
                written = {fields["src"] for _, fields in c.xrange("out")}
            if set(final_input) <= written:
                break
            time.sleep(1)
        error = query.exception()
    finally:
        if query.isActive:
            query.stop()
    with redis.Redis(port=cluster.primary().port, decode_responses=True) as c:
        final_input = {entry_id: fields["n"] for entry_id, fields in c.xrange("in")}
        output = [(fields["src"], fields["n"]) for _, fields in c.xrange("out")]
    counts = Counter(src for src, _ in output)
    twice = sorted(src for src, n in counts.items() if n > 1)
    missing = sorted(set(final_input) - set(counts))
    phantom = sorted((src, n) for src, n in output if final_input.get(src) != n)
    acked = set(producer.acked) | set(pinned_acked)
    lost_input = sorted(acked - set(final_input.values()))
    summary = {"mode": "fenced" if cluster.fenced else "default", "input": len(final_input), "output": len(output),
               "twice": len(twice), "missing": len(missing), "phantom": len(phantom),
               "acked_input_lost": len(lost_input), "pinned_acked": len(pinned_acked),
               "faults": faults, "query_error": str(error).splitlines()[0] if error else None}
    print("FAILOVER RESULT " + json.dumps(summary))
    assert final_input and output
    assert not twice, f"entries written twice: {twice[:10]} {summary}"
    if cluster.fenced:
        assert error is None, f"the query failed: {error}"
        assert not missing, f"input entries never written: {missing[:10]} {summary}"
        assert not phantom, f"output rows from entries the input does not hold: {phantom[:10]} {summary}"
