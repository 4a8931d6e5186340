"""`python -m bench.persistence`: write throughput with the AOF on, side by side with
redis-server configured the same way (`appendonly yes`, the same `appendfsync`), for each
fsync policy, with redis-benchmark (-c 50, -P 1 by default: every request waits for its
reply, so `always` pays one group-committed fsync per event-loop round trip).

Results go to bench/results/persistence/latest.json and a line of history.jsonl.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from typing import Any

from bench.procs import ROOT, BenchError, Server, _launch, free_port, install_exit_handlers
from bench.report import row_dict, table, write_json
from bench.throughput import TESTS, Row, run_row

POLICIES = ("always", "everysec")
DEFAULT_TESTS = ("set", "xadd")


def start_pair(policy: str) -> dict[str, Server]:
    """redis-server and a Rill node, each with `appendonly yes` and `appendfsync policy`,
    in fresh data directories."""
    aof = ["--appendonly", "yes", "--appendfsync", policy]
    servers: dict[str, Server] = {}
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-aof-redis-")
    servers["redis"] = _launch("redis", [
        "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", *aof,
        "--dir", workdir, "--logfile", os.path.join(workdir, "server.log"),
    ], workdir, port, signal.SIGTERM)
    port = free_port()
    workdir = tempfile.mkdtemp(prefix="bench-aof-rill-")
    try:
        servers["rill"] = _launch("rill", [
            sys.executable, "-m", "node.main", "node", "--port", str(port), *aof,
            "--dir", workdir, "--logfile", os.path.join(workdir, "server.log"),
        ], workdir, port, signal.SIGTERM)
    except BaseException:
        servers["redis"].stop()
        raise
    return servers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.persistence", description="AOF write throughput, Rill vs redis-server, per appendfsync policy.")
    parser.add_argument("-n", "--requests", type=int, default=50_000, help="requests per run (default 50000)")
    parser.add_argument("-c", "--clients", type=int, default=50, help="parallel connections (default 50)")
    parser.add_argument("-P", "--pipeline", type=int, default=1, help="pipeline depth (default 1)")
    parser.add_argument("--policies", default=",".join(POLICIES), help="appendfsync policies (default: %(default)s)")
    parser.add_argument("--tests", default=",".join(DEFAULT_TESTS), help="tests (default: %(default)s)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "persistence"))
    args = parser.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    tests = [t.strip() for t in args.tests.split(",") if t.strip()]
    unknown = [p for p in policies if p not in ("always", "everysec", "no")] + [t for t in tests if t not in TESTS]
    if unknown:
        parser.error(f"unknown policies/tests: {unknown}")
    install_exit_handlers()
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    rows: list[Row] = []
    try:
        for policy in policies:
            servers = start_pair(policy)
            print(f"appendfsync {policy}: redis pid {servers['redis'].pid}, rill pid {servers['rill'].pid}",
                  file=sys.stderr, flush=True)
            try:
                for name in tests:
                    row = run_row(servers, TESTS[name], args.pipeline, args.requests, args.clients)
                    rows.append(Row(f"{name}/{policy}", row.label, row.pipeline, row.requests,
                                    row.redis, row.rill, row.skipped))
            finally:
                for server in servers.values():
                    server.stop()
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    document: dict[str, Any] = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"clients": args.clients, "requests": args.requests, "pipeline": args.pipeline,
                   "policies": policies, "tests": tests, "appendonly": "yes"},
        "rows": [row_dict(row) for row in rows],
    }
    print(table(rows))
    for path in write_json(document, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
