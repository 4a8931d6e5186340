"""`python -m bench.stream_scaling`: per-operation cost of stream commands as a stream grows,
Rill beside redis-server in the same run, over RESP with a pipelining raw-socket client.

Two experiments (issue 3, "Memory and speed": per-op time must stay within 1.3x across sizes):

* Size scaling. One stream per size (10^4, 10^5, 10^6, 10^7 entries) on each server, filled
  with `XADD key * f v` in pipelines of 10,000. Then XRANGE key <random ms> + COUNT 10 (start
  IDs drawn uniformly between the first and the last entry's millisecond) and XADD key * f v;
  XADD batches are followed, untimed, by an exact `XTRIM MAXLEN = size`, so every timed XADD
  runs on a stream of size..1.2*size entries.
* PEL scaling. Two groups on the largest stream (if long enough, else on a stream of its
  own): EMPTY_GROUP, and PEL_GROUP whose consumer is first delivered --pel entries that are
  never acked (pipelined XREADGROUP COUNT 10000). Then cycles of `XACK <the previous 10 IDs>`
  + `XREADGROUP GROUP g c COUNT 10 STREAMS key >` (one round trip each) in both groups, on
  entries the group has not seen: PEL of 0 vs --pel.

Everything is measured in --rounds rounds that interleave the sizes, the two groups and the
two servers (each round takes its share of the ops): the machine is shared, and a busy spell
of other processes then spreads over every row instead of biasing the one it fell on.

Three figures per operation and server, because each tells something different:
* server CPU µs/op: the server's main-thread CPU time (/proc/<pid>/schedstat, ns) per op,
  the median over the timed batches (1,000 ops each; for PEL cycles, each run of cycles) so that a burst of
  other processes on the shared CPUs (cache and core contention) does not skew a row; the
  mean is kept as cpu_us_per_op_mean. It covers parsing, execution, replies and syscalls. The
  headline: it is what grows when a data structure does not scale, and the client's cost does
  not dilute it. Time spent runnable but waiting for a CPU is not in it (reported apart).
* command µs/op: INFO commandstats usec/calls: wall time inside the command handler only, so
  a preemption of the server in a handler inflates it (under load it is the noisiest figure).
* wall µs/op: client-observed time of pipelined batches (PEL cycles: of each round trip),
  client parsing included, so it compresses the ratios.

Results: bench/results/scaling/latest.json and a line of history.jsonl, and a table on stdout.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import hiredis

from bench.client import RespClient, ServerReplyError, encode
from bench.procs import ROOT, BenchError, Server, environment, install_exit_handlers, start_redis, start_rill
from bench.report import write_json

SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000, 10_000)
KEY = "scaling"
EMPTY_GROUP = "scaling-empty"  # acks every cycle: its PEL stays (about) empty
PEL_GROUP = "scaling-pel"  # holds the --pel pending entries
CONSUMER = "scaling-consumer"
FILL_BATCH = 10_000  # XADDs per write while filling: large enough to amortize the round trip
OP_BATCH = 1_000  # commands per timed pipelined write
DEFAULT_OPS = 20_000  # timed XADDs and XRANGEs per size and server
DEFAULT_PEL = 2_000_000
DEFAULT_CYCLES = 10_000
PEL_READ_COUNT = 10_000  # COUNT of the XREADGROUPs that build the PEL
PEL_READS_PER_WRITE = 10
WARMUP_CYCLES = 20  # untimed cycles before each timed run (the consumer is created, caches warm up)
WARMUP_OPS = 200  # untimed XADDs / XRANGEs before each timed run
DEFAULT_ROUNDS = 5
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
    batch_cpu_us: list[float] = field(default_factory=list, repr=False)  # CPU µs/op of each batch

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ops": self.ops,
            "cpu_us_per_op": round(statistics.median(self.batch_cpu_us), 3),
            "cpu_us_per_op_mean": round(self.cpu_ns / 1000 / self.ops, 3),
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
          keep: bool = False, batch_figure: bool = True) -> list[object]:
    """One pipelined write and its replies, added to `sample` (and, with batch_figure, one
    entry of its per-batch CPU figures)."""
    run0, wait0 = schedstat_ns(server)
    t0 = time.perf_counter()
    out = client.raw_checked(payload, replies)
    dt = time.perf_counter() - t0
    run1, wait1 = schedstat_ns(server)
    sample.ops += ops
    sample.wall_s += dt
    sample.cpu_ns += run1 - run0
    if batch_figure:
        sample.batch_cpu_us.append((run1 - run0) / 1000 / ops)
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

def measure_xrange(server: Server, client: PipeClient, key: str, ops: int, rnd: random.Random, sample: Sample) -> int:
    """`ops` timed XRANGE <random ms> + COUNT 10 after an untimed warm-up batch; returns the
    number of entries the replies held (COUNT per reply unless a start fell at the end)."""
    lo, hi = edge_ms(client, key)

    def batch(n: int) -> tuple[bytes, int]:
        starts = [str(rnd.randint(lo, hi)) for _ in range(n)]
        return b"".join(encode(("XRANGE", key, s, "+", "COUNT", RANGE_COUNT)) for s in starts), n

    timed_payloads = [batch(min(OP_BATCH, ops - start)) for start in range(0, ops, OP_BATCH)]
    client.raw_checked(*batch(WARMUP_OPS))
    entries = 0

    def body() -> None:
        nonlocal entries
        for payload, n in timed_payloads:
            for reply in timed(server, client, sample, payload, n, n):
                assert isinstance(reply, list)
                entries += len(reply)

    with_command_stats(client, "xrange", sample, body)
    return entries


def measure_xadd(server: Server, client: PipeClient, key: str, size: int, ops: int, sample: Sample) -> None:
    """`ops` timed XADD key * f v, in batches each followed (untimed) by an exact trim back to
    `size`, after an untimed warm-up batch."""
    one = encode(("XADD", key, "*", "f", "v"))
    trim = encode(("XTRIM", key, "MAXLEN", "=", size))
    batch = min(OP_BATCH, max(1, size // 5))  # keeps the stream within 1.2x of its size
    client.raw_checked(one * min(batch, WARMUP_OPS) + trim, min(batch, WARMUP_OPS) + 1)

    def body() -> None:
        done = 0
        while done < ops:
            n = min(batch, ops - done)
            timed(server, client, sample, one * n, n, n)
            client.raw_checked(trim, 1)
            done += n

    with_command_stats(client, "xadd", sample, body)


# -- PEL scaling -------------------------------------------------------------------------------

def measure_cycles(server: Server, client: PipeClient, key: str, group: str, cycles: int,
                   cycle: Sample, ack: Sample) -> None:
    """`cycles` timed round trips of XACK (the previous IDs) + XREADGROUP COUNT 10 `>`, after
    WARMUP_CYCLES untimed ones; the last IDs read are acked, so the PEL is as before. `cycle`
    gets XREADGROUP's commandstats, `ack` XACK's."""
    read = encode(("XREADGROUP", "GROUP", group, CONSUMER, "COUNT", RANGE_COUNT, "STREAMS", key, ">"))
    ids: list[bytes] = []

    def run(sample: Sample, count: int) -> None:
        nonlocal ids
        for _ in range(count):
            payload = encode(("XACK", key, group, *ids)) + read if ids else read
            reply = timed(server, client, sample, payload, 2 if ids else 1, 1, keep=True, batch_figure=False)[-1]
            if not isinstance(reply, list) or not reply:
                raise BenchError(f"{server.kind}: XREADGROUP returned no entries; the stream is too short")
            ids = [entry[0] for entry in reply[0][1]]

    run(Sample(), WARMUP_CYCLES)
    calls0, usec0 = command_stats(client, "xack")
    cpu0 = cycle.cpu_ns
    with_command_stats(client, "xreadgroup", cycle, lambda: run(cycle, cycles))
    # One figure for the whole run, not one per cycle: /proc/<pid>/schedstat only counts a
    # running thread's time when it is switched out, so a server still finishing its reply
    # when the client reads shows 0 for that round trip and the time in the next one.
    cycle.batch_cpu_us.append((cycle.cpu_ns - cpu0) / 1000 / cycles)
    calls1, usec1 = command_stats(client, "xack")
    ack.ops += calls1 - calls0
    ack.calls += calls1 - calls0
    ack.usec += usec1 - usec0
    client.check("XACK", key, group, *ids)


def build_pel(client: PipeClient, key: str, group: str, pending: int) -> float:
    """Deliver `pending` entries to CONSUMER of `group` without acking them; return seconds."""
    t0 = time.perf_counter()
    delivered = 0
    while delivered < pending:
        want = pending - delivered
        counts = [min(PEL_READ_COUNT, want - i * PEL_READ_COUNT)
                  for i in range(min(PEL_READS_PER_WRITE, -(-want // PEL_READ_COUNT)))]
        payload = b"".join(encode(("XREADGROUP", "GROUP", group, CONSUMER, "COUNT", n, "STREAMS", key, ">"))
                           for n in counts)
        for reply in client.raw_checked(payload, len(counts)):
            if not isinstance(reply, list) or not reply:
                raise BenchError("XREADGROUP returned no entries while building the PEL; the stream is too short")
            delivered += len(reply[0][1])
    return time.perf_counter() - t0


def pending_count(client: RespClient, key: str, group: str) -> int:
    summary = client.check("XPENDING", key, group)
    assert isinstance(summary, list)
    return int(summary[0])


# -- the run -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    sizes: tuple[int, ...]
    ops: int  # timed XADDs and XRANGEs per size and server, over all rounds
    pel: int
    cycles: int  # timed cycles per group and server, over all rounds
    rounds: int

    def pel_entries(self) -> int:
        """Stream length the PEL test needs: the PEL, then fresh entries for the cycles of
        the PEL group (the empty group reads from the head)."""
        return self.pel + RANGE_COUNT * (self.cycles + self.rounds * (WARMUP_CYCLES + 1) + 1)


def _key(size: int) -> str:
    return f"{KEY}:{size}"


def _order(kinds: Sequence[str], round_no: int) -> list[str]:
    # Alternate which server goes first, so neither always follows the other's disturbance.
    return list(kinds) if round_no % 2 == 0 else list(reversed(kinds))


def _share(total: int, rounds: int, round_no: int) -> int:
    return total // rounds + (1 if round_no < total % rounds else 0)


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def run(servers: dict[str, Server], plan: Plan) -> dict[str, dict[str, Any]]:
    """Fill every server, then measure in rounds that interleave sizes and servers: a busy
    spell of the shared machine then spreads over all sizes and both servers instead of
    biasing one of them. Returns per server: rows keyed by (test, x), fill times, RSS."""
    kinds = list(servers)
    clients = {kind: PipeClient(servers[kind].port, timeout=600) for kind in kinds}
    out: dict[str, dict[str, Any]] = {kind: {"rows": {}, "fill_seconds": {}} for kind in kinds}
    try:
        pel_key = _key(max(plan.sizes)) if max(plan.sizes) >= plan.pel_entries() else f"{KEY}:pel"
        for kind in kinds:
            client = clients[kind]
            for size in plan.sizes:
                client.check("DEL", _key(size))
                took = fill(client, _key(size), size)
                out[kind]["fill_seconds"][str(size)] = round(took, 2)
                _log(f"  {kind:<5} filled {_key(size)} to {size:,} entries in {took:.1f} s")
            if plan.pel and pel_key == f"{KEY}:pel":
                client.check("DEL", pel_key)
                out[kind]["fill_seconds"]["pel"] = round(fill(client, pel_key, plan.pel_entries()), 2)
        rnd = random.Random(SEED)
        xr = {(kind, size): Sample() for kind in kinds for size in plan.sizes}
        xa = {(kind, size): Sample() for kind in kinds for size in plan.sizes}
        returned = {(kind, size): 0 for kind in kinds for size in plan.sizes}
        for r in range(plan.rounds):
            ops = _share(plan.ops, plan.rounds, r)
            for size in plan.sizes:
                for kind in _order(kinds, r):
                    server, client = servers[kind], clients[kind]
                    returned[kind, size] += measure_xrange(server, client, _key(size), ops, rnd, xr[kind, size])
                    measure_xadd(server, client, _key(size), size, ops, xa[kind, size])
            _log(f"  round {r + 1}/{plan.rounds}: " + "; ".join(
                f"{kind} XRANGE {xr[kind, max(plan.sizes)].summary()['cpu_us_per_op']:.2f} "
                f"XADD {xa[kind, max(plan.sizes)].summary()['cpu_us_per_op']:.2f} µs CPU/op at {max(plan.sizes):,}"
                for kind in kinds))
        for kind in kinds:
            for size in plan.sizes:
                out[kind]["rows"]["xrange", size] = {
                    **xr[kind, size].summary(),
                    "entries_per_reply": round(returned[kind, size] / max(1, xr[kind, size].ops), 2),
                }
                out[kind]["rows"]["xadd", size] = xa[kind, size].summary()
        if plan.pel:
            run_pel(servers, clients, pel_key, plan, out)
        for kind in kinds:
            out[kind]["rss_bytes"] = servers[kind].rss_bytes()
    finally:
        for client in clients.values():
            client.close()
    return out


def run_pel(servers: dict[str, Server], clients: dict[str, PipeClient], key: str, plan: Plan,
            out: dict[str, dict[str, Any]]) -> None:
    """Two groups on one stream: EMPTY_GROUP acks every cycle (PEL about 0), PEL_GROUP first
    gets plan.pel entries delivered and never acked; their cycles alternate in rounds."""
    kinds = list(servers)
    for kind in kinds:
        client = clients[kind]
        client.check("XGROUP", "CREATE", key, EMPTY_GROUP, "0")
        client.check("XGROUP", "CREATE", key, PEL_GROUP, "0")
        mem0 = used_memory(client)
        took = build_pel(client, key, PEL_GROUP, plan.pel)
        mem1 = used_memory(client)
        out[kind]["rows"]["pel_build", plan.pel] = {
            "seconds": round(took, 2),
            "used_memory_bytes_per_pending": round((mem1 - mem0) / plan.pel, 1),
        }
        _log(f"  {kind:<5} PEL of {plan.pel:,} built in {took:.1f} s")
    samples = {(kind, group): (Sample(), Sample()) for kind in kinds for group in (EMPTY_GROUP, PEL_GROUP)}
    for r in range(plan.rounds):
        cycles = _share(plan.cycles, plan.rounds, r)
        for kind in _order(kinds, r):
            for group in (EMPTY_GROUP, PEL_GROUP) if r % 2 == 0 else (PEL_GROUP, EMPTY_GROUP):
                measure_cycles(servers[kind], clients[kind], key, group, cycles, *samples[kind, group])
    for kind in kinds:
        held = pending_count(clients[kind], key, PEL_GROUP)
        for pending, group in ((0, EMPTY_GROUP), (plan.pel, PEL_GROUP)):
            cycle, ack = samples[kind, group]
            out[kind]["rows"]["xreadgroup_cycle", pending] = {
                **cycle.summary(),
                "xack_cmd_us_per_op": round(ack.usec / ack.calls, 3) if ack.calls else None,
                "pending_held": pending_count(clients[kind], key, group) if pending == 0 else held,
            }
        _log(f"  {kind:<5} cycle {out[kind]['rows']['xreadgroup_cycle', 0]['cpu_us_per_op']:.2f} µs CPU "
             f"(empty PEL) -> {out[kind]['rows']['xreadgroup_cycle', plan.pel]['cpu_us_per_op']:.2f} "
             f"({held:,} pending)")


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
                        help=f"tiny run: sizes {','.join(map(str, QUICK_SIZES))}, 1000 ops, PEL 2000, 200 cycles, 2 rounds")
    parser.add_argument("--sizes", default=None, help="comma-separated stream sizes (default 1e4,1e5,1e6,1e7)")
    parser.add_argument("--ops", type=int, default=None, help=f"timed XADDs and XRANGEs per size (default {DEFAULT_OPS})")
    parser.add_argument("--pel", type=int, default=None, help=f"pending entries for the PEL test, 0 skips it (default {DEFAULT_PEL})")
    parser.add_argument("--cycles", type=int, default=None, help=f"XREADGROUP+XACK cycles per PEL size (default {DEFAULT_CYCLES})")
    parser.add_argument("--rounds", type=int, default=None,
                        help=f"the ops and cycles are split over this many interleaved rounds (default {DEFAULT_ROUNDS})")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "scaling"),
                        help="directory for latest.json and a line of history.jsonl")
    args = parser.parse_args(argv)
    sizes = _ints(args.sizes) if args.sizes else (QUICK_SIZES if args.quick else SIZES)
    args.plan = Plan(
        sizes=tuple(sorted(sizes)),
        ops=args.ops if args.ops is not None else (1_000 if args.quick else DEFAULT_OPS),
        pel=args.pel if args.pel is not None else (2_000 if args.quick else DEFAULT_PEL),
        cycles=args.cycles if args.cycles is not None else (200 if args.quick else DEFAULT_CYCLES),
        rounds=args.rounds if args.rounds is not None else (2 if args.quick else DEFAULT_ROUNDS),
    )
    plan = args.plan
    if not sizes or min(sizes) <= 0 or min(plan.ops, plan.cycles, plan.rounds) <= 0 or plan.pel < 0:
        parser.error("sizes, --ops, --cycles and --rounds must be positive, --pel non-negative")
    if plan.rounds > min(plan.ops, plan.cycles):
        parser.error("--rounds cannot exceed --ops or --cycles")
    return args


def main(argv: list[str] | None = None) -> int:

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
        env = environment(servers)
        print(f"redis-server pid {servers['redis'].pid} port {servers['redis'].port}, "
              f"rill pid {servers['rill'].pid} port {servers['rill'].port}; sizes {list(plan.sizes)}, "
              f"{plan.ops} ops, PEL {plan.pel}, {plan.cycles} cycles, {plan.rounds} rounds; "
              f"load average {load_start[0]:.2f}", file=sys.stderr, flush=True)
        results = run(servers, plan)
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
                   "rounds": plan.rounds, "op_batch": OP_BATCH, "fill_batch": FILL_BATCH},
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
