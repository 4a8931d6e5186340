"""Memory per entry and hot-path timings of node.engine.stream.Stream, beside redis-server.

Two entry shapes, 1,000,000 entries each, IDs from consecutive milliseconds (seq 0):
  f:v      {"f": "v"}
  4-field  {"user_id": <5 digits>, "event": click|view|scroll, "page": /home|/cart|/product/12, "ts": <13 digits>}

Rill's bytes/entry are the process RSS growth while loading (the number an operator sees)
and Stream.memory_bytes() (the sizes of the objects the stream holds).  Redis's are the growth
of INFO memory used_memory while the same entries are loaded with pipelined redis-py into a
throw-away redis-server on 127.0.0.1 (no persistence), which is always stopped afterwards.
Timings: XADD-equivalent add() per op over each decade, and range(COUNT 10) per op at
10^4, 10^5, 10^6 entries (random start, like XRANGE start + COUNT 10; and the newest 10,
like XREVRANGE + - COUNT 10).

    python bench/stream_memory.py [--entries N] [--no-redis] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from node.engine.ids import MAX_ID, format_id, make_id  # noqa: E402
from node.engine.stream import Stream  # noqa: E402

BASE_MS = 1_700_000_000_000
RANGE_CALLS = 20_000

Fields = list[bytes]


def shape_fv(n: int) -> Iterator[Fields]:
    for _ in range(n):
        yield [b"f", b"v"]


def shape_4field(n: int) -> Iterator[Fields]:
    rnd = random.Random(42)
    events = [b"click", b"view", b"scroll"]
    pages = [b"/home", b"/cart", b"/product/12"]
    for i in range(n):
        yield [
            b"user_id",
            b"%d" % rnd.randrange(10000, 100000),
            b"event",
            events[rnd.randrange(3)],
            b"page",
            pages[rnd.randrange(3)],
            b"ts",
            b"%d" % (BASE_MS + i),
        ]


SHAPES: dict[str, Callable[[int], Iterator[Fields]]] = {"f:v": shape_fv, "4-field": shape_4field}


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def time_ranges(s: Stream, n: int) -> tuple[float, float]:
    """Microseconds per range(COUNT 10): random start, and newest-first from the end."""
    rnd = random.Random(7)
    starts = [make_id(BASE_MS + rnd.randrange(n), 0) for _ in range(RANGE_CALLS)]
    t0 = time.perf_counter()
    for start in starts:
        s.range(start, MAX_ID, 10)
    fwd = (time.perf_counter() - t0) / RANGE_CALLS * 1e6
    t0 = time.perf_counter()
    for _ in range(RANGE_CALLS):
        s.range(0, MAX_ID, 10, rev=True)
    rev = (time.perf_counter() - t0) / RANGE_CALLS * 1e6
    return fwd, rev


def measure_rill(name: str, n: int) -> dict[str, Any]:
    checkpoints = [c for c in (10_000, 100_000, 1_000_000) if c < n] + [n]
    rss0 = rss_bytes()
    s = Stream()
    gen = SHAPES[name](n)
    done = 0
    rows = []
    for cp in checkpoints:
        t0 = time.perf_counter()
        for i in range(done, cp):
            s.add(make_id(BASE_MS + i, 0), next(gen))
        add_us = (time.perf_counter() - t0) / (cp - done) * 1e6
        done = cp
        if cp == n:
            rss_per_entry = (rss_bytes() - rss0) / n
        fwd, rev = time_ranges(s, cp)
        rows.append({"entries": cp, "add_us": add_us, "range10_us": fwd, "revrange10_us": rev})
    if n <= 100_000:
        s._check()
    return {
        "shape": name,
        "entries": n,
        "rss_bytes_per_entry": rss_per_entry,
        "memory_bytes_per_entry": s.memory_bytes() / n,
        "nodes": s.node_count(),
        "timings": rows,
    }


def measure_redis(names: list[str], n: int) -> dict[str, float] | str:
    if shutil.which("redis-server") is None:
        return "redis-server not installed"
    try:
        import redis  # noqa: F401  (bench.procs needs it: imported here, the engine figures do not)
    except ImportError:
        return "redis-py not installed"
    from bench.procs import start_redis
    # The benchmarks' redis-server (no persistence, a throwaway directory), ready once it
    # answers PING; stopped, and its directory removed, whatever happens.
    server = start_redis()
    try:
        client = server.client()
        out: dict[str, float] = {}
        version = client.info("server")["redis_version"]
        for name in names:
            key = "bench:" + name
            before = client.info("memory")["used_memory"]
            pipe = client.pipeline(transaction=False)
            for i, fields in enumerate(SHAPES[name](n)):
                pipe.xadd(
                    key, dict(zip(fields[0::2], fields[1::2], strict=True)), id=format_id(make_id(BASE_MS + i, 0))
                )
                if i % 10_000 == 9_999:
                    pipe.execute()
            pipe.execute()
            after = client.info("memory")["used_memory"]
            assert client.xlen(key) == n
            out[name] = (after - before) / n
            client.delete(key)
        print(f"redis-server {version} on 127.0.0.1:{server.port}")
        return out
    finally:
        server.stop(10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--no-redis", action="store_true")
    ap.add_argument("--json", type=Path, help="also write the results here")
    ap.add_argument("--child", choices=list(SHAPES), help=argparse.SUPPRESS)
    args = ap.parse_args()
    n = args.entries
    if args.child:
        print(json.dumps(measure_rill(args.child, n)))
        return
    names = list(SHAPES)
    t_start = time.perf_counter()
    # One fresh process per shape, so that memory freed by an earlier run cannot hide growth.
    results = [
        json.loads(
            subprocess.run(
                [sys.executable, __file__, "--child", name, "--entries", str(n)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        for name in names
    ]
    redis_res = "skipped (--no-redis)" if args.no_redis else measure_redis(names, n)

    print(f"\nbytes per entry, {n:,} entries")
    print(f"{'shape':<9} {'rill RSS':>9} {'rill objs':>10} {'redis':>8} {'ratio':>6}  nodes")
    for r in results:
        red = redis_res.get(r["shape"]) if isinstance(redis_res, dict) else None
        red_s = f"{red:8.1f}" if red else "       -"
        ratio = f"{r['rss_bytes_per_entry'] / red:6.2f}" if red else "     -"
        print(
            f"{r['shape']:<9} {r['rss_bytes_per_entry']:9.1f} {r['memory_bytes_per_entry']:10.1f} "
            f"{red_s} {ratio}  {r['nodes']}"
        )
    if not isinstance(redis_res, dict):
        print(f"redis: {redis_res}")
    print("\nmicroseconds per op (add: mean over the decade reaching the size)")
    print(f"{'shape':<9} {'entries':>9} {'add':>7} {'range10':>8} {'rev10':>7}")
    for r in results:
        for row in r["timings"]:
            print(
                f"{r['shape']:<9} {row['entries']:>9,} {row['add_us']:7.2f} "
                f"{row['range10_us']:8.2f} {row['revrange10_us']:7.2f}"
            )
    print(f"\ntotal {time.perf_counter() - t_start:.1f} s")
    if args.json:
        args.json.write_text(json.dumps({"rill": results, "redis": redis_res}, indent=2))


if __name__ == "__main__":
    main()
