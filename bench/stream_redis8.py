"""`python -m bench.stream_redis8`: what Redis 8's stream commands save, measured as the work
they replace, Rill beside redis-server 7 (Debian's) doing the same job the old way.

Two jobs, each run to completion on a fresh stream by one client sending one command at a
time (no pipelining: a round trip is what the new commands save):

* **recover**: `--entries` entries, a tenth of them (`--idle-share`) pending for a consumer
  that died, the rest never read. A worker takes over all of them, up to `--count` a turn,
  and acknowledges each turn's batch.
  - old way (both servers), the loop CLAIM replaces: each turn `XAUTOCLAIM key g worker 0
    <cursor> COUNT n`, then, when it gave fewer than n, `XREADGROUP GROUP g worker COUNT <the
    rest> STREAMS key >`, then one `XACK` of what both gave, until a turn gives nothing;
  - Rill's new way: each turn `XREADGROUP GROUP g worker COUNT n CLAIM 0 STREAMS key >` (idle
    pending entries first, then new ones) and an `XACK`, until a turn gives nothing.
* **ackdel**: `--entries` entries delivered to one consumer; the consumer acknowledges and
  deletes them, `--batch` at a time:
  - old way (both servers): `XACK key g id…` then `XDEL key id…`;
  - Rill's new way: `XACKDEL key g IDS n id…`.

Reported per (job, server, way): entries handled, round trips per entry, the server's CPU µs
per entry (utime + stime of the process over the job) and the wall time; and the ratios of
Rill's new way to redis-server's old way. Results: bench/results/redis8/latest.json and a line
of history.jsonl, and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

import hiredis

from bench.client import RespClient
from bench.procs import BenchError, Server, install_exit_handlers, start_redis, start_rill
from bench.report import write_json

KEY = "jobs"
GROUP = "g"


def _check(reply: object) -> Any:
    if isinstance(reply, hiredis.ReplyError):
        raise BenchError(f"server error: {reply}")
    return reply


def _fill(c: RespClient, entries: int, dead_share: float) -> None:
    """`entries` entries; the first `dead_share` of them read by `dead`, which never acks."""
    _check(c.call("DEL", KEY))
    c.pipeline(("XADD", KEY, f"{i + 1}-0", "payload", "x" * 64) for i in range(entries))
    _check(c.call("XGROUP", "CREATE", KEY, GROUP, "0"))
    dead = int(entries * dead_share)
    if dead:
        _check(c.call("XREADGROUP", "GROUP", GROUP, "dead", "COUNT", dead, "STREAMS", KEY, ">"))


def _ids(entries: Any) -> list[bytes]:
    return [e[0] for e in entries]


def recover_old(c: RespClient, count: int) -> tuple[int, int]:
    """A worker's loop before Redis 8.4: it cannot know whether idle entries wait, so each
    turn asks XAUTOCLAIM (continuing from its cursor) for up to `count`, then XREADGROUP for
    what is left of the batch, and acknowledges what both gave, until a turn gives nothing."""
    trips = handled = 0
    cursor: bytes = b"0-0"
    while True:
        reply = _check(c.call("XAUTOCLAIM", KEY, GROUP, "worker", 0, cursor, "COUNT", count))
        trips += 1
        cursor, got = reply[0], list(reply[1])
        if len(got) < count:  # room left in this turn's batch: new entries
            fresh = _check(c.call("XREADGROUP", "GROUP", GROUP, "worker", "COUNT", count - len(got), "STREAMS", KEY, ">"))
            trips += 1
            if fresh:
                got += fresh[0][1]
        if not got:
            break
        _check(c.call("XACK", KEY, GROUP, *_ids(got)))
        trips += 1
        handled += len(got)
    return trips, handled


def recover_claim(c: RespClient, count: int) -> tuple[int, int]:
    trips = handled = 0
    while True:
        reply = _check(c.call("XREADGROUP", "GROUP", GROUP, "worker", "COUNT", count, "CLAIM", 0, "STREAMS", KEY, ">"))
        trips += 1
        if not reply:
            break
        entries = reply[0][1]
        _check(c.call("XACK", KEY, GROUP, *_ids(entries)))
        trips += 1
        handled += len(entries)
    return trips, handled


def _pending_ids(c: RespClient, entries: int) -> list[bytes]:
    return [e[0] for e in _check(c.call("XPENDING", KEY, GROUP, "-", "+", entries))]


def ackdel_old(c: RespClient, ids: list[bytes], batch: int) -> tuple[int, int]:
    trips = 0
    for i in range(0, len(ids), batch):
        part = ids[i : i + batch]
        _check(c.call("XACK", KEY, GROUP, *part))
        _check(c.call("XDEL", KEY, *part))
        trips += 2
    return trips, len(ids)


def ackdel_new(c: RespClient, ids: list[bytes], batch: int) -> tuple[int, int]:
    trips = 0
    for i in range(0, len(ids), batch):
        part = ids[i : i + batch]
        _check(c.call("XACKDEL", KEY, GROUP, "IDS", len(part), *part))
        trips += 1
    return trips, len(ids)


def _measure(server: Server, job: str, way: str, args: argparse.Namespace) -> dict[str, Any]:
    with RespClient(server.port) as c:
        if job == "recover":
            _fill(c, args.entries, args.idle_share)
        else:
            _fill(c, args.entries, 1.0)
            ids = _pending_ids(c, args.entries)
        cpu0, t0 = server.cpu_seconds(), time.perf_counter()
        if job == "recover":
            trips, handled = (recover_claim if way == "new" else recover_old)(c, args.count)
        else:
            trips, handled = (ackdel_new if way == "new" else ackdel_old)(c, ids, args.batch)
        wall, cpu = time.perf_counter() - t0, server.cpu_seconds() - cpu0
        left = _check(c.call("XPENDING", KEY, GROUP))[0]
        length = _check(c.call("XLEN", KEY))
    if handled != args.entries or left != 0 or (job == "ackdel" and length != 0):
        raise BenchError(f"{job}/{way} on {server.kind}: handled {handled} of {args.entries}, {left} pending, "
                         f"{length} left in the stream")  # fmt: skip
    return {
        "job": job, "server": server.kind, "way": way, "entries": handled, "round_trips": trips,
        "round_trips_per_entry": trips / handled, "server_cpu_us_per_entry": cpu * 1e6 / handled,
        "wall_s": wall,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--count", type=int, default=100, help="entries per turn of the recover job")
    parser.add_argument("--idle-share", type=float, default=0.1, help="share of the recover job's entries left idle")
    parser.add_argument("--batch", type=int, default=1, help="IDs per XACK/XDEL/XACKDEL in the ackdel job")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the median of each figure is reported")
    parser.add_argument("--quick", action="store_true", help="a tiny run (the smoke test)")
    parser.add_argument("--out", default="bench/results/redis8")
    args = parser.parse_args(argv)
    if args.quick:
        args.entries, args.rounds = 600, 1
    install_exit_handlers()
    redis_server, rill = start_redis(), start_rill()
    try:
        plan = [("recover", redis_server, "old"), ("recover", rill, "old"), ("recover", rill, "new"),
                ("ackdel", redis_server, "old"), ("ackdel", rill, "old"), ("ackdel", rill, "new")]  # fmt: skip
        runs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for _ in range(args.rounds):
            for job, server, way in plan:
                row = _measure(server, job, way, args)
                runs.setdefault((job, server.kind, way), []).append(row)
    finally:
        redis_server.stop()
        rill.stop()
    rows = []
    for samples in runs.values():
        row = dict(samples[0])
        for field in ("server_cpu_us_per_entry", "wall_s"):
            row[field] = sorted(s[field] for s in samples)[len(samples) // 2]
        rows.append(row)
    by = {(r["job"], r["server"], r["way"]): r for r in rows}
    def ratio(a: float, b: float) -> float | None:
        # CPU time is counted in clock ticks (10 ms): a tiny run may see none.
        return a / b if b else None

    ratios = {}
    for job in ("recover", "ackdel"):
        new, old, rill_old = by[(job, "rill", "new")], by[(job, "redis", "old")], by[(job, "rill", "old")]
        ratios[job] = {
            "round_trips_rill_new_over_redis_old": ratio(new["round_trips_per_entry"], old["round_trips_per_entry"]),
            "server_cpu_rill_new_over_redis_old": ratio(new["server_cpu_us_per_entry"], old["server_cpu_us_per_entry"]),
            "server_cpu_rill_new_over_rill_old": ratio(new["server_cpu_us_per_entry"], rill_old["server_cpu_us_per_entry"]),
        }
    print(f"{'job':8} {'server':6} {'way':4} {'entries':>8} {'trips/entry':>12} {'cpu µs/entry':>13} {'wall s':>8}")
    for r in rows:
        print(f"{r['job']:8} {r['server']:6} {r['way']:4} {r['entries']:>8} {r['round_trips_per_entry']:>12.3f} "
              f"{r['server_cpu_us_per_entry']:>13.2f} {r['wall_s']:>8.2f}")  # fmt: skip
    print(json.dumps(ratios, indent=1))
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    document = {
        "suite": "redis8", "entries": args.entries, "count": args.count, "batch": args.batch,
        "idle_share": args.idle_share,
        "rounds": args.rounds, "ratios": ratios, "rows": rows,
    }  # fmt: skip
    write_json(document, args.out, stamp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
