"""Committed reads and durable writes through real local Spark against a replicated Rill: a
read (batch or streaming) leaves out an entry only the primary holds until a replica holds it;
a write that no replica confirms fails the job (writeConcern majority) unless asked not to
wait; queries sharing a consumer group get consumers of their own; a filtered batch read fetches
only its ID range; streamsPattern and minOffsetsPerTrigger; the data-loss cases XDEL of unread
entries and a deleted stream."""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from tests.conftest import Server
from tests.replication_node.nodes import stopped, wait_synced
from tests.spark.conftest import fill, run_available_now, url
from tests.spark.test_stream_read import Batches


@pytest.fixture
def cluster(rill_trio: list[Server]) -> list[Server]:
    with rill_trio[0].client() as c:
        c.flushall()
    wait_synced(*rill_trio)
    return rill_trio


def _ids(spark: Any, primary: Server, **options: str) -> list[str]:
    reader = spark.read.format("rill").option("url", url(primary)).option("streams", "s")
    for key, value in options.items():
        reader = reader.option(key, value)
    return sorted(r.id for r in reader.load().select("id").collect())


def test_a_batch_read_leaves_out_what_only_the_primary_holds(spark: Any, cluster: list[Server]) -> None:
    primary, a, b = cluster
    with primary.client() as c:
        held = fill(c, "s", 5)
        wait_synced(*cluster)
        with stopped(a), stopped(b):
            alone = fill(c, "s", 3, start=5)
            assert _ids(spark, primary) == sorted(held)  # committed reads: the default against Rill
            assert _ids(spark, primary, readCommitted="false") == sorted(held + alone)
        deadline = time.monotonic() + 30
        while _ids(spark, primary) != sorted(held + alone):
            assert time.monotonic() < deadline, "the entries did not become committed"
            time.sleep(0.5)


def test_a_streaming_read_waits_for_the_majority(spark: Any, cluster: list[Server], checkpoint: str) -> None:
    primary, a, b = cluster
    options = {"url": url(primary), "streams": "s", "startingOffsets": "earliest"}
    with primary.client() as c:
        held = fill(c, "s", 4)
        wait_synced(*cluster)
        batches = Batches()
        with stopped(a), stopped(b):
            fill(c, "s", 3, start=4)
            run_available_now(spark, options, checkpoint, batches)
        assert batches.all == held


def test_a_write_no_replica_confirms_fails_unless_asked_not_to_wait(spark: Any, cluster: list[Server]) -> None:
    primary, a, b = cluster
    df = spark.createDataFrame([(str(n),) for n in range(5)], "n string").coalesce(1)

    def write(**options: str) -> None:
        writer = df.write.format("rill").option("url", url(primary)).option("stream", "out") \
            .option("writeTimeoutMs", "300").option("failoverTimeoutMs", "1000")
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.mode("append").save()

    with stopped(a), stopped(b):
        with pytest.raises(Exception, match="a majority of the replica set did not hold the partition's writes"):
            write()
        write(writeConcern="1")
    with primary.client() as c:
        # The failed attempts' rows and the second job's: IDMP keeps one copy per job.
        assert sorted(int(f[b"n"]) for _, f in c.xrange("out")) == sorted(list(range(5)) * 2)
    write()  # the replicas are back: confirmed


def test_queries_sharing_a_group_get_consumers_of_their_own(spark: Any, cluster: list[Server], tmp_path: Any) -> None:
    primary = cluster[0]
    options = {"url": url(primary), "streams": "jobs", "group": "g", "startingOffsets": "earliest"}
    with primary.client() as c:
        fill(c, "jobs", 6)
        run_available_now(spark, options, str(tmp_path / "one"), Batches())
        fill(c, "jobs", 6, start=6)
        run_available_now(spark, options, str(tmp_path / "two"), Batches())
        names = {x["name"].decode() for x in c.xinfo_consumers("jobs", "g")}
    prefixes = {name.rsplit("-", 1)[0] for name in names}
    assert len(prefixes) == 2 and all(p.startswith("spark-") for p in prefixes), names


def _xrange_calls(proc: Server) -> int:
    with proc.client() as c:
        return int(c.info("commandstats").get("cmdstat_xrange", {}).get("calls", 0))


def test_a_filtered_batch_read_fetches_only_its_range(spark: Any, cluster: list[Server]) -> None:
    from pyspark.sql import functions as F

    primary = cluster[0]
    with primary.client() as c:
        entries = fill(c, "s", 300, spread=True)  # 10 ms apart
    wait_synced(*cluster)
    first = int(entries[100].split("-")[0])
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    try:
        frame = spark.read.format("rill").option("url", url(primary)).option("streams", "s") \
            .option("batchSize", "10").option("pushFilters", "true").load()
        before = _xrange_calls(primary)
        rows = frame.where((F.col("ts") >= F.timestamp_millis(F.lit(first)))
                           & (F.col("ts") < F.timestamp_millis(F.lit(first + 100)))).select("id").collect()
    finally:
        spark.conf.unset("spark.sql.python.filterPushdown.enabled")
    assert sorted(r.id for r in rows) == entries[100:110]
    # A page of 10 and the planner's look at the range's first entry; unfiltered, 31 pages.
    assert _xrange_calls(primary) - before <= 4


def test_streams_pattern_and_min_offsets_per_trigger(spark: Any, cluster: list[Server], checkpoint: str) -> None:
    primary = cluster[0]
    with primary.client() as c:
        a = fill(c, "ev:a", 3)
        b = fill(c, "ev:b", 2)
        c.set("ev:not-a-stream", "x")
        batches = Batches()
        run_available_now(spark, {"url": url(primary), "streamsPattern": "ev:*", "startingOffsets": "earliest"},
                          checkpoint, batches)
        assert sorted(batches.all) == sorted(a + b)
        # A stream that appears later is read from its start too.
        later = fill(c, "ev:c", 2)
        run_available_now(spark, {"url": url(primary), "streamsPattern": "ev:*", "startingOffsets": "earliest"},
                          checkpoint, batches)
        assert sorted(batches.all) == sorted(a + b + later)


def test_min_offsets_per_trigger_waits_for_enough_entries(spark: Any, cluster: list[Server], checkpoint: str) -> None:
    primary = cluster[0]
    seen: list[int] = []
    with primary.client() as c:
        fill(c, "s", 3)
        query = (spark.readStream.format("rill").option("url", url(primary)).option("streams", "s")
                 .option("startingOffsets", "earliest").option("minOffsetsPerTrigger", "10")
                 .option("maxTriggerDelay", "1h").load().writeStream
                 .foreachBatch(lambda df, _: seen.append(df.count())).option("checkpointLocation", checkpoint)
                 .trigger(processingTime="200 milliseconds").start())
        try:
            time.sleep(8)
            assert sum(seen) == 0, f"a batch ran with fewer than 10 entries waiting: {seen}"
            fill(c, "s", 8, start=3)
            deadline = time.monotonic() + 60
            while sum(seen) < 11:
                assert time.monotonic() < deadline and query.exception() is None, (seen, query.exception())
                time.sleep(0.2)
        finally:
            query.stop()
    assert seen[-1] == 11 or sum(seen) == 11


@pytest.mark.parametrize("fault", ["xdel", "deleted-stream"])
def test_data_loss_of_unread_entries_is_reported(spark: Any, cluster: list[Server], checkpoint: str, fault: str) -> None:
    primary = cluster[0]
    options = {"url": url(primary), "streams": "s", "startingOffsets": "earliest"}
    with primary.client() as c:
        fill(c, "s", 5)
        run_available_now(spark, options, checkpoint, Batches())
        later = fill(c, "s", 5, start=5)
        if fault == "xdel":
            c.xdel("s", later[2])
            expected = "deleted \\(XDEL\\) before they were read"
        else:
            c.delete("s")
            expected = "the stream was deleted"
        with pytest.raises(Exception, match=expected):
            run_available_now(spark, options, checkpoint, Batches())
        lenient = Batches()
        run_available_now(spark, {**options, "failOnDataLoss": "false"}, checkpoint, lenient)
    if fault == "xdel":
        assert lenient.all == [i for i in later if i != later[2]]
    else:
        assert lenient.all == []


def test_redis_server_reads_everything_and_writes_at_once(spark: Any, redis_server: Server) -> None:
    with redis_server.client() as c:
        c.flushall()
        entries = fill(c, "s", 4)
    assert _ids(spark, redis_server) == sorted(entries)  # no committed point there: readCommitted off
    with pytest.raises(Exception, match="readCommitted=true but the server has no committed reads"):
        _ids(spark, redis_server, readCommitted="true")
    spark.createDataFrame([("x",)], "f string").write.format("rill").option("url", url(redis_server)) \
        .option("stream", "w").mode("append").save()
    with redis.Redis(port=redis_server.port) as c:
        assert c.xlen("w") == 1


def test_the_history_check_after_a_failover(cluster: list[Server]) -> None:
    """planning.vouch, which a batch planned in a new replication history runs for each
    stream's last read entry, on real nodes: the entry as read, another one under its ID, a
    history that ends before it (on a primary: lost; on a replica: not reached yet), and an
    entry that is gone from within the history."""
    from pipeline import ids
    from pipeline.offsets import fingerprint
    from pipeline.planning import BEHIND, stream_state, vouch

    primary = cluster[0]
    with primary.client() as c:
        c.response_callbacks.pop("XRANGE", None)
        first, second, third = fill(c, "s", 3)
        read_as = fingerprint(first.encode(), [b"n", b"0"])
        state = stream_state(c, "s")
        assert vouch(c, "s", ids.parse(first), read_as, state, primary=True) is None
        other = fingerprint(first.encode(), [b"n", b"other"])
        assert "holds another entry under ID" in (vouch(c, "s", ids.parse(first), other, state, primary=True) or "")
        beyond = ids.parse(third) + 5
        assert "ends at" in (vouch(c, "s", beyond, read_as, state, primary=True) or "")
        assert vouch(c, "s", beyond, read_as, state, primary=False) == BEHIND
        c.xdel("s", second)
        gone = vouch(c, "s", ids.parse(second), read_as, stream_state(c, "s"), primary=True)
        assert "not in the new history" in (gone or "")
        assert "is gone from the new history" in (vouch(c, "t", 5, read_as, None, primary=True) or "")
