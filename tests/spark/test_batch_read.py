"""Batch reads and writes through real local Spark, against Rill and redis-server: a round trip
over several partitions, typed columns from a user schema, and the inclusivity of the offsets."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from pipeline import ids
from tests.conftest import Server
from tests.spark.conftest import fill, url


def _read(spark: Any, proc: Server, **options: str) -> Any:
    reader = spark.read.format("rill").option("url", url(proc))
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def test_round_trip_over_several_partitions(spark: Any, server: Server) -> None:
    with server.client() as c:
        orders = fill(c, "orders", 700, spread=True, item="book")
        payments = fill(c, "payments", 300, spread=True)
        df = _read(spark, server, streams="orders,payments,missing", partitionsPerStream="3", batchSize="64")
        assert df.rdd.getNumPartitions() == 6  # 3 ID ranges for each stream that has entries
        rows = df.collect()
        got = Counter((r.stream, r.id, r.fields["n"]) for r in rows)
        expected = Counter([("orders", i, str(n)) for n, i in enumerate(orders)]
                           + [("payments", i, str(n)) for n, i in enumerate(payments)])
        assert got == expected  # every entry once: ranges neither overlap nor leave gaps
        assert all(r.ts.timestamp() * 1000 == pytest.approx(ids.ms_of(ids.parse(r.id))) for r in rows[:50])

        df.write.format("rill").option("url", url(server)).option("stream", "copy").option("batchSize", "50") \
            .mode("append").save()
        copied = c.xrange("copy")
        assert Counter(tuple(sorted(f.items())) for _, f in copied) == \
            Counter(tuple(sorted({k.encode(): v.encode() for k, v in r.fields.items()}.items())) for r in rows)


def test_user_schema_picks_typed_fields(spark: Any, server: Server) -> None:
    with server.client() as c:
        c.xadd("events", {"user": "ann", "clicks": "3", "price": "9.5", "ok": "true",
                          "at": "2024-05-01T10:00:00Z"})
        c.xadd("events", {"user": "bob", "at": "1714557600000"})  # no clicks; epoch millis
    df = spark.read.format("rill").schema("id string, user string, clicks int, price double, ok boolean, "
                                          "at timestamp, extra string").option("url", url(server)) \
        .option("streams", "events").load()
    rows = df.orderBy("id").collect()
    assert [(r.user, r.clicks, r.price, r.ok, r.extra) for r in rows] == [("ann", 3, 9.5, True, None),
                                                                        ("bob", None, None, None, None)]
    assert [r.at.timestamp() for r in rows] == [1714557600.0, 1714557600.0]


def test_a_value_of_the_wrong_type_names_the_entry(spark: Any, server: Server) -> None:
    with server.client() as c:
        bad = c.xadd("events", {"clicks": "many"}).decode()
    df = spark.read.format("rill").schema("clicks int").option("url", url(server)).option("streams", "events").load()
    with pytest.raises(Exception, match=f"entry {bad}: field 'clicks' is 'many'"):
        df.collect()


def test_offsets_are_inclusive_unless_marked_exclusive(spark: Any, server: Server) -> None:
    with server.client() as c:
        entry_ids = fill(c, "s", 10)

    def read(**options: str) -> list[str]:
        return [r.id for r in _read(spark, server, streams="s", **options).orderBy("id").collect()]

    assert read(startingOffsets=json.dumps({"s": entry_ids[2]}), endingOffsets=json.dumps({"s": entry_ids[5]})) \
        == entry_ids[2:6]
    assert read(startingOffsets=json.dumps({"s": "(" + entry_ids[2]}),
                endingOffsets=json.dumps({"s": "(" + entry_ids[5]})) == entry_ids[3:5]
    assert read(startingOffsets="earliest", endingOffsets="latest") == entry_ids
    assert read(startingOffsets=json.dumps({"s": "(" + entry_ids[-1]})) == []


def test_bad_options_fail_before_any_task(spark: Any, server: Server) -> None:
    with pytest.raises(Exception, match="option streams is required"):
        spark.read.format("rill").option("url", url(server)).load().collect()
    with pytest.raises(Exception, match="option partitionsPerStream must be between 1 and 1024, got 0"):
        _read(spark, server, streams="s", partitionsPerStream="0").collect()
    with pytest.raises(Exception, match="startingOffsets=latest would read nothing"):
        _read(spark, server, streams="s", startingOffsets="latest").collect()
