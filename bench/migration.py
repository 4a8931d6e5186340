"""`python -m bench.migration`: moving a data set out of a redis-server, into a Rill node
beside into another redis-server, measured in the same run (issue 34's "Measured").

The source (Debian's redis-server 7.0, diskless full syncs started at once) holds
`--entries` stream entries (1,000,000) in one stream with a consumer group whose PEL has
`--pending` entries (100,000, over 5 consumers). For each target, a Rill node and a
redis-server in turn (`--rounds` times, alternating):

* full sync: from REPLICAOF to the link up with the data loaded (the source's RDB built and
  streamed, the target's load), and the CPU time the target spent meanwhile (/proc: the
  steadier figure on a shared machine); the target's own RDB load time, from its log (Rill:
  the "loaded ... in X seconds" line; redis-server: "Loading DB in memory" to "Finished with
  success");
* live catch-up: the target is stopped (SIGSTOP) while the source takes `--catchup` XADDs
  (200,000) to another stream with its own group, a delivery of a tenth of them through
  XREADGROUP COUNT 100 and an XACK of half of those; then continued: the time until its
  offset reaches the source's, the target's CPU time meanwhile, and the entries per second;
* checked after each phase: the target's XLEN, XPENDING summary and XINFO GROUPS are the
  source's (a redis-server replica's groups lose their entries-read in the catch-up: Redis 7.0
  does not propagate it; `entries_read_kept` records it, and a Rill replica must keep it).

Then the file path (docs/migration.md, "From an RDB file"): the source's SAVE is loaded by a
fresh redis-server and by a fresh Rill node (`rill node` with that dump.rdb): the load time
each logs.

The catch-up stream is deleted after each target, so every full sync copies the same data.
Results: bench/results/migration/latest.json + history.jsonl.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import sys
import time
from datetime import UTC, datetime
from typing import Any

import redis

from bench.client import RespClient
from bench.procs import ROOT, BenchError, Server, install_exit_handlers, start_redis, start_rill, steal_share
from bench.report import write_json
from node.replication.loop_load import host_steal_ticks

_REDIS_TIME = re.compile(r"^\d+:\w (\d+ \w+ \d+ \d+:\d+:\d+\.\d+) ")
_RILL_LOADED = re.compile(r"MASTER <-> REPLICA sync \(Redis\): loaded \d+ keys in ([0-9.]+) seconds")
_RILL_FILE = re.compile(r"Redis RDB \S+ \(produced by Redis [^)]*\) loaded: \d+ keys.* in ([0-9.]+) seconds")
_REDIS_FILE = re.compile(r"DB loaded from disk: ([0-9.]+) seconds")
_POLL = 0.005


def _log(server: Server) -> str:
    with open(os.path.join(server.dir, "server.log"), encoding="utf-8", errors="replace") as f:
        return f.read()


def _redis_time(line: str) -> float:
    match = _REDIS_TIME.match(line)
    if match is None:
        raise BenchError(f"no time in {line!r}")
    return datetime.strptime(match.group(1), "%d %b %Y %H:%M:%S.%f").timestamp()


def _redis_replica_load_s(log: str) -> float:
    lines = log.splitlines()
    started = [line for line in lines if "MASTER <-> REPLICA sync: Loading DB in memory" in line]
    finished = [line for line in lines if "MASTER <-> REPLICA sync: Finished with success" in line]
    if not started or not finished:
        raise BenchError("the redis replica's log has no load")
    return _redis_time(finished[-1]) - _redis_time(started[-1])


def _fill(port: int, entries: int, pending: int) -> None:
    with RespClient(port, timeout=600) as c:
        c.pipeline(("XADD", "orders", f"{i}-0", "customer", f"c{i % 1000}", "amount", str(i % 500),
                    "item", f"sku-{i % 97}") for i in range(1, entries + 1))
        c.check("XGROUP", "CREATE", "orders", "billing", "0")
        for k in range(5):
            c.check("XREADGROUP", "GROUP", "billing", f"consumer-{k}", "COUNT", str(pending // 5), "STREAMS", "orders", ">")


def _summary(port: int, entries_read: bool = True) -> dict[str, Any]:
    """What the checks compare. A redis-server replica's groups lose their entries-read after
    XREADGROUP (Redis 7.0 and 7.2 do not propagate it; a Rill replica does): `entries_read`
    False leaves it out."""
    with redis.Redis(port=port, socket_timeout=60) as c:
        out: dict[str, Any] = {}
        for key in ("orders", "live"):
            if c.exists(key):
                pending = c.xpending(key, "billing" if key == "orders" else "g")
                out[key] = (c.xlen(key), pending["pending"], pending["min"], pending["max"],
                            [(g["name"], g["last-delivered-id"], g["entries-read"] if entries_read else None,
                              g["pending"]) for g in c.xinfo_groups(key)])
        return out


def _offsets(source: int, target: int) -> tuple[int, int]:
    with redis.Redis(port=source) as s, redis.Redis(port=target) as t:
        return int(s.info("replication")["master_repl_offset"]), int(t.info("replication").get("slave_repl_offset", -1))


def _synced(port: int) -> bool:
    with redis.Redis(port=port) as c:
        info = c.info("replication")
        return info.get("master_link_status") == "up" and not info.get("master_sync_in_progress")


def _wait(check: Any, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise BenchError(f"timed out waiting for {what}")
        time.sleep(_POLL)
    return time.monotonic()


def _catchup_writes(port: int, count: int) -> None:
    with RespClient(port, timeout=600) as c:
        c.check("XGROUP", "CREATE", "live", "g", "$", "MKSTREAM")
        c.pipeline(("XADD", "live", "*", "kind", "event", "n", str(i)) for i in range(count))
        delivered: list[bytes] = []
        for _ in range(count // 10 // 100):
            reply = c.call("XREADGROUP", "GROUP", "g", "worker", "COUNT", "100", "STREAMS", "live", ">")
            assert isinstance(reply, list)
            delivered += [entry[0] for entry in reply[0][1]]
        c.pipeline(("XACK", "live", "g", entry_id) for entry_id in delivered[::2])


def _one_target(kind: str, source: Server, catchup: int) -> dict[str, Any]:
    target = start_rill() if kind == "rill" else start_redis()
    try:
        before = host_steal_ticks()
        cpu_before = target.cpu_seconds()
        with redis.Redis(port=target.port) as t:
            started = time.monotonic()
            t.execute_command("REPLICAOF", "127.0.0.1", str(source.port))
            done = _wait(lambda: _synced(target.port), 900, f"{kind} to sync")
        full_sync_s = done - started
        sync_cpu_s = target.cpu_seconds() - cpu_before
        log = _log(target)
        if kind == "rill":
            match = _RILL_LOADED.search(log)
            if match is None:
                raise BenchError("the Rill replica's log has no load line")
            load_s = float(match.group(1))
        else:
            load_s = _redis_replica_load_s(log)
        if _summary(target.port) != _summary(source.port):
            raise BenchError(f"{kind}: the data after the full sync differs from the source's")
        os.kill(target.pid, signal.SIGSTOP)
        try:
            _catchup_writes(source.port, catchup)
            offset = _offsets(source.port, source.port)[0]
        finally:
            os.kill(target.pid, signal.SIGCONT)
        resumed = time.monotonic()
        cpu_before = target.cpu_seconds()
        caught = _wait(lambda: _offsets(source.port, target.port)[1] >= offset, 900, f"{kind} to catch up")
        catchup_s = caught - resumed
        catchup_cpu_s = target.cpu_seconds() - cpu_before
        exact = kind == "rill"
        if _summary(target.port, exact) != _summary(source.port, exact):
            raise BenchError(f"{kind}: the data after the catch-up differs from the source's: "
                             f"{_summary(target.port)} != {_summary(source.port)}")
        entries_read_kept = _summary(target.port) == _summary(source.port)
        steal = steal_share(before, host_steal_ticks())
        with redis.Redis(port=source.port) as s:
            s.delete("live")
        return {"full_sync_s": round(full_sync_s, 3), "full_sync_cpu_s": round(sync_cpu_s, 3),
                "rdb_load_s": round(load_s, 3), "catchup_s": round(catchup_s, 3),
                "catchup_cpu_s": round(catchup_cpu_s, 3), "catchup_entries_per_s": round(catchup / catchup_s),
                "entries_read_kept": entries_read_kept, "steal": round(steal, 3)}
    finally:
        target.stop()
        shutil.rmtree(target.dir, ignore_errors=True)


def _file_load(source: Server) -> dict[str, Any]:
    with redis.Redis(port=source.port) as s:
        s.save()
    rdb = os.path.join(source.dir, "dump.rdb")
    out: dict[str, Any] = {"rdb_bytes": os.path.getsize(rdb)}
    for kind in ("redis", "rill"):
        server = start_redis(copy_dump=rdb) if kind == "redis" else start_rill(copy_dump=rdb)
        try:
            pattern = _RILL_FILE if kind == "rill" else _REDIS_FILE
            match = None
            deadline = time.monotonic() + 600
            while match is None and time.monotonic() < deadline:
                match = pattern.search(_log(server))
                time.sleep(0.05)
            if match is None:
                raise BenchError(f"{kind}: no load line in its log")
            out[kind] = float(match.group(1))
        finally:
            server.stop()
            shutil.rmtree(server.dir, ignore_errors=True)
    out["ratio"] = round(out["rill"] / out["redis"], 2) if out["redis"] > 0 else None
    return out


def run(entries: int, pending: int, catchup: int, rounds: int) -> dict[str, Any]:
    source = start_redis("--repl-diskless-sync", "yes", "--repl-diskless-sync-delay", "0",
                         "--repl-backlog-size", "512mb", "--client-output-buffer-limit", "replica 0 0 0")
    try:
        filled = time.monotonic()
        _fill(source.port, entries, pending)
        print(f"source filled: {entries} entries, {pending} pending in {time.monotonic() - filled:.1f} s", flush=True)
        runs: dict[str, list[dict[str, Any]]] = {"redis": [], "rill": []}
        for round_index in range(rounds):
            for kind in ("redis", "rill") if round_index % 2 == 0 else ("rill", "redis"):
                result = _one_target(kind, source, catchup)
                runs[kind].append(result)
                print(f"round {round_index + 1} {kind}: {result}", flush=True)
        file_load = _file_load(source)
        print(f"RDB file load: {file_load}", flush=True)
    finally:
        source.stop()
        shutil.rmtree(source.dir, ignore_errors=True)
    rows = []
    for metric in ("full_sync_s", "full_sync_cpu_s", "rdb_load_s", "catchup_s", "catchup_cpu_s", "catchup_entries_per_s"):
        redis_value = statistics.median(r[metric] for r in runs["redis"])
        rill_value = statistics.median(r[metric] for r in runs["rill"])
        rows.append({"metric": metric, "redis": redis_value, "rill": rill_value,
                     "rill_over_redis": round(rill_value / redis_value, 2) if redis_value else None})
    return {"suite": "migration", "entries": entries, "pending": pending, "catchup": catchup, "rounds": rounds,
            "rill_native": _native(), "file_load_s": file_load, "runs": runs, "rows": rows}


def _native() -> bool:
    return os.path.exists(os.path.join(ROOT, "node", "_native_build.json")) and os.environ.get("RILL_PURE_PYTHON") != "1"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.migration", description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--pending", type=int, default=100_000)
    parser.add_argument("--catchup", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--quick", action="store_true", help="a tiny run (the smoke test's)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "migration"))
    args = parser.parse_args(argv)
    if args.quick:
        args.entries, args.pending, args.catchup, args.rounds = 20_000, 2_000, 5_000, 1
    install_exit_handlers()
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    document = run(args.entries, args.pending, args.catchup, args.rounds)
    document["timestamp"] = stamp
    print(f"{'metric':24} {'redis':>10} {'rill':>10} {'rill/redis':>10}")
    for row in document["rows"]:
        print(f"{row['metric']:24} {row['redis']:>10} {row['rill']:>10} {row['rill_over_redis']!s:>10}")
    document["quick"] = args.quick
    for path in write_json(document, args.out, stamp):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
