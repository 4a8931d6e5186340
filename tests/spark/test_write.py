"""Writes through real local Spark, against Rill and redis-server: fields from columns or a
map, the target from an option or a column, trimming, streaming writes, and exactly-once
streaming writes when a task fails on its first attempt (IDMP), or the announced
at-least-once fallback on a server without IDMP."""

from __future__ import annotations

import datetime
import logging
from typing import Any

import pytest
import redis

from pipeline import RillDataSource, idempotence, write
from pipeline.options import OptionError
from tests.conftest import Server
from tests.spark import flaky
from tests.spark.conftest import fill, url


def _entries(client: redis.Redis, stream: str) -> list[dict[str, str]]:
    return [{k.decode(): v.decode() for k, v in fields.items()} for _, fields in client.xrange(stream)]


def test_fields_from_columns_and_the_target_from_a_column(spark: Any, server: Server) -> None:
    at = datetime.datetime(2024, 5, 1, 10, 0, tzinfo=datetime.UTC)
    df = spark.createDataFrame(
        [("clicks", "ann", 3, at, None), ("views", "bob", 5, at, "x"), ("clicks", "cy", None, None, "y")],
        "stream string, user string, count int, at timestamp, tag string")
    df.write.format("rill").option("url", url(server)).mode("append").save()
    def by_user(entries: list[dict[str, str]]) -> list[dict[str, str]]:
        return sorted(entries, key=lambda e: e["user"])  # the rows came from two partitions

    with server.client() as c:
        assert by_user(_entries(c, "clicks")) == [{"user": "ann", "count": "3", "at": "2024-05-01T10:00:00Z"},
                                                  {"user": "cy", "tag": "y"}]  # nulls are left out
        assert _entries(c, "views") == [{"user": "bob", "count": "5", "at": "2024-05-01T10:00:00Z", "tag": "x"}]


def test_a_fields_map_column_and_maxlen(spark: Any, server: Server) -> None:
    df = spark.createDataFrame([({"n": str(n), "kind": "a"},) for n in range(12)], "fields map<string,string>")
    df.coalesce(1).write.format("rill").option("url", url(server)).option("stream", "capped") \
        .option("maxlen", "=5").mode("append").save()
    with server.client() as c:
        assert [e["n"] for e in _entries(c, "capped")] == ["7", "8", "9", "10", "11"]


def test_overwrite_and_a_missing_target_are_refused(spark: Any, server: Server) -> None:
    df = spark.createDataFrame([("v",)], "f string")
    with pytest.raises(Exception, match="append-only"):
        df.write.format("rill").option("url", url(server)).option("stream", "s").mode("overwrite").save()
    with pytest.raises(Exception, match="name the target stream"):
        df.write.format("rill").option("url", url(server)).mode("append").save()


def _stream_copy(spark: Any, server: Server, checkpoint: str, fmt: str, **writer_options: str) -> None:
    query = (spark.readStream.format("rill").option("url", url(server)).option("streams", "src")
             .option("startingOffsets", "earliest").load()
             .writeStream.format(fmt).option("url", url(server)).option("stream", "dst")
             .option("checkpointLocation", checkpoint))
    for key, value in writer_options.items():
        query = query.option(key, value)
    started = query.trigger(availableNow=True).start()
    try:
        assert started.awaitTermination(120)
    finally:
        if started.isActive:
            started.stop()


def test_streaming_write_copies_a_stream(spark: Any, server: Server, checkpoint: str) -> None:
    with server.client() as c:
        fill(c, "src", 30, kind="event")
        _stream_copy(spark, server, checkpoint, "rill")
        assert _entries(c, "dst") == _entries(c, "src")  # one partition: order kept too


def idmp_supported(proc: Server) -> bool:
    """What the writer will find, cross-checked with COMMAND INFO: a probe that wrongly said
    "no" would turn the exactly-once test below into a fallback test forever."""
    with proc.client() as c:
        probed = idempotence.supports_idmp(c)
        c.response_callbacks.pop("COMMAND", None)  # redis-py's parser chokes on an unknown command's nil
        listed = c.execute_command("COMMAND", "INFO", "XCFGSET")
    assert probed == bool(listed and listed[0]), f"probe says {probed}, COMMAND INFO XCFGSET says {listed!r}"
    return probed


@pytest.mark.idmp
def test_retried_task_adds_nothing_twice(spark: Any, server: Server, checkpoint: str) -> None:
    """A write task fails on its first attempt after 40 of its 100 XADDs went out; Spark runs it
    again. A server with IDMP keeps exactly the 100 entries; one without gets the 40 again,
    which is the documented at-least-once fallback."""
    spark.dataSource.register(flaky.FlakyRillDataSource)
    with server.client() as c:
        fill(c, "src", 100)
        _stream_copy(spark, server, checkpoint, "rill_flaky", batchSize="20")
        written = [e["n"] for e in _entries(c, "dst")]
    if idmp_supported(server):
        assert sorted(written, key=int) == [str(n) for n in range(100)]
    else:
        assert len(written) == 140
        assert sorted(set(written), key=int) == [str(n) for n in range(100)]
        assert sorted(written[:40], key=int) == [str(n) for n in range(40)]  # the first attempt's 40


def _writer(server: Server, **options: str) -> Any:
    from pyspark.sql.types import StringType, StructField, StructType

    schema = StructType([StructField("f", StringType())])
    source = RillDataSource({"url": url(server), "stream": "s", **{k.lower(): v for k, v in options.items()}})
    return source.streamWriter(schema, False)


def test_the_writer_says_when_writes_are_only_at_least_once(spark: Any, server: Server,
                                                          caplog: pytest.LogCaptureFixture) -> None:
    write._warned.clear()  # the warning comes once per node and process
    with caplog.at_level(logging.INFO, logger="pipeline.rill"):
        writer = _writer(server)
    if idmp_supported(server):
        assert writer.idempotent and "writes are exactly once" in caplog.text
    else:
        assert not writer.idempotent
        assert [r.levelname for r in caplog.records] == ["WARNING"]
        assert "writes are AT LEAST ONCE" in caplog.text
        with pytest.raises(OptionError, match="idempotence=required but .* lacks XADD IDMP"):
            _writer(server, idempotence="required")
    assert not _writer(server, idempotence="off").idempotent
