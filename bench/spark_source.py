"""`python -m bench.spark_source` (`python -m bench --suite spark`): the `rill` Spark data
source against Rill and redis-server in the same run, beside a plain redis-py loop in one
process as the reference.

- read: `--entries` entries of 4 fields in one stream, read into a DataFrame and materialised
  (`write.format("noop")`), read() yielding Arrow batches and yielding Python tuples
  (`arrowBatches=false`), with `--partitions` ID ranges; the reference reads the same entries
  with an XRANGE COUNT `--batch` loop (redis-py, replies parsed into dicts).
- write: a DataFrame of `--entries` rows (4 string columns, `--partitions` partitions) written
  with `df.write.format("rill")`; the reference is a redis-py loop of pipelined XADDs.
- latency: a producer XADDs `--rate` entries/s carrying the send time; a streaming query
  (default trigger: next batch as soon as the last is done) copies them with the data source to
  another stream, where a reader (XREAD BLOCK) takes now - send time. `--seconds` long, the
  first `--warmup` seconds not counted; p50/p90/p99/max. A discarded run comes first (the first
  streaming query of a Spark session is slow until the JVM has warmed up).

Spark runs `local[2]` in this process (the JVM and its Python workers share the cores with the
servers). Each Spark figure is the median of `--rounds` runs after one warm-up run. Results:
bench/results/spark/latest.json and a line of history.jsonl, and a table on stdout.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

import redis

from bench.procs import ROOT, Server, install_exit_handlers, start_redis, start_rill
from bench.report import write_json

FIELDS = {"user": "u00042", "item": "book-0017", "qty": "3", "price": "12.50"}


def _fill(client: redis.Redis, stream: str, count: int) -> None:
    client.delete(stream)
    with client.pipeline(transaction=False) as pipe:
        for n in range(count):
            pipe.xadd(stream, {**FIELDS, "n": str(n)})
            if len(pipe) >= 5000:
                pipe.execute()
        pipe.execute()


def _xrange_loop(client: redis.Redis, stream: str, batch: int) -> int:
    start, read = "-", 0
    while True:
        entries = client.xrange(stream, min=start, max="+", count=batch)
        read += len(entries)
        if len(entries) < batch:
            return read
        start = "(" + entries[-1][0].decode()


def _xadd_loop(client: redis.Redis, stream: str, count: int, batch: int) -> None:
    client.delete(stream)
    with client.pipeline(transaction=False) as pipe:
        for n in range(count):
            pipe.xadd(stream, {**FIELDS, "n": str(n)})
            if len(pipe) >= batch:
                pipe.execute()
        pipe.execute()


class _Target:
    """One server and the Spark jobs measured against it."""

    def __init__(self, spark: Any, server: Server, args: argparse.Namespace) -> None:
        self.spark, self.server, self.args = spark, server, args
        self.url = f"redis://127.0.0.1:{server.port}/0"
        self.client = redis.Redis(port=server.port)
        _fill(self.client, "bench", args.entries)

    def read(self, arrow: bool) -> None:
        (self.spark.read.format("rill").option("url", self.url).option("streams", "bench")
         .option("partitionsPerStream", str(self.args.partitions)).option("batchSize", str(self.args.batch))
         .option("arrowBatches", str(arrow).lower()).load().write.format("noop").mode("overwrite").save())

    def write(self, frame: Any) -> None:
        self.client.delete("bench-out")
        frame.write.format("rill").option("url", self.url).option("stream", "bench-out") \
            .option("batchSize", str(self.args.batch)).mode("append").save()
        assert self.client.xlen("bench-out") == self.args.entries

    def measurements(self, frame: Any) -> dict[str, Any]:
        a = self.args
        return {
            "read_arrow": lambda: self.read(True),
            "read_rows": lambda: self.read(False),
            "read_xrange_loop": lambda: _xrange_loop(self.client, "bench", a.batch),
            "write": lambda: self.write(frame),
            "write_xadd_loop": lambda: _xadd_loop(self.client, "bench-ref", a.entries, a.batch),
        }


def _throughput(spark: Any, targets: dict[str, _Target], args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    """Every measurement on every server, rounds interleaved across the servers (a noisy
    machine then slows both alike); the median of `--rounds` after one warm-up each."""
    frame = spark.createDataFrame([(FIELDS["user"], FIELDS["item"], FIELDS["qty"], str(n))
                                   for n in range(args.entries)], "user string, item string, qty string, n string") \
        .repartition(args.partitions).cache()
    frame.count()
    jobs = {name: t.measurements(frame) for name, t in targets.items()}
    results: dict[str, dict[str, Any]] = {name: {} for name in targets}
    for measure in next(iter(jobs.values())):
        times: dict[str, list[float]] = {name: [] for name in targets}
        for name in targets:
            jobs[name][measure]()  # warm-up: JIT, Python workers, connections
        for r in range(args.rounds):
            order = list(targets) if r % 2 == 0 else list(reversed(list(targets)))
            for name in order:
                started = time.perf_counter()
                jobs[name][measure]()
                times[name].append(time.perf_counter() - started)
        for name in targets:
            results[name][f"{measure}_entries_per_s"] = round(args.entries / statistics.median(times[name]))
    frame.unpersist()
    return results


def latency(spark: Any, port: int, args: argparse.Namespace, source: dict[str, str] | None = None) -> dict[str, Any]:
    """Streaming end-to-end latency through the primary on `port` (`source`: more reader
    options, e.g. replicas to read from)."""
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis(port=port)
    client.delete("lat-in", "lat-out")
    client.xadd("lat-out", {"start": "1"})
    checkpoint = tempfile.mkdtemp(prefix="rill-bench-ckpt-")
    query = (spark.readStream.format("rill").option("url", url).option("streams", "lat-in")
             .option("startingOffsets", "earliest").options(**(source or {})).load()
             .writeStream.format("rill").option("url", url).option("stream", "lat-out")
             .option("checkpointLocation", checkpoint).start())
    samples: list[float] = []
    stop = threading.Event()
    started = time.monotonic()

    def consume() -> None:
        reader = redis.Redis(port=port)
        last = "$"
        while not stop.is_set():
            reply = reader.xread({"lat-out": last}, block=500, count=1000)
            now = time.time()
            for _, entries in reply or []:
                for entry_id, fields in entries:
                    last = entry_id
                    sent = fields.get(b"sent")
                    if sent is not None and time.monotonic() - started > args.warmup:
                        samples.append((now - float(sent)) * 1000)
        reader.close()

    consumer = threading.Thread(target=consume, daemon=True)
    consumer.start()
    produced = 0
    try:
        while (elapsed := time.monotonic() - started) < args.seconds:
            due = int(elapsed * args.rate) - produced
            if due > 0:
                with client.pipeline(transaction=False) as pipe:
                    for _ in range(due):
                        pipe.xadd("lat-in", {"sent": f"{time.time():.6f}", "n": str(produced)})
                        produced += 1
                    pipe.execute()
            time.sleep(0.002)
        time.sleep(3)  # let the last batches through
    finally:
        stop.set()
        consumer.join(5)
        query.stop()
        shutil.rmtree(checkpoint, ignore_errors=True)
    client.delete("lat-in", "lat-out")
    client.close()
    samples.sort()

    def pct(p: float) -> float:
        return round(samples[min(len(samples) - 1, int(len(samples) * p))], 1) if samples else float("nan")

    return {"latency_rate_per_s": args.rate, "latency_samples": len(samples), "latency_p50_ms": pct(0.5),
            "latency_p90_ms": pct(0.9), "latency_p99_ms": pct(0.99),
            "latency_max_ms": round(samples[-1], 1) if samples else None}


def _table(rows: dict[str, dict[str, Any]]) -> str:
    keys = [k for k in next(iter(rows.values()))]
    lines = [f"{'':34}" + "".join(f"{name:>14}" for name in rows) + f"{'rill/redis':>12}"]
    for key in keys:
        values = [rows[name][key] for name in rows]
        ratio = ""
        if all(isinstance(v, int | float) and v for v in values) and len(values) == 2 and "samples" not in key:
            ratio = f"{values[0] / values[1]:.2f}x"
        lines.append(f"{key:34}" + "".join(f"{v!s:>14}" for v in values) + f"{ratio:>12}")
    return "\n".join(lines)


def local_spark() -> Any:
    """The benchmarks' Spark: local[2] on the loopback, quiet, with the `rill` source registered."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from pipeline import RillDataSource

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark.dataSource.register(RillDataSource)
    return spark


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.spark_source", description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=200_000)
    parser.add_argument("--partitions", type=int, default=2)
    parser.add_argument("--batch", type=int, default=5000, help="batchSize for the source and the references")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=1000, help="latency test: entries/s")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--warmup", type=float, default=10)
    parser.add_argument("--servers", default="rill,redis")
    parser.add_argument("--quick", action="store_true", help="tiny run (smoke test)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "spark"))
    args = parser.parse_args(argv)
    if args.quick:
        args.entries, args.rounds, args.seconds, args.warmup, args.rate = 5000, 1, 8, 3, 200
    install_exit_handlers()
    spark = local_spark()
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    servers: dict[str, Server] = {}
    load_before = os.getloadavg()
    try:
        for name in names:
            servers[name] = start_rill() if name == "rill" else start_redis()
        rows = _throughput(spark, {name: _Target(spark, s, args) for name, s in servers.items()}, args)
        # The first streaming query of a session is slow for a while (JVM warm-up): one
        # discarded run first, so neither server pays for it.
        latency(spark, next(iter(servers.values())).port, argparse.Namespace(**{**vars(args), "seconds": args.warmup * 2}))
        for name, server in servers.items():
            rows[name].update(latency(spark, server.port, args))
    finally:
        for server in servers.values():
            server.stop()
        spark.stop()
    load = [round(x, 1) for x in (*load_before, *os.getloadavg())]
    print(f"Spark data source, {args.entries} entries, {args.partitions} partitions, batchSize {args.batch}, "
          f"median of {args.rounds}:")
    print(_table(rows))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    print(f"load average (1/5/15 min) before: {load[:3]}, after: {load[3:]}")
    document = {"suite": "spark", "time": stamp, "args": {k: v for k, v in vars(args).items() if k != "out"},
                "loadavg_before_after": load,
                "rill_native": any(f.startswith("_native__mypyc") for f in os.listdir(os.path.join(ROOT, "node"))),
                "rows": [{"server": name, **values} for name, values in rows.items()]}
    for path in write_json(document, args.out, stamp):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
