"""`python -m bench`: start redis-server and a Rill node, run every selected test at each
pipeline depth against both in the same run, print the table and write the JSON results.
`--suite` selects other side-by-side suites too (scaling, latency, memory, replication, readscale, spark,
failover, safe-write; see bench/README.md). The throughput suite is followed by the AOF and replication runs."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from bench.procs import ROOT, BenchError, Server, environment, install_exit_handlers, start_redis, start_rill
from bench.report import row_dict, table, write_json
from bench.throughput import DEFAULT_TESTS, PIPELINED_SCALE, STREAM_READ_MAX_REQUESTS, TESTS, Row, run_row

DEFAULT_REQUESTS = 100_000
QUICK_REQUESTS = 10_000
SUITE_NAMES = ("throughput", "redis8", "scaling", "latency", "memory", "replication", "readscale", "spark",
               "spark-committed", "failover", "sentinels", "security", "safe-write")


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Rill vs redis-server with redis-benchmark, side by side in one run.",
        epilog=f"-P runs above 1 send {PIPELINED_SCALE}x the requests; XREADGROUP and XACK runs are "
               f"capped at {STREAM_READ_MAX_REQUESTS} requests (their entries are loaded before each run).",
    )
    parser.add_argument("--quick", action="store_true",
                        help=f"smoke run: {QUICK_REQUESTS} requests per run unless -n is given")
    parser.add_argument("--tests", default=",".join(DEFAULT_TESTS),
                        help="comma-separated tests (default: %(default)s)")
    parser.add_argument("-n", "--requests", type=int, default=None,
                        help=f"requests per -P 1 run (default {DEFAULT_REQUESTS})")
    parser.add_argument("-c", "--clients", type=int, default=50, help="parallel connections (default 50)")
    parser.add_argument("--pipelines", default="1,16", help="pipeline depths (default: %(default)s)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results"),
                        help="directory of the results: each suite writes latest.json and a line of "
                             "history.jsonl to <out>/<suite>/")
    parser.add_argument("--profile", metavar="PATH", default=None,
                        help="run the Rill node under cProfile and write its profile to PATH")
    parser.add_argument("--no-persistence", action="store_true",
                        help="skip the AOF throughput runs (python -m bench.persistence; --quick skips them too)")
    parser.add_argument("--no-replication", action="store_true",
                        help="skip the replication runs that follow the throughput suite (python -m bench.replication; "
                             "--quick skips them too)")
    parser.add_argument("--suite", default="throughput",
                        help=f"comma-separated suites: {', '.join(SUITE_NAMES)} or all (default: %(default)s); "
                             "--quick makes each tiny")
    args = parser.parse_args(argv)
    suites = [s.strip().lower() for s in args.suite.split(",") if s.strip()]
    args.suites = list(SUITE_NAMES) if suites == ["all"] else suites
    if not args.suites or any(s not in SUITE_NAMES for s in args.suites):
        parser.error(f"unknown suite in {args.suite!r}; choose from {','.join(SUITE_NAMES)} or all")
    names = [t.strip().lower() for t in args.tests.split(",") if t.strip()]
    unknown = [t for t in names if t not in TESTS]
    if unknown or not names:
        parser.error(f"unknown tests {unknown}; choose from {','.join(DEFAULT_TESTS)}")
    args.test_names = names
    args.pipeline_list = [int(p) for p in args.pipelines.split(",")]
    if args.requests is None:
        args.requests = QUICK_REQUESTS if args.quick else DEFAULT_REQUESTS
    if args.requests <= 0 or args.clients <= 0 or any(p <= 0 for p in args.pipeline_list):
        parser.error("-n, -c and the pipeline depths must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = _parse_args(argv)
    status = 0
    for suite in args.suites:
        status = _SUITES[suite](args) or status
    return status


def _throughput(args: argparse.Namespace) -> int:
    install_exit_handlers()
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    servers: dict[str, Server] = {}
    rows: list[Row] = []
    try:
        servers["redis"] = start_redis()
        servers["rill"] = start_rill(args.profile)
        env = environment(servers)
        print(f"redis-server pid {servers['redis'].pid} port {servers['redis'].port}, "
              f"rill pid {servers['rill'].pid} port {servers['rill'].port}; "
              f"-c {args.clients} -n {args.requests} -P {args.pipelines}", file=sys.stderr, flush=True)
        for name in args.test_names:
            for pipeline in args.pipeline_list:
                rows.append(run_row(servers, TESTS[name], pipeline, args.requests, args.clients))
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    finally:
        for server in servers.values():
            server.stop()
    document = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"clients": args.clients, "requests": args.requests, "pipelines": args.pipeline_list,
                   "pipelined_scale": PIPELINED_SCALE, "quick": args.quick, "tests": args.test_names},
        "environment": env,
        "rows": [row_dict(row) for row in rows],
    }
    print(table(rows))
    for path in write_json(document, os.path.join(args.out, "throughput"), stamp):
        print(f"wrote {os.path.relpath(path)}")
    if args.profile:
        print(f"rill profile written to {args.profile}")
    if args.quick:
        return 0
    status = 0
    if not args.no_persistence:
        # SET and XADD with appendonly yes, per appendfsync policy, against redis-server the same way.
        from bench import persistence

        status = persistence.main(["-n", str(min(args.requests, 50_000)), "-c", str(args.clients),
                                   "--out", os.path.join(args.out, "persistence")])
    if not args.no_replication and "replication" not in args.suites:
        status = _replication(args) or status
    return status


def _replication(args: argparse.Namespace) -> int:
    # XADD with 0/1/2 replicas, XADD+WAIT latency, replica lag, against redis-server + replicas.
    from bench import replication

    quick = ["-n", "5000", "--wait-samples", "200", "--lag-seconds", "1", "--rounds", "1"] if args.quick else []
    return replication.main([*quick, "-c", str(args.clients), "--out", os.path.join(args.out, "replication")])


def _scaling(args: argparse.Namespace) -> int:
    from bench import stream_scaling

    return stream_scaling.main([*(["--quick"] if args.quick else []), "--out", os.path.join(args.out, "scaling")])


def _latency(args: argparse.Namespace) -> int:
    from bench import stream_latency

    return stream_latency.main([*(["--quick"] if args.quick else []), "--out", os.path.join(args.out, "latency")])


def _memory(args: argparse.Namespace) -> int:
    # stream_memory measures the engine in-process (no RESP) and runs as its own script.
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        path = os.path.join(tmp, "run.json")
        done = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "stream_memory.py"),
                               "--entries", "20000" if args.quick else "1000000", "--json", path], cwd=ROOT)
        if done.returncode == 0:
            with open(path, encoding="utf-8") as f:
                write_json(json.load(f), os.path.join(args.out, "memory"), stamp)
    return done.returncode


def _readscale(args: argparse.Namespace) -> int:
    # Readers on the primary vs spread over two replicas, producers at full speed.
    from bench import readscale

    return readscale.main([*(["--quick"] if args.quick else []), "--out", os.path.join(args.out, "readscale")])


def _spark(args: argparse.Namespace) -> int:
    # the Spark data source (needs `make spark-deps`)
    from bench import spark_source

    return spark_source.main([*(["--quick"] if args.quick else []), "--out", os.path.join(args.out, "spark")])


def _spark_committed(args: argparse.Namespace) -> int:
    # the Spark data source's filter pushdown and committed reads (needs `make spark-deps`)
    from bench import spark_committed

    return spark_committed.main([*(["--quick"] if args.quick else []),
                                 "--out", os.path.join(args.out, "spark-committed")])


def _failover(args: argparse.Namespace) -> int:
    # redis-sentinel managing Rill nodes vs managing redis-server nodes (bench/failover.py).
    from bench import failover

    return failover.main([*(["--quick"] if args.quick else []), "--out", os.path.join(args.out, "failover")])


def _sentinels(args: argparse.Namespace) -> int:
    # rill sentinel vs redis-sentinel: failover time under SIGKILL/SIGSTOP, idle CPU and memory.
    from bench import sentinels

    return sentinels.main([*(["--quick"] if args.quick else []), "--out", os.path.join(args.out, "sentinels")])


def _redis8(args: argparse.Namespace) -> int:
    # XREADGROUP CLAIM vs the XAUTOCLAIM + XREADGROUP loop, XACKDEL vs XACK + XDEL.
    from bench import stream_redis8

    return stream_redis8.main([*(["--quick"] if args.quick else []), "--out", os.path.join(args.out, "redis8")])


def _security(args: argparse.Namespace) -> int:
    # XADD over TLS and as a restricted ACL user, against redis-server the same way.
    from bench import security

    return security.main([*(["--quick"] if args.quick else []), "-c", str(args.clients),
                          "--out", os.path.join(args.out, "security")])


def _safe_write(args: argparse.Namespace) -> int:
    # XADD + WAIT, replica lag and fenced mode against redis-server and Valkey (bench/safe_write.py).
    from bench import safe_write

    return safe_write.main([*(["--quick"] if args.quick else []), "--out", os.path.join(args.out, "safe-write")])


_SUITES = {"throughput": _throughput, "redis8": _redis8, "scaling": _scaling, "latency": _latency, "memory": _memory,
           "replication": _replication, "readscale": _readscale, "spark": _spark,
           "spark-committed": _spark_committed, "failover": _failover, "sentinels": _sentinels, "security": _security,
           "safe-write": _safe_write}


if __name__ == "__main__":
    sys.exit(main())
