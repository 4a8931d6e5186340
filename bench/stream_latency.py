"""`python -m bench.stream_latency`: the end-to-end latency test of the Redis streams
documentation ("Latency tests results"), Rill beside redis-server in the same run.

Producers XADD `--rate` messages/s in total, each carrying `ts` = time.time_ns() taken when
it is encoded for sending; `--consumers` consumers of one group read with
`XREADGROUP ... COUNT 100 BLOCK 2000 STREAMS key >` and XACK what they got (the XACK and the
next XREADGROUP go out in one write). Latency = arrival time of the reply bytes at the
consumer − ts. Reported per server: the histogram 0–1, 1–2, 2–3, 3–4, 4–5, 5+ ms (percent),
p50/p99/p99.9/max, the producers' XADD round trips, and what each side cost: the server's
main-thread CPU and run-queue wait (/proc/<pid>/schedstat), the client process's CPU and the
lateness of its pacing timer, so a reader can tell whether the client, the server or the
shared machine limited the tail.

All producers and consumers run in ONE separate driver process (this module with --driver):
a uvloop event loop, raw asyncio protocols with hiredis and pre-built RESP, because redis-py's
per-command cost (tens of µs) would make the client the bottleneck at 10,000 messages/s plus
as many XREADGROUPs and XACKs on this 2-core machine. Pacing: every ~1 ms tick (the event
loop's timer resolution) each producer sends the messages that are due, so sends come in
small bursts of rate/producers/1000 messages; the mean rate is exact.

The first --warmup seconds are not counted. Results: bench/results/latency/latest.json and
a line of history.jsonl, and a table on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from collections import deque
from typing import Any

import hiredis

from bench.client import ERRORS, AsyncConnection, RespClient, ServerReplyError, connect, encode
from bench.procs import ROOT, BenchError, Server, environment, install_exit_handlers, start_redis, start_rill
from bench.report import write_json
from bench.stream_scaling import schedstat_ns

KEY = "latency"
GROUP = "latency-group"
BUCKETS_MS = (1, 2, 3, 4, 5)  # upper bounds of 0–1, 1–2, 2–3, 3–4, 4–5; the rest is 5+
READ_COUNT = 100
BLOCK_MS = 2000
TICK_S = 0.001
DRAIN_S = 3.0  # after the producers stop, how long the consumers may take to catch up


# -- driver: the client process ----------------------------------------------------------------

class Producer:
    """XADD key * ts <ns> at `rate` messages/s; keeps its XADD round trips."""

    def __init__(self, key: str, rate: float, measure_from_ns: int) -> None:
        self.head = b"*5\r\n$4\r\nXADD\r\n" + encode((key,))[4:] + b"$1\r\n*\r\n$2\r\nts\r\n"
        self.rate = rate
        self.measure_from_ns = measure_from_ns
        self.conn = AsyncConnection(self.on_reply)
        self.in_flight: deque[int] = deque()
        self.sent = 0
        self.measured_sent = 0
        self.rtts_ns: list[int] = []
        self.late_ns: list[int] = []

    def on_reply(self, reply: object, now: int) -> None:
        sent_at = self.in_flight.popleft()
        if sent_at >= self.measure_from_ns:
            self.rtts_ns.append(now - sent_at)

    async def run(self, until_ns: int) -> None:
        start = time.monotonic()
        expected_wake = start
        while time.time_ns() < until_ns:
            now = time.monotonic()
            self.late_ns.append(int((now - expected_wake) * 1e9))
            due = int((now - start) * self.rate) - self.sent
            if due > 0:
                parts = []
                for _ in range(due):
                    ts = time.time_ns()
                    digits = b"%d" % ts
                    parts.append(self.head + b"$%d\r\n%s\r\n" % (len(digits), digits))
                    self.in_flight.append(ts)
                    if ts >= self.measure_from_ns:
                        self.measured_sent += 1
                self.conn.write(b"".join(parts))
                self.sent += due
            expected_wake = time.monotonic() + TICK_S
            await asyncio.sleep(TICK_S)


class Consumer:
    """XREADGROUP BLOCK in a loop; each batch read is acked in the write that asks for the next."""

    def __init__(self, key: str, group: str, name: str, measure_from_ns: int, latencies: list[int]) -> None:
        self.read = encode(("XREADGROUP", "GROUP", group, name, "COUNT", READ_COUNT, "BLOCK", BLOCK_MS,
                            "STREAMS", key, ">"))
        self.ack_head = (key, group)
        self.measure_from_ns = measure_from_ns
        self.latencies = latencies
        self.conn = AsyncConnection(self.on_reply)
        self.expect: deque[bool] = deque()  # True: an XREADGROUP reply, False: an XACK reply
        self.running = True
        self.received = 0

    def start(self) -> None:
        self.conn.write(self.read)
        self.expect.append(True)

    def on_reply(self, reply: object, now: int) -> None:
        if not self.expect.popleft():
            return  # XACK's count
        if isinstance(reply, hiredis.ReplyError):
            self.running = False
            return
        if reply is None:  # BLOCK timed out
            if self.running:
                self.start()
            return
        assert isinstance(reply, list)
        ids = []
        for entry_id, fields in reply[0][1]:
            sent_at = int(fields[1])
            if sent_at >= self.measure_from_ns:
                self.latencies.append(now - sent_at)
                self.received += 1
            ids.append(entry_id)
        out = encode(("XACK", *self.ack_head, *ids))
        self.expect.append(False)
        if self.running:
            out += self.read
            self.expect.append(True)
        self.conn.write(out)


def _percentile(sorted_values: list[int], q: float) -> int:
    return sorted_values[min(len(sorted_values) - 1, int(len(sorted_values) * q))] if sorted_values else 0


def histogram(latencies_ns: list[int]) -> dict[str, Any]:
    """Percent per 1 ms bucket (0–1, ..., 4–5, 5+) and percentiles in ms."""
    values = sorted(latencies_ns)
    total = len(values) or 1
    counts = [0] * (len(BUCKETS_MS) + 1)
    for v in values:
        ms = v / 1e6
        for i, bound in enumerate(BUCKETS_MS):
            if ms < bound:
                counts[i] += 1
                break
        else:
            counts[-1] += 1
    labels = [f"{lo}-{hi}ms" for lo, hi in zip((0, *BUCKETS_MS[:-1]), BUCKETS_MS)] + [f"{BUCKETS_MS[-1]}+ms"]
    return {
        "count": len(values),
        "buckets_percent": {label: round(100 * c / total, 3) for label, c in zip(labels, counts)},
        "le_2ms_percent": round(100 * sum(1 for v in values if v <= 2_000_000) / total, 3),
        "p50_ms": round(_percentile(values, 0.5) / 1e6, 3),
        "p99_ms": round(_percentile(values, 0.99) / 1e6, 3),
        "p999_ms": round(_percentile(values, 0.999) / 1e6, 3),
        "max_ms": round((values[-1] if values else 0) / 1e6, 3),
    }


async def drive(port: int, key: str, group: str, rate: float, seconds: float, warmup: float,
                consumers: int, producers: int) -> dict[str, Any]:
    start_ns = time.time_ns()
    measure_from_ns = start_ns + int(warmup * 1e9)
    until_ns = measure_from_ns + int(seconds * 1e9)
    latencies: list[int] = []
    prods = [Producer(key, rate / producers, measure_from_ns) for _ in range(producers)]
    cons = [Consumer(key, group, f"consumer-{i}", measure_from_ns, latencies) for i in range(consumers)]
    conns = [c.conn for c in cons] + [p.conn for p in prods]
    for conn in conns:
        await connect(conn, port)
    for consumer in cons:
        consumer.start()
    await asyncio.sleep(0.2)  # every consumer is blocked before the first message
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    wait0 = _self_wait_ns()
    t0 = time.monotonic()
    await asyncio.gather(*(p.run(until_ns) for p in prods))
    active = time.monotonic() - t0
    sent = sum(p.measured_sent for p in prods)
    drain_until = time.monotonic() + DRAIN_S
    while sum(c.received for c in cons) < sent and time.monotonic() < drain_until:
        await asyncio.sleep(0.01)
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    wait1 = _self_wait_ns()
    for consumer in cons:
        consumer.running = False
    for conn in conns:
        if conn.transport is not None:
            conn.transport.close()
    cpu = (usage1.ru_utime + usage1.ru_stime) - (usage0.ru_utime + usage0.ru_stime)
    lateness = sorted(v for p in prods for v in p.late_ns)
    rtts = sorted(v for p in prods for v in p.rtts_ns)
    return {
        "errors": ERRORS[:5],
        "sent": sent,
        "received": len(latencies),
        "lost": sent - len(latencies),
        "seconds_measured": seconds,
        "latency": histogram(latencies),
        "xadd_rtt": {"p50_ms": round(_percentile(rtts, 0.5) / 1e6, 3),
                     "p99_ms": round(_percentile(rtts, 0.99) / 1e6, 3),
                     "p999_ms": round(_percentile(rtts, 0.999) / 1e6, 3)},
        "client_cpu_percent": round(100 * cpu / active, 1),
        "client_runqueue_wait_ms": round((wait1 - wait0) / 1e6, 1),
        "tick_late_ms": {"p50": round(_percentile(lateness, 0.5) / 1e6, 3),
                         "p99": round(_percentile(lateness, 0.99) / 1e6, 3)},
    }


def _self_wait_ns() -> int:
    with open("/proc/thread-self/schedstat", encoding="ascii") as f:
        return int(f.read().split()[1])


def driver_main(args: argparse.Namespace) -> int:
    coro = drive(args.port, args.key, args.group, args.rate, args.seconds, args.warmup, args.consumers, args.producers)
    try:
        import uvloop
    except ImportError:
        result = asyncio.run(coro)
    else:
        result = uvloop.run(coro)
    print(json.dumps(result))
    return 0


# -- orchestrator ------------------------------------------------------------------------------

def run_server(server: Server, args: argparse.Namespace) -> dict[str, Any]:
    with RespClient(server.port) as client:
        client.check("DEL", KEY)
        client.check("XGROUP", "CREATE", KEY, GROUP, "$", "MKSTREAM")
    cmd = [sys.executable, "-m", "bench.stream_latency", "--driver", "--port", str(server.port),
           "--key", KEY, "--group", GROUP, "--rate", str(args.rate), "--seconds", str(args.seconds),
           "--warmup", str(args.warmup), "--consumers", str(args.consumers), "--producers", str(args.producers)]
    run0, wait0 = schedstat_ns(server)
    t0 = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                              timeout=args.seconds + args.warmup + DRAIN_S + 60)
    except subprocess.TimeoutExpired:
        raise BenchError(f"the latency driver against {server.kind} did not finish in time") from None
    wall = time.monotonic() - t0
    run1, wait1 = schedstat_ns(server)
    if proc.returncode != 0:
        raise BenchError(f"the latency driver against {server.kind} failed: {proc.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(proc.stdout)
    if result.pop("errors"):
        raise ServerReplyError(f"{server.kind} replied errors to the latency driver: {result['errors']}")
    # Over the driver's whole life (start-up and drain included), so a slight underestimate.
    result["server_cpu_percent"] = round(100 * (run1 - run0) / 1e9 / wall, 1)
    result["server_runqueue_wait_ms"] = round((wait1 - wait0) / 1e6, 1)
    lat = result["latency"]
    print(f"  {server.kind:<5} {result['received']:,}/{result['sent']:,} received; p50 {lat['p50_ms']} ms, "
          f"p99 {lat['p99_ms']} ms, p99.9 {lat['p999_ms']} ms; <= 2 ms {lat['le_2ms_percent']}%; "
          f"server CPU {result['server_cpu_percent']}%, client CPU {result['client_cpu_percent']}%",
          file=sys.stderr, flush=True)
    return result


def print_table(results: dict[str, dict[str, Any]]) -> None:
    kinds = list(results)
    lines: list[tuple[str, list[Any]]] = []
    for label in results[kinds[0]]["latency"]["buckets_percent"]:
        lines.append((label, [results[k]["latency"]["buckets_percent"][label] for k in kinds]))
    lines.append(("<= 2 ms %", [results[k]["latency"]["le_2ms_percent"] for k in kinds]))
    for q, name in (("p50_ms", "p50 ms"), ("p99_ms", "p99 ms"), ("p999_ms", "p99.9 ms"), ("max_ms", "max ms")):
        lines.append((name, [results[k]["latency"][q] for k in kinds]))
    for name, get in (
        ("messages sent/received", lambda r: f"{r['sent']}/{r['received']}"),
        ("XADD rtt p50/p99 ms", lambda r: f"{r['xadd_rtt']['p50_ms']}/{r['xadd_rtt']['p99_ms']}"),
        ("server CPU %", lambda r: r["server_cpu_percent"]),
        ("server runq wait ms", lambda r: r["server_runqueue_wait_ms"]),
        ("client CPU %", lambda r: r["client_cpu_percent"]),
        ("client runq wait ms", lambda r: r["client_runqueue_wait_ms"]),
        ("tick late p50/p99 ms", lambda r: f"{r['tick_late_ms']['p50']}/{r['tick_late_ms']['p99']}"),
    ):
        lines.append((name, [get(results[k]) for k in kinds]))
    print("\nend-to-end latency (XADD -> XREADGROUP reply), percent of messages")
    print(f"{'':<24}" + "".join(f"{k:>16}" for k in kinds))
    for name, values in lines:
        print(f"{name:<24}" + "".join(f"{v!s:>16}" for v in values))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.stream_latency", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="tiny run: 1 s per server, 0.2 s warm-up, 1000 msg/s")
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per server (default 10)")
    parser.add_argument("--warmup", type=float, default=None, help="uncounted seconds first (default 1)")
    parser.add_argument("--rate", type=float, default=None, help="messages/s, all producers together (default 10000)")
    parser.add_argument("--consumers", type=int, default=10)
    parser.add_argument("--producers", type=int, default=2)
    parser.add_argument("--servers", default="redis,rill", help="which servers, in order (default: %(default)s)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "latency"),
                        help="directory for latest.json and a line of history.jsonl")
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--key", default=KEY, help=argparse.SUPPRESS)
    parser.add_argument("--group", default=GROUP, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.seconds is None:
        args.seconds = 1.0 if args.quick else 10.0
    if args.warmup is None:
        args.warmup = 0.2 if args.quick else 1.0
    if args.rate is None:
        args.rate = 1000.0 if args.quick else 10_000.0
    args.server_list = [s.strip() for s in args.servers.split(",") if s.strip()]
    if args.seconds <= 0 or args.warmup < 0 or args.rate <= 0 or args.consumers <= 0 or args.producers <= 0:
        parser.error("--seconds, --rate, --consumers and --producers must be positive")
    if not args.server_list or any(s not in ("redis", "rill") for s in args.server_list):
        parser.error("--servers takes redis and/or rill")
    return args


def main(argv: list[str] | None = None) -> int:

    args = parse_args(argv)
    if args.driver:
        return driver_main(args)
    install_exit_handlers()
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    load_start = os.getloadavg()
    servers: dict[str, Server] = {}
    results: dict[str, dict[str, Any]] = {}
    try:
        servers["redis"] = start_redis()
        servers["rill"] = start_rill()
        env = environment(servers)
        print(f"redis-server pid {servers['redis'].pid} port {servers['redis'].port}, "
              f"rill pid {servers['rill'].pid} port {servers['rill'].port}; {args.rate:g} msg/s, "
              f"{args.producers} producers, {args.consumers} consumers, {args.seconds:g} s each; "
              f"load average {load_start[0]:.2f}", file=sys.stderr, flush=True)
        for kind in args.server_list:
            results[kind] = run_server(servers[kind], args)
    except (BenchError, ServerReplyError, OSError) as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    finally:
        for server in servers.values():
            server.stop()
    env["loadavg_start"] = [round(v, 2) for v in load_start]
    env["loadavg_end"] = [round(v, 2) for v in os.getloadavg()]
    document = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"rate": args.rate, "seconds": args.seconds, "warmup": args.warmup, "consumers": args.consumers,
                   "producers": args.producers, "read_count": READ_COUNT, "block_ms": BLOCK_MS},
        "environment": env,
        "rows": [{"server": kind, **result} for kind, result in results.items()],
    }
    print_table(results)
    print(f"\nload average {load_start[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end")
    for path in write_json(document, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
