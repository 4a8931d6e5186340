"""What TLS and ACLs cost, side by side with redis-server: XADD with redis-benchmark (50
clients, -P 1 and -P 16) against both servers in the same run,

* over TLS (`redis-benchmark --tls` to each server's `tls-port`, certificates of
  bench/tls_certs.py, no client certificates) and over plain TCP (the same servers' `port`),
  so each server's TLS cost is visible too;
* as the default user (no ACL check: Rill's fast path) and as a user restricted to
  `~orders:* +@stream` (the command bitmap and the key pattern checked on every XADD), over
  plain TCP, on the key `orders:bench`.

The rows are interleaved (plain, TLS, default, restricted for one pipeline depth, then the
next), redis-server then Rill within a row, and the whole plan runs `--rounds` times (3): a
row reports the median rate and the median CPU time per request of its rounds, so drift on a
shared machine spreads over all rows. The `plain` and `default` rows are the same
measurement taken twice: how far apart they are is the run's noise.
`python -m bench --suite security` or `python -m bench.security [--quick] [-n N] [--rounds R]`;
results in bench/results/security/ (latest.json + history.jsonl).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from bench.client import RespClient
from bench.procs import ROOT, BenchError, Server, free_port, install_exit_handlers, start_redis, start_rill
from bench.report import row_dict, table, write_json
from bench.throughput import PIPELINED_SCALE, RUN_TIMEOUT_S, Measurement, Row, parse_csv_rps
from bench.tls_certs import TlsFiles, make_tls_files, server_args

RESTRICTED = ("bench", "bench-pw")
CASES = ("plain", "tls", "default", "restricted")
LABELS = {"plain": "XADD (TCP)", "tls": "XADD (TLS)", "default": "XADD as default",
          "restricted": "XADD as ~orders:* +@stream"}
RESTRICTED_RULES = ("on", ">" + RESTRICTED[1], "~orders:*", "+@stream")
XADD = ("XADD", "orders:bench", "*", "field", "value")


def _benchmark(server: Server, port: int, requests: int, pipeline: int, clients: int, extra: list[str]) -> Measurement:
    args = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-c", str(clients), "-n", str(requests),
            "-P", str(pipeline), "--csv", *extra, *XADD]
    cpu_before = server.cpu_seconds()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BenchError(f"redis-benchmark on {server.kind} took over {RUN_TIMEOUT_S}s") from None
    cpu_after = server.cpu_seconds()
    if proc.returncode != 0 or "Error" in proc.stderr or not server.alive():
        raise BenchError(f"redis-benchmark on {server.kind} failed: {(proc.stderr or proc.stdout).strip()[:300]}")
    return Measurement(parse_csv_rps(proc.stdout), cpu_after - cpu_before, requests)


def _median(runs: list[Measurement]) -> Measurement:
    """The median rate and the median CPU time per request of a row's rounds."""
    rps = statistics.median(m.rps for m in runs)
    cpu = statistics.median(m.cpu_s for m in runs)
    return Measurement(rps, cpu, runs[0].requests)


def _case_args(case: str, files: TlsFiles) -> list[str]:
    if case == "tls":
        return ["--tls", "--cacert", files.ca]
    if case == "restricted":
        return ["--user", RESTRICTED[0], "-a", RESTRICTED[1]]
    return []


def run(args: argparse.Namespace) -> int:
    install_exit_handlers()
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    certs = tempfile.mkdtemp(prefix="bench-tls-")
    files = make_tls_files(certs)
    servers: dict[str, Server] = {}
    tls_ports: dict[str, int] = {}
    rows: list[Row] = []
    try:
        for kind in ("redis", "rill"):
            tls_ports[kind] = free_port()
            extra = server_args(files, tls_ports[kind])
            servers[kind] = start_redis(*extra) if kind == "redis" else start_rill(extra=extra)
            with RespClient(servers[kind].port) as client:
                client.check("ACL", "SETUSER", RESTRICTED[0], *RESTRICTED_RULES)
        print(f"redis-server port {servers['redis'].port} (TLS {tls_ports['redis']}), rill port {servers['rill'].port} "
              f"(TLS {tls_ports['rill']}); -c {args.clients} -n {args.requests}", file=sys.stderr, flush=True)
        samples: dict[tuple[str, int, str], list[Measurement]] = {}
        for round_no in range(args.rounds):
            for pipeline in args.pipeline_list:
                requests = args.requests * (PIPELINED_SCALE if pipeline > 1 else 1)
                for case in CASES:
                    for kind in ("redis", "rill"):
                        port = tls_ports[kind] if case == "tls" else servers[kind].port
                        with RespClient(servers[kind].port) as client:
                            client.check("DEL", "orders:bench")
                        m = _benchmark(servers[kind], port, requests, pipeline, args.clients, _case_args(case, files))
                        samples.setdefault((case, pipeline, kind), []).append(m)
                        print(f"  round {round_no + 1} xadd-{case:<10} -P {pipeline:<3} {kind:<5} {m.rps:>12,.0f} req/s  "
                              f"{m.cpu_us_per_req:8.2f} µs CPU/req", file=sys.stderr, flush=True)
        for pipeline in args.pipeline_list:
            requests = args.requests * (PIPELINED_SCALE if pipeline > 1 else 1)
            for case in CASES:
                medians = {kind: _median(samples[(case, pipeline, kind)]) for kind in ("redis", "rill")}
                rows.append(Row(f"xadd-{case}", LABELS[case], pipeline, requests, medians["redis"], medians["rill"]))
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    finally:
        for server in servers.values():
            server.stop()
        shutil.rmtree(certs, ignore_errors=True)
    document: dict[str, Any] = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"clients": args.clients, "requests": args.requests, "pipelines": args.pipeline_list, "rounds": args.rounds,
                   "pipelined_scale": PIPELINED_SCALE, "quick": args.quick,
                   "restricted_user": " ".join(RESTRICTED_RULES[2:]), "key": XADD[1]},
        "environment": _environment(),
        "rows": [row_dict(row) for row in rows],
        "derived": _derived(rows),
    }
    print(table(rows))
    for name, value in document["derived"].items():
        print(f"{name}: {value}")
    for path in write_json(document, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


def _derived(rows: list[Row]) -> dict[str, float | None]:
    """Within each server: TLS req/s over plain, restricted over default, per pipeline."""
    by = {(r.test, r.pipeline): r for r in rows}
    out: dict[str, float | None] = {}
    for pipeline in sorted({r.pipeline for r in rows}):
        for kind in ("redis", "rill"):
            for over, under, name in (("xadd-tls", "xadd-plain", "tls_over_plain"),
                                      ("xadd-restricted", "xadd-default", "restricted_over_default")):
                a, b = by.get((over, pipeline)), by.get((under, pipeline))
                ma = getattr(a, kind) if a else None
                mb = getattr(b, kind) if b else None
                out[f"{kind}_{name}_P{pipeline}"] = round(ma.rps / mb.rps, 3) if ma and mb and mb.rps else None
    return out


def _environment() -> dict[str, Any]:
    tool = subprocess.run(["redis-benchmark", "--version"], capture_output=True, text=True).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "redis_benchmark": tool,
        "rill_native": any(name.startswith("_native__mypyc.") for name in os.listdir(os.path.join(ROOT, "node"))),
    }


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.security", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="10,000 requests per -P 1 run unless -n is given")
    parser.add_argument("-n", "--requests", type=int, default=None, help="requests per -P 1 run (default 100000)")
    parser.add_argument("-c", "--clients", type=int, default=50)
    parser.add_argument("--pipelines", default="1,16")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the whole plan; rows report medians")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "security"))
    args = parser.parse_args(argv)
    if args.requests is None:
        args.requests = 10_000 if args.quick else 100_000
    if args.quick:
        args.rounds = 1
    args.pipeline_list = [int(p) for p in args.pipelines.split(",")]
    return args


def main(argv: list[str] | None = None) -> int:
    return run(parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
