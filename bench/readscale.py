"""`python -m bench.readscale`: read scaling over replicas, Rill beside redis-server in the
same run. A primary with two replicas (`bench.repl_cluster.start_cluster`: redis-server
replicas via `--replicaof`, Rill's via `--replicaof`), producers writing at full speed to the
primary, and many readers placed either all on the primary or spread over the two replicas:

* tailers follow one stream each with `XREAD COUNT 500 BLOCK 1000 STREAMS key <last id>`;
* scanners page through one stream each with `XRANGE key (<last id> + COUNT 100`, starting
  again from `-` when they reach its end.

Reported per server and placement (medians of `--rounds` interleaved rounds): the primary's
write throughput (XADDs acknowledged/s) and CPU per XADD (serving the readers included), the
read throughput (entries delivered to tailers/s,
XRANGE calls/s and entries/s), how stale the tailers' reads were (arrival - the entry ID's
millisecond), and the CPU of each node and of the clients (percent of one core; processes'
utime + stime, threads included), with the host's steal and the CPU other processes of this machine took meanwhile
("others": other engineers' tests share it). Every process shares this machine's
cores, so moving the reads to the replicas moves their CPU off the primary but not off the
machine: the CPU columns say where it went.

The readers' addresses are given directly (a Sentinel-aware client would ask `slave_for`).
Writers and readers are two driver processes (this module with --driver write|read): uvloop,
raw asyncio protocols and hiredis, as in bench/stream_latency.py, so the clients cost little.
Results: bench/results/readscale/latest.json and a line of history.jsonl, and a table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import hiredis

from bench.client import ERRORS, AsyncConnection, RespClient, connect, encode
from bench.procs import ROOT, BenchError, busy_cpu_seconds, install_exit_handlers, steal_share
from bench.repl_cluster import Cluster, start_cluster, wait_caught_up
from bench.report import write_json
from node.replication.loop_load import host_steal_ticks

KINDS = ("redis", "rill")
PLACEMENTS = ("primary", "replicas")
TAIL_COUNT = 500
TAIL_BLOCK_MS = 1000
SCAN_COUNT = 100
MAXLEN = 100_000  # `MAXLEN ~`: each stream stays about this long however long the run
PRELOAD = 2_000  # entries per stream before the run, so scanners have pages at once
VALUE = b"x" * 32


# -- drivers: the client processes --------------------------------------------------------------

class _Window:
    """The measured interval, in time.time_ns(), shared by both drivers and the orchestrator."""

    def __init__(self, start_ns: int, warmup: float, seconds: float) -> None:
        self.set(start_ns, warmup, seconds)

    def set(self, start_ns: int, warmup: float, seconds: float) -> None:
        self.begin = start_ns + int(warmup * 1e9)
        self.end = self.begin + int(seconds * 1e9)

    def counts(self, now: int) -> bool:
        return self.begin <= now < self.end


class Writer:
    """XADD at full speed: `depth` commands in flight on one connection, round-robin over the
    streams; counts the replies that arrive inside the window."""

    def __init__(self, keys: list[str], depth: int, window: _Window) -> None:
        self.commands = [encode(("XADD", key, "MAXLEN", "~", MAXLEN, "*", "v", VALUE)) for key in keys]
        self.depth = depth
        self.window = window
        self.conn = AsyncConnection(self.on_reply)
        self.next = 0
        self.acked = 0
        self.running = True

    def _send(self, count: int) -> None:
        out = []
        for _ in range(count):
            out.append(self.commands[self.next % len(self.commands)])
            self.next += 1
        self.conn.write(b"".join(out))

    def start(self) -> None:
        self._send(self.depth)

    def on_reply(self, reply: object, now: int) -> None:
        if self.window.counts(now):
            self.acked += 1
        if self.running:
            self._send(1)


class Tailer:
    """Follows one stream from its end with XREAD BLOCK; counts the entries that arrive
    inside the window and how old each batch's last entry was (its ID's millisecond)."""

    def __init__(self, key: str, window: _Window, staleness_ms: list[float]) -> None:
        self.key = key
        self.window = window
        self.staleness_ms = staleness_ms
        self.conn = AsyncConnection(self.on_reply)
        self.last = b"$"
        self.entries = 0
        self.running = True

    def start(self) -> None:
        self.conn.write(encode(("XREAD", "COUNT", TAIL_COUNT, "BLOCK", TAIL_BLOCK_MS, "STREAMS", self.key, self.last)))

    def on_reply(self, reply: object, now: int) -> None:
        if isinstance(reply, list):
            entries = reply[0][1]
            self.last = entries[-1][0]
            if self.window.counts(now):
                self.entries += len(entries)
                self.staleness_ms.append(now / 1e6 - int(self.last.split(b"-")[0]))
        if self.running and not isinstance(reply, hiredis.ReplyError):
            self.start()


class Scanner:
    """Pages through one stream with XRANGE COUNT, from `-` again once at its end."""

    def __init__(self, key: str, window: _Window) -> None:
        self.key = key
        self.window = window
        self.conn = AsyncConnection(self.on_reply)
        self.cursor = b"-"
        self.calls = 0
        self.entries = 0
        self.running = True

    def start(self) -> None:
        self.conn.write(encode(("XRANGE", self.key, self.cursor, "+", "COUNT", SCAN_COUNT)))

    def on_reply(self, reply: object, now: int) -> None:
        if isinstance(reply, list):
            if self.window.counts(now):
                self.calls += 1
                self.entries += len(reply)
            self.cursor = b"(" + reply[-1][0] if len(reply) == SCAN_COUNT else b"-"
        if self.running and not isinstance(reply, hiredis.ReplyError):
            self.start()


async def _drive(args: argparse.Namespace) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    window = _Window(0, args.warmup, args.seconds)  # set once the orchestrator sends the start
    keys = [f"readscale:{i}" for i in range(args.streams)]
    ports = [int(p) for p in args.ports.split(",")]
    staleness: list[float] = []
    clients: list[Writer | Tailer | Scanner] = []
    if args.driver == "write":
        clients += [Writer(keys, args.depth, window) for _ in range(args.producers)]
    else:
        clients += [Tailer(keys[i % len(keys)], window, staleness) for i in range(args.tailers)]
        clients += [Scanner(keys[i % len(keys)], window) for i in range(args.scanners)]
    # Readers are dealt over the given ports in turn: one port, or one per replica.
    for i, client in enumerate(clients):
        await connect(client.conn, ports[i % len(ports)])
    # The window starts when both drivers are connected (a fixed delay was too short on a busy
    # host: the window passed before the clients ran and every count was 0).
    print("connected", flush=True)
    start_ns = int(await loop.run_in_executor(None, sys.stdin.readline))
    window.set(start_ns, args.warmup, args.seconds)
    for client in clients:
        client.start()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu_before = 0.0
    while time.time_ns() < window.end:
        if cpu_before == 0.0 and time.time_ns() >= window.begin:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu_before = usage.ru_utime + usage.ru_stime
        await asyncio.sleep(0.01)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - cpu_before
    for client in clients:
        client.running = False
        if client.conn.lost:
            ERRORS.append(f"{type(client).__name__} lost its connection")
    staleness.sort()
    return {
        "errors": ERRORS[:5],
        "client_cpu_percent": round(100 * cpu / args.seconds, 1),
        "xadd_acked": sum(c.acked for c in clients if isinstance(c, Writer)),
        "tail_entries": sum(c.entries for c in clients if isinstance(c, Tailer)),
        "scan_calls": sum(c.calls for c in clients if isinstance(c, Scanner)),
        "scan_entries": sum(c.entries for c in clients if isinstance(c, Scanner)),
        "staleness_p50_ms": round(staleness[len(staleness) // 2], 2) if staleness else None,
        "staleness_p99_ms": round(staleness[int(len(staleness) * 0.99)], 2) if staleness else None,
    }


def driver_main(args: argparse.Namespace) -> int:
    try:
        import uvloop
    except ImportError:
        result = asyncio.run(_drive(args))
    else:
        result = uvloop.run(_drive(args))
    print(json.dumps(result))
    return 0


# -- orchestrator ------------------------------------------------------------------------------

def _preload(cluster: Cluster, streams: int) -> None:
    with RespClient(cluster.primary.port) as client:
        for i in range(streams):
            client.pipeline(("XADD", f"readscale:{i}", "*", "v", VALUE) for _ in range(PRELOAD))
    wait_caught_up(cluster.primary, cluster.replicas)


def _driver(role: str, ports: list[int], args: argparse.Namespace) -> subprocess.Popen[str]:
    """A driver process; it prints "connected" once its clients are, then reads the window's
    start (time.time_ns()) from stdin."""
    cmd = [sys.executable, "-m", "bench.readscale", "--driver", role, "--ports", ",".join(map(str, ports)),
           "--warmup", str(args.warmup), "--seconds", str(args.seconds),
           "--streams", str(args.streams), "--producers", str(args.producers), "--depth", str(args.depth),
           "--tailers", str(args.tailers), "--scanners", str(args.scanners)]
    return subprocess.Popen(cmd, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def _start_drivers(drivers: dict[str, subprocess.Popen[str]], args: argparse.Namespace) -> _Window:
    """Waits until every driver is connected, then gives them all the same window."""
    for role, proc in drivers.items():
        assert proc.stdout is not None and proc.stdin is not None
        if proc.stdout.readline().strip() != "connected":
            proc.wait(timeout=60)
            raise BenchError(f"the {role} driver did not connect: {proc.stderr.read().strip()[-2000:] if proc.stderr else ''}")
    start_ns = time.time_ns() + int(0.1e9)
    for proc in drivers.values():
        assert proc.stdin is not None
        proc.stdin.write(f"{start_ns}\n")
        proc.stdin.flush()
    return _Window(start_ns, args.warmup, args.seconds)


def _sleep_until(ns: int) -> None:
    delay = (ns - time.time_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)


def run_once(kind: str, placement: str, args: argparse.Namespace) -> dict[str, Any]:
    cluster = start_cluster(kind, 2)
    try:
        _preload(cluster, args.streams)
        nodes = [cluster.primary, *cluster.replicas]
        read_ports = [cluster.primary.port] if placement == "primary" else [r.port for r in cluster.replicas]
        drivers = {"read": _driver("read", read_ports, args),
                   "write": _driver("write", [cluster.primary.port], args)}
        window = _start_drivers(drivers, args)
        _sleep_until(window.begin)
        cpu_before = [n.cpu_seconds() for n in nodes]
        steal_before, busy_before = host_steal_ticks(), busy_cpu_seconds()
        _sleep_until(window.end)
        cpu = [n.cpu_seconds() - b for n, b in zip(nodes, cpu_before)]
        steal = steal_share(steal_before, host_steal_ticks())
        busy = busy_cpu_seconds() - busy_before
        out: dict[str, dict[str, Any]] = {}
        for role, proc in drivers.items():
            try:
                stdout, stderr = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                raise BenchError(f"the {role} driver against {kind} did not finish") from None
            if proc.returncode != 0:
                raise BenchError(f"the {role} driver against {kind} failed: {stderr.strip()[-2000:]}")
            out[role] = json.loads(stdout)
            if out[role]["errors"]:
                raise BenchError(f"{kind} replied errors to the {role} driver: {out[role]['errors']}")
        dead = [n.kind for n in nodes if not n.alive()]
        if dead:
            raise BenchError(f"a {kind} node exited during the run")
    finally:
        cluster.stop()
    read, write = out["read"], out["write"]
    seconds = args.seconds
    ours = sum(cpu) + (write["client_cpu_percent"] + read["client_cpu_percent"]) * seconds / 100
    return {"xadd_per_s": round(write["xadd_acked"] / seconds),
            # The primary's CPU per XADD, what it spends serving readers included: the steadier
            # figure on a shared machine, where every process waits its turn for a core.
            "primary_cpu_us_per_xadd": round(cpu[0] * 1e6 / max(1, write["xadd_acked"]), 2),
            "tail_entries_per_s": round(read["tail_entries"] / seconds),
            "scan_calls_per_s": round(read["scan_calls"] / seconds),
            "scan_entries_per_s": round(read["scan_entries"] / seconds),
            "staleness_p50_ms": read["staleness_p50_ms"], "staleness_p99_ms": read["staleness_p99_ms"],
            "cpu_percent": {"primary": round(100 * cpu[0] / seconds, 1),
                            "replica-1": round(100 * cpu[1] / seconds, 1),
                            "replica-2": round(100 * cpu[2] / seconds, 1),
                            "writers": write["client_cpu_percent"], "readers": read["client_cpu_percent"],
                            "others": round(max(0.0, 100 * (busy - ours) / seconds), 1)},
            "steal_percent": round(100 * steal, 1)}


def _median(runs: list[dict[str, Any]]) -> dict[str, Any]:
    def med(get: Callable[[dict[str, Any]], Any]) -> float:
        values = [get(r) for r in runs if get(r) is not None]
        return round(statistics.median(values), 2) if values else 0.0

    flat = ("xadd_per_s", "primary_cpu_us_per_xadd", "tail_entries_per_s", "scan_calls_per_s", "scan_entries_per_s",
            "staleness_p50_ms", "staleness_p99_ms")
    row: dict[str, Any] = {name: med(lambda r, n=name: r[n]) for name in flat}
    row["cpu_percent"] = {node: med(lambda r, n=node: r["cpu_percent"][n]) for node in runs[0]["cpu_percent"]}
    row["steal_percent_rounds"] = [r["steal_percent"] for r in runs]
    row["xadd_per_s_rounds"] = [r["xadd_per_s"] for r in runs]
    return row


def _table(doc: dict[str, Any]) -> str:
    p = doc["params"]
    lines = [f"Read scaling: {p['producers']} writers x {p['depth']} in flight on the primary; {p['tailers']} tailers "
             f"(XREAD BLOCK) + {p['scanners']} scanners (XRANGE COUNT {SCAN_COUNT}) over {p['streams']} streams, "
             f"on the primary or spread over 2 replicas; {p['seconds']:g} s per run, median of {p['rounds']} rounds",
             f"  {'placement':<10}{'server':<7}{'XADD/s':>9}{'prim µs/XADD':>13}{'tail ent/s':>12}{'XRANGE/s':>10}{'scan ent/s':>12}"
             f"{'stale p50/p99 ms':>18}   CPU % primary / replica-1 / replica-2 / writers / readers / others"]
    for placement in PLACEMENTS:
        for kind in KINDS:
            r = doc["results"][placement][kind]
            c = r["cpu_percent"]
            lines.append(f"  {placement:<10}{kind:<7}{r['xadd_per_s']:>9,.0f}{r['primary_cpu_us_per_xadd']:>13.1f}"
                         f"{r['tail_entries_per_s']:>12,.0f}"
                         f"{r['scan_calls_per_s']:>10,.0f}{r['scan_entries_per_s']:>12,.0f}"
                         f"{r['staleness_p50_ms']:>9.1f}/{r['staleness_p99_ms']:<8.1f}"
                         f"   {c['primary']:.0f} / {c['replica-1']:.0f} / {c['replica-2']:.0f}"
                         f" / {c['writers']:.0f} / {c['readers']:.0f} / {c['others']:.0f}")
    lines.append("  rill/redis:")
    for placement in PLACEMENTS:
        rill, redis = doc["results"][placement]["rill"], doc["results"][placement]["redis"]
        ratios = [f"{name} {rill[key] / redis[key]:.2f}" if redis[key] else f"{name} -"
                  for name, key in (("XADD/s", "xadd_per_s"), ("primary CPU/XADD", "primary_cpu_us_per_xadd"),
                                    ("tail entries/s", "tail_entries_per_s"), ("XRANGE/s", "scan_calls_per_s"))]
        lines.append(f"    {placement:<10}" + ", ".join(ratios))
    lines.append("  replicas/primary placement (each server against itself):")
    for kind in KINDS:
        on_primary, spread = doc["results"]["primary"][kind], doc["results"]["replicas"][kind]
        ratios = [f"{name} {spread[key] / on_primary[key]:.2f}" if on_primary[key] else f"{name} -"
                  for name, key in (("XADD/s", "xadd_per_s"), ("primary CPU/XADD", "primary_cpu_us_per_xadd"),
                                    ("tail entries/s", "tail_entries_per_s"), ("XRANGE/s", "scan_calls_per_s"))]
        lines.append(f"    {kind:<10}" + ", ".join(ratios))
    steal = [v for placement in PLACEMENTS for kind in KINDS
             for v in doc["results"][placement][kind]["steal_percent_rounds"]]
    lines.append(f"  host steal during the runs: {min(steal):.1f}-{max(steal):.1f} %; "
                 f"load average {doc['environment']['loadavg_start'][0]:.2f} at start, "
                 f"{doc['environment']['loadavg_end'][0]:.2f} at end; {doc['environment']['cpus']} CPUs for everything")
    return "\n".join(lines)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.readscale", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny run: 1 s per run, 1 round, few clients")
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per run (default 8)")
    parser.add_argument("--warmup", type=float, default=None, help="uncounted seconds first (default 1)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3)")
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--producers", type=int, default=None, help="writer connections (default 8)")
    parser.add_argument("--depth", type=int, default=4, help="XADDs in flight per writer (default 4)")
    parser.add_argument("--tailers", type=int, default=None, help="XREAD BLOCK readers (default 40)")
    parser.add_argument("--scanners", type=int, default=None, help="XRANGE readers (default 8)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "readscale"))
    parser.add_argument("--driver", choices=("write", "read"), help=argparse.SUPPRESS)
    parser.add_argument("--ports", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    quick = args.quick
    for name, normal, tiny in (("seconds", 8.0, 1.0), ("warmup", 1.0, 0.2), ("rounds", 3, 1),
                               ("producers", 8, 2), ("tailers", 40, 4), ("scanners", 8, 2)):
        if getattr(args, name) is None:
            setattr(args, name, tiny if quick else normal)
    if min(args.seconds, args.rounds, args.streams, args.producers, args.depth) <= 0 or args.warmup < 0 \
            or args.tailers < 0 or args.scanners < 0:
        parser.error("--seconds, --rounds, --streams, --producers and --depth must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.driver:
        return driver_main(args)
    install_exit_handlers()
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    load_start = os.getloadavg()
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(p, k): [] for p in PLACEMENTS for k in KINDS}
    try:
        for round_no in range(1, args.rounds + 1):
            for placement in PLACEMENTS:
                for kind in KINDS:
                    run = run_once(kind, placement, args)
                    runs[placement, kind].append(run)
                    print(f"  round {round_no}, reads on the {placement}, {kind}: {run['xadd_per_s']:,} XADD/s, "
                          f"{run['tail_entries_per_s']:,} tail entries/s, {run['scan_calls_per_s']:,} XRANGE/s, "
                          f"CPU {run['cpu_percent']} (steal {run['steal_percent']} %)", file=sys.stderr, flush=True)
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    doc: dict[str, Any] = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"seconds": args.seconds, "warmup": args.warmup, "rounds": args.rounds, "streams": args.streams,
                   "producers": args.producers, "depth": args.depth, "tailers": args.tailers,
                   "scanners": args.scanners, "tail_count": TAIL_COUNT, "scan_count": SCAN_COUNT,
                   "maxlen": MAXLEN, "preload": PRELOAD, "quick": args.quick},
        "environment": {"cpus": os.cpu_count(), "loadavg_start": [round(v, 2) for v in load_start],
                        "loadavg_end": [round(v, 2) for v in os.getloadavg()],
                        "note": "primary, replicas and both client drivers share the machine's cores"},
        "results": {p: {k: _median(runs[p, k]) for k in KINDS} for p in PLACEMENTS},
    }
    print(_table(doc))
    for path in write_json(doc, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
