"""`python -m bench.stream_scaling`: per-operation cost of stream commands as a stream grows,
Rill beside redis-server in the same run, over RESP with a pipelining raw-socket client.

Two experiments (issue 3, "Memory and speed": per-op time must stay within 1.3x across sizes):

* Size scaling. One stream per server is filled with `XADD key * f v` to 10^4, 10^5, 10^6 and
  10^7 entries. At each size: XRANGE key <random ms> + COUNT 10 (start IDs drawn uniformly
  between the first and the last entry's millisecond), then XADD key * f v. XADD batches are
  followed, untimed, by an exact `XTRIM MAXLEN = size`, so every timed XADD runs on a stream of
  size..size+batch entries.
* PEL scaling. On that stream (topped up if needed), a fresh group: cycles of
  `XACK <the previous 10 IDs>` + `XREADGROUP ... COUNT 10 STREAMS key >` (one round trip per
  cycle) with an empty PEL; then the same consumer reads --pel entries without acking (pipelined
  XREADGROUP COUNT 10000); then the same cycles again on fresh entries, with that PEL pending.

Three figures per operation and server, because each tells something different:
* server CPU µs/op: the server's main-thread CPU time (/proc/<pid>/schedstat, ns) over the
  timed batches divided by the ops: parsing, execution, replies, syscalls. The headline: it
  is what grows when a data structure does not scale, and the client's cost does not dilute it.
* command µs/op: INFO commandstats usec/calls (time inside the command handler only).
* wall µs/op: client-observed time of pipelined batches (PEL cycles: of each round trip),
  client parsing included, so it compresses the ratios.

Results: bench/results/scaling/<timestamp>.json and latest.json, and a table on stdout.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import hiredis

from bench.client import RespClient, ServerReplyError, encode
from bench.procs import ROOT, BenchError, Server, install_exit_handlers, start_redis, start_rill
from bench.report import write_json

SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000, 10_000)
KEY = "scaling"
GROUP = "scaling-group"
CONSUMER = "scaling-consumer"
FILL_BATCH = 10_000  # XADDs per write while filling: large enough to amortize the round trip
OP_BATCH = 1_000  # commands per timed pipelined write
DEFAULT_OPS = 20_000  # timed XADDs and XRANGEs per size and server
DEFAULT_PEL = 2_000_000
DEFAULT_CYCLES = 10_000
PEL_READ_COUNT = 10_000  # COUNT of the XREADGROUPs that build the PEL
PEL_READS_PER_WRITE = 10
WARMUP_CYCLES = 50  # untimed cycles first (the consumer is created, caches warm up)
RANGE_COUNT = 10
SEED = 20240601


class PipeClient(RespClient):
    """RespClient plus raw pipelined writes: the timed batches are encoded before the clock
    starts, so the client's encoding cost never lands in a measurement."""

    def __enter__(self) -> PipeClient:
        return self

    def raw(self, payload: bytes, replies: int) -> list[object]:
        self._sock.sendall(payload)
        return self._read(replies)

    def raw_checked(self, payload: bytes, replies: int) -> list[object]:
        out = self.raw(payload, replies)
        for reply in out:
            if isinstance(reply, hiredis.ReplyError):
                raise ServerReplyError(str(reply).strip())
        return out


# -- server-side measures ----------------------------------------------------------------------

def schedstat_ns(server: Server) -> tuple[int, int]:
    """(on-CPU ns, run-queue wait ns) of the server's main thread, where both servers run
    every command. The wait is time it was runnable but the shared CPUs were busy elsewhere."""
    with open(f"/proc/{server.pid}/schedstat", encoding="ascii") as f:
        run, wait, _ = f.read().split()
    return int(run), int(wait)


def command_stats(client: RespClient, command: str) -> tuple[int, int]:
    """(calls, usec) of one command from INFO commandstats (zeros before its first call)."""
    info = client.check("INFO", "commandstats")
    assert isinstance(info, bytes)
    prefix = f"cmdstat_{command}:"
    for line in info.decode().splitlines():
        if line.startswith(prefix):
            values = dict(kv.split("=", 1) for kv in line[len(prefix):].split(","))
            return int(values["calls"]), int(values["usec"])
    return 0, 0


def used_memory(client: RespClient) -> int:
    info = client.check("INFO", "memory")
    assert isinstance(info, bytes)
    for line in info.decode().splitlines():
        if line.startswith("used_memory:"):
            return int(line.split(":", 1)[1])
    return 0


@dataclass
class Sample:
    """Accumulated cost of the timed batches of one operation on one server."""

    ops: int = 0
    wall_s: float = 0.0
    cpu_ns: int = 0
    wait_ns: int = 0
    calls: int = 0
    usec: int = 0
    round_trips_us: list[float] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ops": self.ops,
            "cpu_us_per_op": round(self.cpu_ns / 1000 / self.ops, 3),
            "cmd_us_per_op": round(self.usec / self.calls, 3) if self.calls else None,
            "wall_us_per_op": round(self.wall_s * 1e6 / self.ops, 3),
            "server_runqueue_wait_ms": round(self.wait_ns / 1e6, 1),
        }
        if self.round_trips_us:
            trips = sorted(self.round_trips_us)
            out["rtt_p50_us"] = round(trips[len(trips) // 2], 1)
            out["rtt_p99_us"] = round(trips[min(len(trips) - 1, int(len(trips) * 0.99))], 1)
        return out


def timed(server: Server, client: PipeClient, sample: Sample, payload: bytes, replies: int, ops: int,
          keep: bool = False) -> list[object]:
    """One pipelined write and its replies, added to `sample`."""
    run0, wait0 = schedstat_ns(server)
    t0 = time.perf_counter()
    out = client.raw_checked(payload, replies)
    dt = time.perf_counter() - t0
    run1, wait1 = schedstat_ns(server)
    sample.ops += ops
    sample.wall_s += dt
    sample.cpu_ns += run1 - run0
    sample.wait_ns += wait1 - wait0
    if keep:
        sample.round_trips_us.append(dt * 1e6)
    return out


def with_command_stats(client: RespClient, command: str, sample: Sample, body: Callable[[], None]) -> None:
    calls0, usec0 = command_stats(client, command)
    body()
    calls1, usec1 = command_stats(client, command)
    sample.calls += calls1 - calls0
    sample.usec += usec1 - usec0


# -- filling -----------------------------------------------------------------------------------

def xlen(client: RespClient, key: str) -> int:
    length = client.check("XLEN", key)
    assert isinstance(length, int)
    return length


def fill(client: PipeClient, key: str, target: int) -> float:
    """Append `XADD key * f v` until the stream holds `target` entries; return seconds taken.
    The commands are identical bytes, so the client spends nothing encoding them."""
    have = xlen(client, key)
    one = encode(("XADD", key, "*", "f", "v"))
    t0 = time.perf_counter()
    while have < target:
        n = min(FILL_BATCH, target - have)
        client.raw_checked(one * n, n)
        have += n
    return time.perf_counter() - t0


def _id_ms(entry_id: bytes) -> int:
    return int(entry_id.split(b"-", 1)[0])


def edge_ms(client: RespClient, key: str) -> tuple[int, int]:
    """Milliseconds of the first and the last entry."""
    first = client.check("XRANGE", key, "-", "+", "COUNT", "1")
    last = client.check("XREVRANGE", key, "+", "-", "COUNT", "1")
    assert isinstance(first, list) and isinstance(last, list) and first and last
    return _id_ms(first[0][0]), _id_ms(last[0][0])


# -- size scaling ------------------------------------------------------------------------------

def measure_xrange(server: Server, client: PipeClient, key: str, ops: int, rnd: random.Random) -> tuple[Sample, float]:
    """The sample and the mean number of entries per reply (COUNT, unless a start fell
    within the last few entries)."""
    lo, hi = edge_ms(client, key)
    payloads = []
    for start in range(0, ops, OP_BATCH):
        n = min(OP_BATCH, ops - start)
        starts = [str(rnd.randint(lo, hi)) for _ in range(n)]
        payloads.append((b"".join(encode(("XRANGE", key, s, "+", "COUNT", RANGE_COUNT)) for s in starts), n))
    client.raw_checked(payloads[0][0], payloads[0][1])  # warm-up: caches, allocator, branch history
    sample = Sample()
    entries = 0

    def body() -> None:
        nonlocal entries
        for payload, n in payloads:
            for reply in timed(server, client, sample, payload, n, n):
                assert isinstance(reply, list)
                entries += len(reply)

    with_command_stats(client, "xrange", sample, body)
    return sample, entries / ops


def measure_xadd(server: Server, client: PipeClient, key: str, size: int, ops: int) -> Sample:
    one = encode(("XADD", key, "*", "f", "v"))
    trim = encode(("XTRIM", key, "MAXLEN", "=", size))
    batch = min(OP_BATCH, max(1, size // 5))  # keeps the stream within 1.2x of its size
    client.raw_checked(one * batch + trim, batch + 1)  # warm-up
    sample = Sample()

    def body() -> None:
        done = 0
        while done < ops:
            n = min(batch, ops - done)
            timed(server, client, sample, one * n, n, n)
            client.raw_checked(trim, 1)
            done += n

    with_command_stats(client, "xadd", sample, body)
    return sample


# -- PEL scaling -------------------------------------------------------------------------------

def measure_cycles(server: Server, client: PipeClient, key: str, cycles: int) -> tuple[Sample, Sample]:
    """`cycles` round trips of XACK (previous IDs) + XREADGROUP COUNT 10 `>`, after
    WARMUP_CYCLES untimed ones; returns the cycle sample (with XREADGROUP's commandstats)
    and one holding XACK's commandstats."""
    read = encode(("XREADGROUP", "GROUP", GROUP, CONSUMER, "COUNT", RANGE_COUNT, "STREAMS", key, ">"))
    ids: list[bytes] = []

    def run(sample: Sample, count: int) -> None:
        nonlocal ids
        for _ in range(count):
            payload = encode(("XACK", key, GROUP, *ids)) + read if ids else read
            reply = timed(server, client, sample, payload, 2 if ids else 1, 1, keep=True)[-1]
            if not isinstance(reply, list) or not reply:
                raise BenchError(f"{server.kind}: XREADGROUP returned no entries; the stream is too short")
            ids = [entry[0] for entry in reply[0][1]]

    run(Sample(), WARMUP_CYCLES)
    cycle = Sample()
    ack = Sample()
    calls0, usec0 = command_stats(client, "xack")
    with_command_stats(client, "xreadgroup", cycle, lambda: run(cycle, cycles))
    calls1, usec1 = command_stats(client, "xack")
    ack.ops = ack.calls = calls1 - calls0
    ack.usec = usec1 - usec0
    client.check("XACK", key, GROUP, *ids)
    return cycle, ack


def build_pel(client: PipeClient, key: str, pending: int) -> float:
    """Deliver `pending` entries to CONSUMER without acking them; return seconds taken."""
    t0 = time.perf_counter()
    delivered = 0
    while delivered < pending:
        want = pending - delivered
        counts = [min(PEL_READ_COUNT, want - i * PEL_READ_COUNT)
                  for i in range(min(PEL_READS_PER_WRITE, -(-want // PEL_READ_COUNT)))]
        payload = b"".join(encode(("XREADGROUP", "GROUP", GROUP, CONSUMER, "COUNT", n, "STREAMS", key, ">"))
                           for n in counts)
        for reply in client.raw_checked(payload, len(counts)):
            if not isinstance(reply, list) or not reply:
                raise BenchError("XREADGROUP returned no entries while building the PEL; the stream is too short")
            delivered += len(reply[0][1])
    return time.perf_counter() - t0


def pending_count(client: RespClient, key: str) -> int:
    summary = client.check("XPENDING", key, GROUP)
    assert isinstance(summary, list)
    return int(summary[0])


# -- one server --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...]
    ops: int
    pel: int
    cycles: int


def run_server(server: Server, plan: Plan) -> dict[str, Any]:
    """Every measurement of the plan on one server; returns rows keyed by (test, x)."""
    rnd = random.Random(SEED)
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    fills: dict[str, float] = {}
    with PipeClient(server.port, timeout=600) as client:
        client.check("DEL", KEY)
        for size in plan.sizes:
            took = fill(client, KEY, size)
            fills[str(size)] = round(took, 2)
            print(f"  {server.kind:<5} filled to {size:>10,} entries (+{took:6.1f} s)", file=sys.stderr, flush=True)
            xr, per_reply = measure_xrange(server, client, KEY, plan.ops, rnd)
            xa = measure_xadd(server, client, KEY, size, plan.ops)
            rows["xrange", size] = {**xr.summary(), "entries_per_reply": round(per_reply, 2)}
            rows["xadd", size] = xa.summary()
            print(f"  {server.kind:<5} {size:>10,}: XRANGE {xr.cpu_ns / 1000 / xr.ops:6.2f} µs CPU/op, "
                  f"XADD {xa.cpu_ns / 1000 / xa.ops:6.2f} µs CPU/op", file=sys.stderr, flush=True)
        if plan.pel:
            # Two cycle phases plus the PEL itself, on entries no group has seen.
            need = plan.pel + 2 * RANGE_COUNT * (WARMUP_CYCLES + plan.cycles + 1)
            topped = fill(client, KEY, need)
            client.check("XGROUP", "CREATE", KEY, GROUP, "0")
            empty, empty_ack = measure_cycles(server, client, KEY, plan.cycles)
            mem0 = used_memory(client)
            took = build_pel(client, KEY, plan.pel)
            mem1 = used_memory(client)
            held = pending_count(client, KEY)
            full, full_ack = measure_cycles(server, client, KEY, plan.cycles)
            fills["pel_topup"] = round(topped, 2)
            print(f"  {server.kind:<5} PEL of {held:,} built in {took:.1f} s; cycle "
                  f"{empty.cpu_ns / 1000 / empty.ops:.2f} -> {full.cpu_ns / 1000 / full.ops:.2f} µs CPU",
                  file=sys.stderr, flush=True)
            for pending, cyc, ack in ((0, empty, empty_ack), (plan.pel, full, full_ack)):
                rows["xreadgroup_cycle", pending] = {
                    **cyc.summary(),
                    "xack_cmd_us_per_op": round(ack.usec / ack.calls, 3) if ack.calls else None,
                    "pending_held": pending and held,
                }
            rows["pel_build", plan.pel] = {"seconds": round(took, 2),
                                      "used_memory_bytes_per_pending": round((mem1 - mem0) / max(1, held), 1)}
    return {"rows": rows, "fill_seconds": fills, "rss_bytes": server.rss_bytes()}


# -- report ------------------------------------------------------------------------------------

def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a is not None and b else None


def _spread(rows: Sequence[dict[str, Any]], side: str, metric: str) -> float | None:
    values = [row[side][metric] for row in rows if row[side] and row[side].get(metric)]
    return round(max(values) / min(values), 3) if len(values) > 1 and min(values) > 0 else None


def build_rows(results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    keys = list(results["redis"]["rows"])
    rows = []
    for test, x in keys:
        redis_side = results["redis"]["rows"].get((test, x))
        rill_side = results["rill"]["rows"].get((test, x))
        if test == "pel_build":
            rows.append({"test": test, "pending": x, "redis": redis_side, "rill": rill_side})
            continue
        axis = "pending" if test == "xreadgroup_cycle" else "entries"
        row: dict[str, Any] = {"test": test, axis: x, "redis": redis_side, "rill": rill_side}
        if redis_side and rill_side:
            for metric in ("cpu_us_per_op", "cmd_us_per_op", "wall_us_per_op"):
                row[f"{metric.split('_')[0]}_ratio"] = _ratio(rill_side[metric], redis_side[metric])
        rows.append(row)
    return rows


def spreads(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """max/min across sizes (or across PEL sizes) per test, server and figure."""
    out: dict[str, Any] = {}
    for test in ("xadd", "xrange", "xreadgroup_cycle"):
        group = [row for row in rows if row["test"] == test]
        out[test] = {side: {metric: _spread(group, side, metric)
                            for metric in ("cpu_us_per_op", "cmd_us_per_op", "wall_us_per_op")}
                     for side in ("redis", "rill")}
    return out


def _f(value: float | None, spec: str = "8.2f") -> str:
    return format(value, spec) if value is not None else format("-", ">" + spec.split(".")[0])


def print_table(rows: Sequence[dict[str, Any]], spread: dict[str, Any]) -> None:
    print(f"\n{'test':<17} {'size':>10}  {'CPU µs/op':>19}  {'cmd µs/op':>19}  {'wall µs/op':>19}  {'rill/redis':>6}")
    print(f"{'':<17} {'':>10}  {'redis':>9} {'rill':>9}  {'redis':>9} {'rill':>9}  {'redis':>9} {'rill':>9}  {'CPU':>6}")
    for row in rows:
        if row["test"] == "pel_build":
            continue
        size = row.get("entries", row.get("pending"))
        r, x = row["redis"], row["rill"]
        cells = []
        for metric in ("cpu_us_per_op", "cmd_us_per_op", "wall_us_per_op"):
            cells.append(f"{_f(r.get(metric), '9.2f')} {_f(x.get(metric), '9.2f')}")
        print(f"{row['test']:<17} {size:>10,}  " + "  ".join(cells) + f"  {_f(row.get('cpu_ratio'), '6.2f')}")
    print("\nmax/min across sizes (target for Rill: <= 1.3)")
    for test, sides in spread.items():
        parts = [f"{side} CPU {_f(v['cpu_us_per_op'], '.2f')} cmd {_f(v['cmd_us_per_op'], '.2f')} "
                 f"wall {_f(v['wall_us_per_op'], '.2f')}" for side, v in sides.items()]
        print(f"  {test:<17} " + "; ".join(parts))
    for row in rows:
        if row["test"] == "pel_build":
            print(f"\nPEL of {row['pending']:,}: built in redis {row['redis']['seconds']} s, rill {row['rill']['seconds']} s; "
                  f"used_memory per pending entry redis {row['redis']['used_memory_bytes_per_pending']} B, "
                  f"rill {row['rill']['used_memory_bytes_per_pending']} B")


# -- entry point -------------------------------------------------------------------------------

def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(float(part)) for part in text.split(",") if part.strip())


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.stream_scaling", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help=f"tiny run: sizes {','.join(map(str, QUICK_SIZES))}, 1000 ops, PEL 2000, 200 cycles")
    parser.add_argument("--sizes", default=None, help="comma-separated stream sizes (default 1e4,1e5,1e6,1e7)")
    parser.add_argument("--ops", type=int, default=None, help=f"timed XADDs and XRANGEs per size (default {DEFAULT_OPS})")
    parser.add_argument("--pel", type=int, default=None, help=f"pending entries for the PEL test, 0 skips it (default {DEFAULT_PEL})")
    parser.add_argument("--cycles", type=int, default=None, help=f"XREADGROUP+XACK cycles per PEL size (default {DEFAULT_CYCLES})")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "scaling"),
                        help="directory for <timestamp>.json and latest.json")
    args = parser.parse_args(argv)
    sizes = _ints(args.sizes) if args.sizes else (QUICK_SIZES if args.quick else SIZES)
    args.plan = Plan(
        sizes=tuple(sorted(sizes)),
        ops=args.ops if args.ops is not None else (1_000 if args.quick else DEFAULT_OPS),
        pel=args.pel if args.pel is not None else (2_000 if args.quick else DEFAULT_PEL),
        cycles=args.cycles if args.cycles is not None else (200 if args.quick else DEFAULT_CYCLES),
    )
    if not sizes or min(sizes) <= 0 or args.plan.ops <= 0 or args.plan.pel < 0 or args.plan.cycles <= 0:
        parser.error("sizes, --ops and --cycles must be positive, --pel non-negative")
    return args


def main(argv: list[str] | None = None) -> int:
    from bench.__main__ import _environment  # the same environment block as the throughput suite

    args = parse_args(argv)
    plan: Plan = args.plan
    install_exit_handlers()
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    load_start = os.getloadavg()
    results: dict[str, dict[str, Any]] = {}
    servers: dict[str, Server] = {}
    try:
        servers["redis"] = start_redis()
        servers["rill"] = start_rill()
        env = _environment(servers)
        print(f"redis-server pid {servers['redis'].pid} port {servers['redis'].port}, "
              f"rill pid {servers['rill'].pid} port {servers['rill'].port}; sizes {list(plan.sizes)}, "
              f"{plan.ops} ops, PEL {plan.pel}, {plan.cycles} cycles; load average {load_start[0]:.2f}",
              file=sys.stderr, flush=True)
        # One server at a time, so the two never compete for the CPUs; each is stopped as
        # soon as it is done, which frees its memory (10^7 entries) before the next starts.
        for kind in ("redis", "rill"):
            results[kind] = run_server(servers[kind], plan)
            servers[kind].stop()
    except (BenchError, ServerReplyError, OSError) as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    finally:
        for server in servers.values():
            server.stop()
    rows = build_rows(results)
    spread = spreads(rows)
    env["loadavg_start"] = [round(v, 2) for v in load_start]
    env["loadavg_end"] = [round(v, 2) for v in os.getloadavg()]
    document = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"sizes": list(plan.sizes), "ops": plan.ops, "pel": plan.pel, "cycles": plan.cycles,
                   "op_batch": OP_BATCH, "fill_batch": FILL_BATCH},
        "environment": env,
        "fill_seconds": {kind: results[kind]["fill_seconds"] for kind in results},
        "rss_bytes_at_end": {kind: results[kind]["rss_bytes"] for kind in results},
        "max_over_min": spread,
        "rows": rows,
    }
    print_table(rows, spread)
    print(f"\nload average {load_start[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end; "
          f"{document['duration_s']} s in all")
    for path in write_json(document, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
