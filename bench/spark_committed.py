"""`python -m bench.spark_committed` (`python -m bench --suite spark-committed`): what filter
pushdown and committed reads cost or save the `rill` Spark data source, in one run.

- filtered: `--entries` entries 1 ms apart in one stream, on Rill and on redis-server; a batch
  read with a filter on `ts` covering 1 % of them (pushed down: only that ID range is fetched)
  against a full read of the stream, both counted (`.count()`); seconds and their ratio.
- committed: a Rill primary with two replicas; a batch read of the stream from a replica with
  `readCommitted=true` against `readCommitted=false` (entries/s, ratio).
- latency: on that cluster a producer XADDs `--rate` entries/s carrying the send time; a
  streaming query reading the replicas copies them to another stream, where a reader (XREAD
  BLOCK on the primary) takes now - send time, with and without committed reads (p50/p99);
  `--seconds` long, the first `--warmup` seconds not counted, after a discarded run.

Each throughput figure is the median of `--rounds` runs after a warm-up run, with and without
alternating. Results: bench/results/spark-committed/latest.json and a line of history.jsonl.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import redis

from bench import spark_source
from bench.procs import ROOT, Server, install_exit_handlers, start_redis, start_rill
from bench.repl_cluster import Cluster, start_cluster
from bench.report import write_json

BASE_MS = 1_700_000_000_000


def _fill(client: redis.Redis, stream: str, count: int) -> None:
    """`count` entries 1 ms apart from BASE_MS (so a time range is a share of the entries)."""
    client.delete(stream)
    with client.pipeline(transaction=False) as pipe:
        for n in range(count):
            pipe.xadd(stream, {"n": str(n), "user": "u00042", "price": "12.50"}, id=f"{BASE_MS + n}-0")
            if len(pipe) >= 5000:
                pipe.execute()
        pipe.execute()


def _median_seconds(job: Callable[[], Any], rounds: int) -> float:
    job()  # warm-up: JIT, Python workers, connections
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        job()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _filtered(spark: Any, server: Server, args: argparse.Namespace) -> dict[str, Any]:
    from pyspark.sql import functions as F

    client = redis.Redis(port=server.port)
    _fill(client, "bench", args.entries)
    client.close()
    url = f"redis://127.0.0.1:{server.port}/0"
    first, share = BASE_MS + args.entries // 2, max(1, args.entries // 100)

    def frame() -> Any:
        return spark.read.format("rill").option("url", url).option("streams", "bench") \
            .option("partitionsPerStream", str(args.partitions)).option("pushFilters", "true").load()

    def filtered() -> None:
        lo = F.timestamp_millis(F.lit(first))
        hi = F.timestamp_millis(F.lit(first + share - 1))
        assert frame().where((F.col("ts") >= lo) & (F.col("ts") <= hi)).count() == share

    def full() -> None:
        assert frame().count() == args.entries

    filtered_s, full_s = _median_seconds(filtered, args.rounds), _median_seconds(full, args.rounds)
    return {"filtered_1pct_s": round(filtered_s, 3), "full_read_s": round(full_s, 3),
            "full_over_filtered": round(full_s / filtered_s, 1)}


def _committed_read(spark: Any, cluster: Cluster, args: argparse.Namespace) -> dict[str, Any]:
    client = redis.Redis(port=cluster.primary.port)
    _fill(client, "bench", args.entries)
    client.execute_command("WAIT", len(cluster.replicas), 60_000)
    client.close()
    url = f"redis://127.0.0.1:{cluster.primary.port}/0"
    replicas = ",".join(f"redis://127.0.0.1:{r.port}/0" for r in cluster.replicas)

    def read(committed: bool) -> Callable[[], None]:
        def job() -> None:
            count = (spark.read.format("rill").option("url", url).option("readFrom", "replica")
                     .option("replicaUrls", replicas).option("streams", "bench")
                     .option("partitionsPerStream", str(args.partitions)).option("readCommitted", str(committed).lower())
                     .load().count())
            assert count == args.entries
        return job

    times: dict[bool, list[float]] = {True: [], False: []}
    for committed in (True, False):
        read(committed)()
    for r in range(args.rounds):
        for committed in ((True, False) if r % 2 == 0 else (False, True)):
            started = time.perf_counter()
            read(committed)()
            times[committed].append(time.perf_counter() - started)
    with_ = args.entries / statistics.median(times[True])
    without = args.entries / statistics.median(times[False])
    return {"replica_read_committed_entries_per_s": round(with_), "replica_read_all_entries_per_s": round(without),
            "committed_over_all": round(with_ / without, 2)}


def _latency(spark: Any, cluster: Cluster, args: argparse.Namespace, committed: bool) -> dict[str, Any]:
    replicas = ",".join(f"redis://127.0.0.1:{r.port}/0" for r in cluster.replicas)
    found = spark_source.latency(spark, cluster.primary.port, args, {
        "readFrom": "replica", "replicaUrls": replicas, "readCommitted": str(committed).lower()})
    label = "committed" if committed else "all"
    return {f"latency_{label}_samples": found["latency_samples"], f"latency_{label}_p50_ms": found["latency_p50_ms"],
            f"latency_{label}_p99_ms": found["latency_p99_ms"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_committed", description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=1000, help="latency test: entries/s")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "spark-committed"))
    args = parser.parse_args(argv)
    if args.quick:
        args.entries, args.rounds, args.seconds, args.warmup, args.rate = 20_000, 1, 8, 3, 200
    install_exit_handlers()
    spark = spark_source.local_spark()
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    load_before = os.getloadavg()
    rows: dict[str, dict[str, Any]] = {}
    try:
        for name, start in (("rill", start_rill), ("redis", start_redis)):
            server = start()
            try:
                rows[name] = _filtered(spark, server, args)
            finally:
                server.stop()
        cluster = start_cluster("rill", 2)
        try:
            rows["rill-replicated"] = _committed_read(spark, cluster, args)
            _latency(spark, cluster, argparse.Namespace(**{**vars(args), "seconds": args.warmup * 2}), True)
            for committed in (True, False):
                rows["rill-replicated"].update(_latency(spark, cluster, args, committed))
        finally:
            cluster.stop()
    finally:
        spark.stop()
    load = [round(x, 1) for x in (*load_before, *os.getloadavg())]
    for name, values in rows.items():
        print(f"{name:16} " + "  ".join(f"{k}={v}" for k, v in values.items()))
    print(f"load average (1/5/15 min) before: {load[:3]}, after: {load[3:]}")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    document = {"suite": "spark-committed", "time": stamp, "args": {k: v for k, v in vars(args).items() if k != "out"},
                "loadavg_before_after": load,
                "rill_native": any(f.startswith("_native__mypyc") for f in os.listdir(os.path.join(ROOT, "node"))),
                "rows": [{"server": name, **values} for name, values in rows.items()]}
    for path in write_json(document, args.out, stamp):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
