"""``python -m pipeline.example`` (``make pipeline``): the whole example end to end.

It starts a local Rill cluster (``rill cluster``: a primary and two replicas, as processes),
two producers writing shop events to the primary, and the streaming job of
``pipeline.example.jobs`` reading from the replicas; it prints progress every few seconds,
stops the producers after ``--seconds``, lets the job drain, runs the batch report, and stops
everything. ``--url`` (with ``--replica-url``) uses a running server instead of a new cluster.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from typing import Any

import redis

from pipeline.example.events import Producer

EVENTS = "shop:events"
WINDOWS = "shop:revenue-10s"


def _free_base_port() -> int:
    """A port P with P, P+1 and P+2 free on loopback (the cluster's three nodes)."""
    rng = random.Random()
    for _ in range(200):
        base = rng.randint(20_000, 30_000)
        try:
            for port in (base, base + 1, base + 2):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no three consecutive free ports found")


def _start_cluster(port: int) -> subprocess.Popen[str]:
    print(f"Starting a local Rill cluster: rill cluster --port {port}")
    proc = subprocess.Popen([sys.executable, "-m", "node.main", "cluster", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + 90
    lines: list[str] = []
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError("the cluster did not start:\n" + "".join(lines))
        lines.append(line)
        if line.startswith("Try:"):
            print("".join("  | " + x for x in lines[:-1]), end="")
            return proc
    proc.terminate()
    raise RuntimeError("the cluster was not ready in 90 s:\n" + "".join(lines))


def _progress(started: float, producers: list[Producer], queries: list[Any], primary: redis.Redis,
              replica: redis.Redis) -> None:
    sent = sum(p.sent for p in producers)
    on_replica = replica.xlen(EVENTS)
    lag = primary.xlen(EVENTS) - on_replica
    parts = [f"t={time.monotonic() - started:5.1f}s produced={sent:6d} replica_lag={lag:3d} "
             f"windows_in_rill={primary.xlen(WINDOWS) if primary.exists(WINDOWS) else 0:4d}"]
    for q in queries:
        p = q.lastProgress
        if p:
            parts.append(f"{q.name}: batch {p['batchId']} in={p['numInputRows']} "
                         f"{p.get('processedRowsPerSecond') or 0:.0f} rows/s wm={p['eventTime'].get('watermark', '-')}")
    print("  " + " | ".join(parts), flush=True)


def _drain(queries: list[Any], primary: redis.Redis, timeout: float = 120) -> None:
    """Until every query has read the last event and run a batch with no new input after it
    (which is when the windows the watermark closed are written)."""
    last = primary.xrevrange(EVENTS, count=1)
    raw = last[0][0] if last else None
    target = raw.decode() if isinstance(raw, bytes) else raw
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        progress = [q.lastProgress for q in queries]
        if all(p and p["numInputRows"] == 0 and _read_up_to(p["sources"][0]["endOffset"]) == target for p in progress):
            return
        time.sleep(1)
    print(f"  (the job had not caught up after {timeout:.0f}s)")


def _read_up_to(end_offset: str | None) -> str | None:
    """Where a progress report's end offset has read EVENTS up to (pipeline.offsets' JSON)."""
    offset = json.loads(end_offset or "{}")
    found = (offset.get("streams") or offset).get(EVENTS)
    return str(found) if found is not None else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pipeline.example", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60, help="how long the producers run (default 60)")
    parser.add_argument("--rate", type=int, default=300, help="events per second in total (default 300)")
    parser.add_argument("--url", help="a running primary (redis://host:port/0) instead of a new cluster")
    parser.add_argument("--replica-url", action="append", default=[], help="a replica of --url (repeatable)")
    parser.add_argument("--out", help="where Parquet and checkpoints go (default: a temporary directory, removed)")
    args = parser.parse_args(argv)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)

    cluster = None
    out = args.out or tempfile.mkdtemp(prefix="rill-pipeline-")
    try:
        if args.url:
            url, replica_urls = args.url, args.replica_url
        else:
            port = _free_base_port()
            cluster = _start_cluster(port)
            url = f"redis://127.0.0.1:{port}/0"
            replica_urls = [f"redis://127.0.0.1:{port + 1}/0", f"redis://127.0.0.1:{port + 2}/0"]
        primary = redis.Redis.from_url(url)
        replica = redis.Redis.from_url(replica_urls[0]) if replica_urls else primary
        primary.delete(EVENTS, WINDOWS)

        from pyspark.sql import SparkSession

        from pipeline import RillDataSource
        from pipeline.example import jobs

        print("Starting Spark (local[2,4])...", flush=True)
        # 2 cores; a failed task is tried up to 4 times, as spark.task.maxFailures does on a
        # cluster (local mode's default is once). The writer relies on it: a partition whose
        # writes it cannot confirm durable (a failover, a replica too slow for WAIT) fails its
        # task so that the retry sends the whole partition again, which IDMP deduplicates.
        spark = (SparkSession.builder.master("local[2,4]").appName("rill-pipeline")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.shuffle.partitions", "2")
                 .config("spark.driver.bindAddress", "127.0.0.1").config("spark.driver.host", "127.0.0.1")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(RillDataSource)

        producers = [Producer(redis.Redis.from_url(url), EVENTS, args.rate // 2, seed) for seed in (1, 2)]
        for p in producers:
            p.start()
        source = {"url": url, "streams": EVENTS, "startingOffsets": "earliest", "maxEntriesPerTrigger": "5000"}
        if replica_urls:
            source |= {"readFrom": "replica", "replicaUrls": ",".join(replica_urls)}
        parquet_dir = os.path.join(out, "revenue-10s.parquet")
        queries = jobs.start_streaming(spark, source, url, WINDOWS, parquet_dir, os.path.join(out, "checkpoints"))
        print(f"Producing {args.rate} events/s into {EVENTS!r} for {args.seconds:.0f}s; the streaming job reads "
              f"{'the replicas' if replica_urls else 'the primary'} and writes {WINDOWS!r} and {parquet_dir}")
        started = time.monotonic()
        while time.monotonic() - started < args.seconds:
            time.sleep(5)
            _progress(started, producers, queries, primary, replica)
            failed = [p.error for p in producers if p.error] + [q.exception() for q in queries if q.exception()]
            if failed:
                raise RuntimeError(f"the pipeline failed: {failed[0]}")
        for p in producers:
            p.stop()
        print("Producers stopped; letting the job catch up...", flush=True)
        _drain(queries, primary)
        _progress(started, producers, queries, primary, replica)
        for q in queries:
            q.stop()
        jobs.report(spark, url, EVENTS, WINDOWS, parquet_dir)
        spark.stop()
        return 0
    finally:
        if cluster is not None:
            cluster.terminate()
            try:
                cluster.wait(20)
            except subprocess.TimeoutExpired:
                cluster.kill()
        if not args.out:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
