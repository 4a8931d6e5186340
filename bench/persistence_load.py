"""`python -m bench.persistence_load`: restart time with a large data set, Rill vs redis-server
loading the equivalent files, side by side.

The data set (the same commands to both): `--entries` stream entries (default 1,000,000)
across `--streams` streams (default 10), one consumer group per stream, and `--pending`
pending entries in all (default 100,000) spread over 5 consumers per group. Then each server
is restarted `--repeat` times from:

* snapshot — Rill's snapshot (SAVE) vs Redis's RDB (SAVE);
* aof-rewritten — after BGREWRITEAOF: Rill's base snapshot vs Redis's RDB-preamble base;
* aof-log — the AOF as written by the commands (no rewrite): every effect replayed.

Reported per case: the load time each server logs ("DB loaded from disk: X seconds"; for
Rill the time from the start of loading to the end) and the wall time from process start to
the first PONG (Rill's includes starting the Python interpreter, about 0.3 s). Results go to
bench/results/persistence-load/ (`latest.json` and a line of `history.jsonl`, bench/report.py).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from bench.client import RespClient, answers_ping
from bench.procs import ROOT, BenchError, Server, free_port
from bench.report import write_json

_REDIS_LOADED = re.compile(r"DB loaded from (?:disk|append only file): ([0-9.]+) seconds")
_RILL_LOADED = re.compile(r"DB loaded from disk: ([0-9.]+) seconds")
# A server stopping with a large data set may write its files first.
_STOP_TIMEOUT = 120.0


def _args(kind: str, workdir: str, port: int, aof: bool) -> list[str]:
    common = ["--port", str(port), "--dir", workdir, "--logfile", os.path.join(workdir, "server.log"),
              "--appendonly", "yes" if aof else "no", "--appendfsync", "everysec",
              "--auto-aof-rewrite-percentage", "0"]
    if kind == "redis":
        return ["redis-server", "--bind", "127.0.0.1", "--save", "", *common]
    return [sys.executable, "-m", "node.main", "node", *common]


def _ping(port: int) -> bool:
    try:
        return answers_ping(port, 1.0)
    except OSError:
        return False


def _start(kind: str, workdir: str, aof: bool) -> tuple[Server, float]:
    """A server on the files in `workdir`, and the seconds from its start to its first PONG
    (polled every 5 ms: what this suite measures)."""
    port = free_port()
    args = _args(kind, workdir, port, aof)
    started = time.monotonic()
    server = Server(kind, port, subprocess.Popen(args, cwd=ROOT, stdout=subprocess.DEVNULL,
                                                 stderr=subprocess.DEVNULL), workdir, args)
    deadline = started + 600
    while not _ping(port):
        if not server.alive() or time.monotonic() > deadline:
            server.stop(_STOP_TIMEOUT)
            raise BenchError(f"{kind} did not start (see {workdir}/server.log)")
        time.sleep(0.005)
    return server, time.monotonic() - started


def _logged_load_seconds(server: Server) -> float | None:
    pattern = _REDIS_LOADED if server.kind == "redis" else _RILL_LOADED
    found = pattern.findall(server.log)
    return float(found[-1]) if found else None


def _commands(entries: int, streams: int) -> Iterator[tuple[str, ...]]:
    for i in range(entries):
        yield ("XADD", f"stream:{i % streams}", "*", "sensor", str(i % 977), "temp", f"{i % 50}.{i % 10}",
               "site", "plant-a")


def load_data(port: int, entries: int, streams: int, pending: int) -> None:
    consumers = 5
    per_group = pending // streams
    with RespClient(port, timeout=600) as client:
        client.pipeline(_commands(entries, streams))
        for s in range(streams):
            client.check("XGROUP", "CREATE", f"stream:{s}", "g", "0")
            delivered = 0
            c = 0
            while delivered < per_group:
                count = min(2000, per_group - delivered)
                client.check("XREADGROUP", "GROUP", "g", f"consumer-{c % consumers}", "COUNT", str(count),
                             "STREAMS", f"stream:{s}", ">")
                delivered += count
                c += 1


def _dir_size(path: str) -> int:
    total = 0
    for root, _, names in os.walk(path):
        for n in names:
            if not n.endswith(".log"):
                total += os.path.getsize(os.path.join(root, n))
    return total


def _restarts(kind: str, workdir: str, aof: bool, repeat: int) -> dict[str, Any]:
    loads: list[float] = []
    ready: list[float] = []
    for _ in range(repeat):
        server, ready_s = _start(kind, workdir, aof)
        try:
            logged = _logged_load_seconds(server)
            with RespClient(server.port) as client:
                info = client.call("INFO", "keyspace")
            if not isinstance(info, bytes) or b"keys=" not in info:
                raise BenchError(f"{kind} restarted empty")
        finally:
            server.stop(_STOP_TIMEOUT)
        if logged is not None:
            loads.append(logged)
        ready.append(ready_s)
    return {"load_s": min(loads) if loads else None, "ready_s": min(ready), "bytes": _dir_size(workdir)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.persistence_load",
                                     description="Restart time with a large data set, Rill vs redis-server.")
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--streams", type=int, default=10)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="restarts per case; the best is reported")
    parser.add_argument("--cases", default="snapshot,aof-rewritten,aof-log")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "persistence-load"))
    args = parser.parse_args(argv)
    cases = [c.strip() for c in args.cases.split(",") if c.strip()]
    results: dict[str, dict[str, Any]] = {}
    started = time.time()
    for case in cases:
        aof = case != "snapshot"
        results[case] = {}
        for kind in ("redis", "rill"):
            workdir = tempfile.mkdtemp(prefix=f"bench-load-{kind}-")
            try:
                server, _ready = _start(kind, workdir, aof)
                try:
                    t = time.monotonic()
                    load_data(server.port, args.entries, args.streams, args.pending)
                    built = time.monotonic() - t
                    with RespClient(server.port, timeout=600) as client:
                        if case == "snapshot":
                            client.check("SAVE")
                        elif case == "aof-rewritten":
                            client.check("BGREWRITEAOF")
                            while b"aof_rewrite_in_progress:0" not in client.check("INFO", "persistence"):  # type: ignore[operator]
                                time.sleep(0.05)
                finally:
                    server.stop(_STOP_TIMEOUT)
                result = _restarts(kind, workdir, aof, args.repeat)
                result["build_s"] = round(built, 2)
                results[case][kind] = result
                print(f"{case:<14} {kind:<5} load {result['load_s']} s, ready {result['ready_s']:.3f} s, "
                      f"{result['bytes']:,} bytes on disk (data built in {built:.1f} s)", file=sys.stderr, flush=True)
            finally:
                shutil.rmtree(workdir, ignore_errors=True)
    print(f"\n{args.entries:,} entries in {args.streams} streams, {args.streams} groups, {args.pending:,} pending")
    print(f"{'case':<14} {'redis load s':>12} {'rill load s':>11} {'ratio':>6} {'redis ready s':>13} {'rill ready s':>12} {'ratio':>6}")
    for case, pair in results.items():
        r, x = pair["redis"], pair["rill"]
        load_ratio = x["load_s"] / r["load_s"] if r["load_s"] and x["load_s"] is not None else None
        pair["load_ratio"] = None if load_ratio is None else round(load_ratio, 2)
        pair["ready_ratio"] = round(x["ready_s"] / r["ready_s"], 2)
        print(f"{case:<14} {r['load_s']!s:>12} {x['load_s']!s:>11} {pair['load_ratio']!s:>6} "
              f"{r['ready_s']:>13.3f} {x['ready_s']:>12.3f} {pair['ready_ratio']:>6}")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    for path in write_json({"timestamp": stamp, "params": vars(args), "results": results}, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
