"""`python -m bench.failover` (also `python -m bench --suite failover`): how long a failover
takes when Debian's redis-sentinel manages Rill nodes, side by side with redis-sentinel
managing redis-server nodes, same settings, same run.

Two clusters run at once (bench/sentinel_cluster.py: a primary, two replicas, three
sentinels, quorum 2, down-after-milliseconds 1000, failover-timeout 5000 unless told
otherwise). Each round faults the current primary of each cluster in turn (the kinds'
order alternates between rounds) with each fault:

* `kill`: SIGKILL; 0.5 s after the failover the node is restarted from its config file;
* `pause`: SIGSTOP; SIGCONT 0.5 s after the failover.

and measures, from the fault:

* `promoted_s`: until a sentinel names another node (SENTINEL GET-MASTER-ADDR-BY-NAME; the
  leader does so once the promoted replica reports `role:master`);
* `failover_s`: until the first XADD acknowledged by the new primary, written by a client
  that looks for the primary as redis-py's `Sentinel.discover_master` does (SENTINEL MASTERS,
  which moves at `+switch-master`, once the other replica follows the new primary) every
  20 ms, with a 1 s socket timeout;
* `demoted_s`: from the heal until the old primary follows the new one (Sentinel sends it
  SLAVEOF after it has reported `role:master` for 8 s: mostly Sentinel's wait).

It prints the medians per kind and fault with the ratio Rill / redis-server, and writes
bench/results/failover/latest.json and a line of history.jsonl. A sentinel whose timer jumped more
than 2 s (the machine starved it) enters TILT and acts on nothing for 30 s; the runs count
`+tilt` events so such a round can be told apart.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

import redis

from bench.procs import ROOT, BenchError
from bench.report import write_json
from bench.sentinel_cluster import SentinelCluster, Settings

KINDS = ("redis", "rill")
FAULTS = ("kill", "pause")
HEAL_AFTER_S = 0.5
TIMEOUT_S = 60.0


def failover(cluster: SentinelCluster, fault: str) -> dict[str, Any]:
    """Fault the current primary, measure, heal, and wait until the cluster is whole again."""
    cluster.wait(cluster.ready, TIMEOUT_S, "a healthy cluster")
    old = cluster.agreed_primary()
    assert old is not None
    sentinel = cluster.sentinel_client(timeout=1.0)
    tilts = cluster.sentinel_events("+tilt")
    started = time.monotonic()
    old.kill() if fault == "kill" else old.pause()
    promoted_s = failover_s = None
    new_port = None
    while failover_s is None:
        now = time.monotonic() - started
        if now > TIMEOUT_S:
            raise BenchError(f"{cluster.kind}: no write acknowledged by a new primary {TIMEOUT_S:.0f}s after the {fault}")
        if promoted_s is None and any(p not in (None, old.port) for p in cluster.master_ports()):
            promoted_s = now
        port = cluster.discover_primary_port(sentinel)
        if port is not None and port != old.port:
            try:
                with cluster.node_at(port).client(1.0) as c:
                    c.xadd("failover", {"fault": fault})
                failover_s = time.monotonic() - started
                new_port = port
            except redis.RedisError:
                pass
        time.sleep(0.02)
    if promoted_s is None:
        promoted_s = failover_s  # the write came first: the sentinels were polled before it
    time.sleep(HEAL_AFTER_S)
    assert new_port is not None
    new = cluster.node_at(new_port)
    healed = time.monotonic()
    old.start() if fault == "kill" else old.resume()
    cluster.wait(lambda: cluster.follows(old, new), TIMEOUT_S, f"the old primary {old.name} to follow {new.name}")
    demoted_s = time.monotonic() - healed
    cluster.wait(cluster.ready, TIMEOUT_S, "a healthy cluster again")
    return {
        "kind": cluster.kind, "fault": fault, "promoted_s": round(promoted_s, 3), "failover_s": round(failover_s, 3),
        "demoted_s": round(demoted_s, 3), "tilts": cluster.sentinel_events("+tilt") - tilts,
        "loadavg_1m": round(os.getloadavg()[0], 2),
    }


def _median(rows: list[dict[str, Any]], kind: str, fault: str, field: str) -> float | None:
    values = [r[field] for r in rows if r["kind"] == kind and r["fault"] == fault]
    return round(statistics.median(values), 3) if values else None


def summary(rows: list[dict[str, Any]], kinds: list[str], faults: list[str]) -> list[dict[str, Any]]:
    """Medians per kind and fault, and Rill / redis-server for each."""
    out = []
    for fault in faults:
        entry: dict[str, Any] = {"fault": fault}
        for kind in kinds:
            for field in ("promoted_s", "failover_s", "demoted_s"):
                entry[f"{kind}_{field}"] = _median(rows, kind, fault, field)
        if set(kinds) == set(KINDS):
            for field in ("promoted_s", "failover_s"):
                redis_value, rill_value = entry[f"redis_{field}"], entry[f"rill_{field}"]
                entry[f"ratio_{field}"] = round(rill_value / redis_value, 2) if redis_value else None
        out.append(entry)
    return out


def table(summaries: list[dict[str, Any]], kinds: list[str]) -> str:
    lines = ["fault  | " + " | ".join(f"{k} promoted / failover / demoted (s)" for k in kinds) + " | rill/redis failover"]
    for s in summaries:
        cells = [f"{s[f'{k}_promoted_s']} / {s[f'{k}_failover_s']} / {s[f'{k}_demoted_s']}" for k in kinds]
        lines.append(f"{s['fault']:<6} | " + " | ".join(cells) + f" | {s.get('ratio_failover_s')}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.failover", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="failovers per kind and fault (default 3)")
    parser.add_argument("--faults", default=",".join(FAULTS), help="kill,pause (default: both)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="redis,rill (default: both)")
    parser.add_argument("--down-after", type=int, default=Settings.down_after_ms, help="down-after-milliseconds")
    parser.add_argument("--failover-timeout", type=int, default=Settings.failover_timeout_ms, help="failover-timeout (ms)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "failover"))
    parser.add_argument("--quick", action="store_true", help="one round")
    args = parser.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    faults = [f for f in args.faults.split(",") if f]
    if any(k not in KINDS for k in kinds) or any(f not in FAULTS for f in faults) or args.rounds < 1:
        parser.error("unknown kind or fault, or no rounds")
    rounds = 1 if args.quick else args.rounds
    settings = Settings(down_after_ms=args.down_after, failover_timeout_ms=args.failover_timeout)
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    clusters: dict[str, SentinelCluster] = {}
    rows: list[dict[str, Any]] = []
    try:
        for kind in kinds:
            clusters[kind] = SentinelCluster(kind, settings)
            clusters[kind].start()
        for i in range(rounds):
            order = kinds if i % 2 == 0 else kinds[::-1]
            for fault in faults:
                for kind in order:
                    row = failover(clusters[kind], fault)
                    row["round"] = i
                    rows.append(row)
                    print(f"round {i} {kind:<5} {fault:<5} promoted {row['promoted_s']:.2f}s, first write "
                          f"{row['failover_s']:.2f}s, old primary demoted {row['demoted_s']:.2f}s after the heal"
                          f"{', TILT' if row['tilts'] else ''}", file=sys.stderr, flush=True)
    except BenchError as exc:
        print(f"failover bench aborted: {exc}", file=sys.stderr)
        return 1
    finally:
        for cluster in clusters.values():
            cluster.close()
    summaries = summary(rows, kinds, faults)
    document = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"rounds": rounds, "faults": faults, "kinds": kinds, "down_after_ms": settings.down_after_ms,
                   "failover_timeout_ms": settings.failover_timeout_ms, "quorum": settings.quorum,
                   "heal_after_s": HEAL_AFTER_S},
        "summary": summaries,
        "rows": rows,
    }
    print(table(summaries, kinds))
    for path in write_json(document, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
