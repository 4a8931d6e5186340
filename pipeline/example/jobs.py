"""The example's Spark jobs. Streaming: the shop events, read from a replica, become revenue
per category and 10-second event-time window, with a 10-second watermark so late events still
count and a window is emitted once, when it can no longer change; the windows go to a Rill
stream (exactly once where the server has IDMP) and to Parquet. Batch: a report over the
event history and the windows written."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming.query import StreamingQuery

from pipeline.queries import start_in_turn

EVENT_SCHEMA = ("id string, kind string, user string, product string, category string, price double, "
                "quantity int, country string, event_time timestamp")
WINDOW_SCHEMA = ("window_start timestamp, window_end timestamp, category string, events long, orders long, "
                 "revenue double, approx_users long")
WINDOW = "10 seconds"
WATERMARK = "10 seconds"


def revenue_windows(events: DataFrame) -> DataFrame:
    orders = F.col("kind") == "order"
    return (events.withWatermark("event_time", WATERMARK)
            .groupBy(F.window("event_time", WINDOW).alias("w"), "category")
            .agg(F.count(F.lit(1)).alias("events"),
                 F.sum(F.when(orders, 1).otherwise(0)).alias("orders"),
                 F.round(F.sum(F.when(orders, F.col("price") * F.col("quantity")).otherwise(0.0)), 2).alias("revenue"),
                 F.approx_count_distinct("user").alias("approx_users"))
            .select(F.col("w.start").alias("window_start"), F.col("w.end").alias("window_end"), "category",
                    "events", "orders", "revenue", "approx_users"))


def start_streaming(spark: SparkSession, source: dict[str, str], target_url: str, windows_stream: str,
                    parquet_dir: str, checkpoints: str) -> list[StreamingQuery]:
    events = spark.readStream.format("rill").schema(EVENT_SCHEMA).options(**source).load()
    windows = revenue_windows(events)
    to_rill = (windows.writeStream.queryName("windows_to_rill").format("rill").option("url", target_url)
               .option("stream", windows_stream).option("checkpointLocation", f"{checkpoints}/rill")
               .outputMode("append").trigger(processingTime="2 seconds"))
    to_parquet = (windows.writeStream.queryName("windows_to_parquet").format("parquet").option("path", parquet_dir)
                  .option("checkpointLocation", f"{checkpoints}/parquet").outputMode("append")
                  .trigger(processingTime="5 seconds"))
    # One at a time: two queries creating their `rill` sources at once can corrupt the map
    # Spark shares between them (pipeline/queries.py).
    return start_in_turn([to_rill, to_parquet])


def report(spark: SparkSession, url: str, events_stream: str, windows_stream: str, parquet_dir: str) -> dict[str, Any]:
    """Prints the report; returns its headline numbers."""
    events = (spark.read.format("rill").schema(EVENT_SCHEMA).option("url", url).option("streams", events_stream)
              .option("partitionsPerStream", "4").load().cache())
    total = events.count()
    print(f"\n== Batch report: {total} events in stream {events_stream!r} "
          f"({events.rdd.getNumPartitions()} partitions read in parallel) ==")
    print("Events by kind:")
    events.groupBy("kind").count().orderBy(F.desc("count")).show(truncate=False)
    print("Order revenue by country:")
    (events.where(F.col("kind") == "order").groupBy("country")
     .agg(F.count(F.lit(1)).alias("orders"), F.round(F.sum(F.col("price") * F.col("quantity")), 2).alias("revenue"))
     .orderBy(F.desc("revenue")).show(truncate=False))
    windows = (spark.read.format("rill").schema(WINDOW_SCHEMA).option("url", url)
               .option("streams", windows_stream).load())
    in_rill = windows.count()
    in_parquet = spark.read.parquet(parquet_dir).count() if in_rill else 0
    print(f"Windowed aggregates: {in_rill} rows in stream {windows_stream!r}, {in_parquet} rows in Parquet "
          f"({parquet_dir}). Latest windows:")
    windows.orderBy(F.desc("window_start"), F.desc("revenue")).show(8, truncate=False)
    events.unpersist()
    return {"events": total, "windows_rill": in_rill, "windows_parquet": in_parquet}
