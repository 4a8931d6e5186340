"""`python -m bench.replication`: replication costs, Rill side by side with redis-server and
its replicas (all on loopback, same run, same client tools):

* XADD throughput on the primary with 0, 1 and 2 replicas attached (redis-benchmark -c 50
  -P 1), with the time the replicas then needed to reach the primary's offset; and Rill with
  2 replicas again with repl-busy-batch-interval 0 and with repl-apply-slice-time 0, to show
  what that batching and that slicing buy; each
  figure is the median of `--rounds` rounds (3), each running every configuration once;
  with the CPU the primary, each replica and redis-benchmark itself spent per XADD, the cores
  they kept busy, and the host's steal during each run. All of them share this machine's
  cores, so the sum of their CPU per XADD bounds the throughput (the "ceiling");
* `XADD` then `WAIT 1 100` latency, p50/p99, one replica (both commands in one write, the
  latency is until both replies are in);
* replica lag at a paced 10,000 XADD/s: for each entry, the time a client blocked in XREAD on
  the replica saw it minus the time the writer got the primary's reply (p50/p99; negative
  when the replica is faster than the reply's trip back to the writer).

Results go to bench/results/replication/latest.json and a line of history.jsonl.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import Any

import hiredis

from bench.client import RespClient, encode
from bench.procs import ROOT, BenchError, Server, _launch, free_port, install_exit_handlers, steal_share
from bench.report import write_json
from bench.throughput import RUN_TIMEOUT_S, parse_csv_rps
from node.replication.loop_load import host_steal_ticks

KINDS = ("redis", "rill")
_CATCH_UP_TIMEOUT = 120.0


# -- clusters ---------------------------------------------------------------------------------

def _start(kind: str, replicaof: int | None, flags: tuple[str, ...] = ()) -> Server:
    port = free_port()
    workdir = tempfile.mkdtemp(prefix=f"bench-repl-{kind}-")
    log = ["--logfile", os.path.join(workdir, "server.log")]
    follow = ["--replicaof", "127.0.0.1", str(replicaof)] if replicaof is not None else []
    if kind == "redis":
        # Diskless sync without the default 5 s wait for more replicas: both start at once.
        args = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--repl-diskless-sync-delay", "0", "--dir", workdir, *log, *follow]
    else:
        args = [sys.executable, "-m", "node.main", "node", "--port", str(port), "--repl-port", str(free_port()),
                "--dir", workdir, *log, *follow, *flags]
    return _launch(kind, args, workdir, port, signal.SIGTERM)


def _info(port: int) -> dict[str, str]:
    with RespClient(port) as client:
        reply = client.call("INFO", "replication")
    fields: dict[str, str] = {}
    if isinstance(reply, bytes):
        for line in reply.decode().splitlines():
            name, sep, value = line.partition(":")
            if sep:
                fields[name] = value
    return fields


def _caught_up(primary: Server, replicas: list[Server]) -> bool:
    target = int(_info(primary.port)["master_repl_offset"])
    for replica in replicas:
        fields = _info(replica.port)
        if fields.get("master_link_status") != "up" or int(fields.get("slave_repl_offset", -1)) < target:
            return False
    return True


def _wait_caught_up(primary: Server, replicas: list[Server]) -> float:
    started = time.monotonic()
    while not _caught_up(primary, replicas):
        if time.monotonic() - started > _CATCH_UP_TIMEOUT:
            raise BenchError(f"{primary.kind} replicas did not catch up within {_CATCH_UP_TIMEOUT}s")
        time.sleep(0.01)
    return time.monotonic() - started


@dataclass
class Cluster:
    primary: Server
    replicas: list[Server]

    def stop(self) -> None:
        for server in [*self.replicas, self.primary]:
            server.stop()


def start_cluster(kind: str, replicas: int, flags: tuple[str, ...] = ()) -> Cluster:
    """A primary and `replicas` replicas; `flags` are extra Rill node options."""
    primary = _start(kind, None, flags)
    cluster = Cluster(primary, [])
    try:
        for _ in range(replicas):
            cluster.replicas.append(_start(kind, primary.port, flags))
        _wait_caught_up(primary, cluster.replicas)
        if replicas:
            # One write through the link before measuring: after its full sync redis-server
            # streams to a replica only once the replica's first REPLCONF ACK arrives (up to
            # a second later), although both already report the same offset. Measured
            # without this, redis-server's first second of lag was ~1 s.
            with RespClient(primary.port) as client:
                client.check("SET", "bench:link-warm-up", "1")
            _wait_caught_up(primary, cluster.replicas)
    except BaseException:
        cluster.stop()
        raise
    return cluster


# -- measurements ---------------------------------------------------------------------------

def _children_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def throughput(kind: str, replicas: int, requests: int, clients: int, flags: tuple[str, ...] = ()) -> dict[str, Any]:
    cluster = start_cluster(kind, replicas, flags)
    try:
        args = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(cluster.primary.port), "-c", str(clients),
                "-n", str(requests), "-P", "1", "--csv", "XADD", "benchstream", "*", "field", "value"]
        cpu_before = cluster.primary.cpu_seconds()
        replicas_before = [r.cpu_seconds() for r in cluster.replicas]
        # The client's CPU: redis-benchmark is the only child reaped in this window (the
        # servers are reaped when the cluster stops), so the children's rusage grows by its own.
        client_before = _children_cpu_seconds()
        host_before = host_steal_ticks()
        started = time.monotonic()
        proc = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        elapsed = time.monotonic() - started
        steal = steal_share(host_before, host_steal_ticks())
        client_cpu = _children_cpu_seconds() - client_before
        cpu = cluster.primary.cpu_seconds() - cpu_before
        replicas_during = sum(r.cpu_seconds() - b for r, b in zip(cluster.replicas, replicas_before))
        if proc.returncode != 0:
            raise BenchError(f"redis-benchmark failed on {kind}: {proc.stderr.strip() or proc.stdout.strip()}")
        rps = parse_csv_rps(proc.stdout)
        catch_up = _wait_caught_up(cluster.primary, cluster.replicas)
        # Each replica's CPU for the whole stream, its catch-up included: on one machine the
        # replicas' CPU is taken from the primary and the client, so it is the steadier
        # figure when the box is noisy.
        replicas_cpu = [r.cpu_seconds() - b for r, b in zip(cluster.replicas, replicas_before)]
    finally:
        cluster.stop()
    return {"rps": round(rps, 1), "primary_cpu_us_per_req": round(cpu * 1e6 / requests, 2),
            "replica_cpu_us_per_req": [round(c * 1e6 / requests, 2) for c in replicas_cpu],
            "client_cpu_us_per_req": round(client_cpu * 1e6 / requests, 2),
            # Cores the client, the primary and its replicas kept busy together while it ran.
            "cores_busy": round((cpu + replicas_during + client_cpu) / elapsed, 2),
            # The host's share of the run: this VM's CPUs given to other guests meanwhile.
            "steal_percent": round(100 * steal, 1),
            "replicas_caught_up_after_s": round(catch_up, 3)}


def _least_stolen_run(kind: str, replicas: int, args: argparse.Namespace, flags: tuple[str, ...]) -> dict[str, Any]:
    """One throughput run, run again (up to --attempts in all) while the host stole more than
    --max-steal % of this VM's CPU during it; the least disturbed attempt is kept. On a shared
    host a run with a third of its CPU stolen measures the neighbours, not the servers."""
    best: dict[str, Any] | None = None
    for attempt in range(1, args.attempts + 1):
        run = throughput(kind, replicas, args.requests, args.clients, flags)
        if best is None or run["steal_percent"] < best["steal_percent"]:
            best = run
        if run["steal_percent"] <= args.max_steal:
            break
        print(f"  {kind} with {replicas} replica(s): {run['steal_percent']} % stolen by the host, "
              f"{'again' if attempt < args.attempts else 'keeping the least disturbed attempt'}",
              file=sys.stderr, flush=True)
    assert best is not None
    best["attempts"] = attempt
    return best


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration over several rounds: each figure's median (the rounds' rps kept too).
    Medians of rounds interleaved with the other configurations: the host's speed drifts by a
    third within an hour here, and one 2-second run of each is at its mercy."""
    def med(values: list[float]) -> float:
        return round(statistics.median(values), 2)

    replicas = len(runs[0]["replica_cpu_us_per_req"])
    return {"rps": med([r["rps"] for r in runs]),
            "primary_cpu_us_per_req": med([r["primary_cpu_us_per_req"] for r in runs]),
            "replica_cpu_us_per_req": [med([r["replica_cpu_us_per_req"][i] for r in runs]) for i in range(replicas)],
            "client_cpu_us_per_req": med([r["client_cpu_us_per_req"] for r in runs]),
            "cores_busy": med([r["cores_busy"] for r in runs]),
            "steal_percent_rounds": [r["steal_percent"] for r in runs],
            "attempts_rounds": [r["attempts"] for r in runs],
            "replicas_caught_up_after_s": max(r["replicas_caught_up_after_s"] for r in runs),
            "rps_rounds": [r["rps"] for r in runs]}


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _Conn:
    """A blocking RESP2 connection for timed request/reply exchanges."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = hiredis.Reader()

    def send(self, *commands: tuple[Any, ...]) -> None:
        self.sock.sendall(b"".join(encode(c) for c in commands))

    def read(self) -> object:
        while True:
            reply = self.reader.gets()
            if reply is not False:
                if isinstance(reply, hiredis.ReplyError):
                    raise BenchError(f"server error: {reply}")
                return reply
            data = self.sock.recv(1 << 20)
            if not data:
                raise BenchError("connection closed")
            self.reader.feed(data)

    def close(self) -> None:
        self.sock.close()


def wait_latency(kind: str, samples: int) -> dict[str, Any]:
    cluster = start_cluster(kind, 1)
    try:
        conn = _Conn(cluster.primary.port)
        latencies: list[float] = []
        short = 0
        for i in range(samples + 100):
            started = time.perf_counter()
            conn.send(("XADD", "waitstream", "*", "n", i), ("WAIT", 1, 100))
            conn.read()
            acked = conn.read()
            took = time.perf_counter() - started
            if i >= 100:  # warm-up excluded
                latencies.append(took)
                short += acked != 1
        conn.close()
    finally:
        cluster.stop()
    return {"samples": samples, "p50_ms": round(_percentile(latencies, 0.5) * 1e3, 3),
            "p99_ms": round(_percentile(latencies, 0.99) * 1e3, 3), "timed_out": short}


def replica_lag(kind: str, rate: int, seconds: float) -> dict[str, Any]:
    cluster = start_cluster(kind, 1)
    acked: dict[bytes, float] = {}
    seen: dict[bytes, float] = {}
    total = int(rate * seconds)
    failure: list[BaseException] = []
    try:
        ready = threading.Event()

        def read() -> None:
            try:
                conn = _Conn(cluster.replicas[0].port)
                last: bytes = b"0-0"
                ready.set()
                while len(seen) < total:
                    conn.send(("XREAD", "COUNT", 2000, "BLOCK", 5000, "STREAMS", "lagstream", last))
                    reply = conn.read()
                    now = time.perf_counter()
                    if reply is None:
                        raise BenchError(f"the replica showed no entry for 5 s ({len(seen)}/{total} seen)")
                    assert isinstance(reply, list)
                    for entry_id, _ in reply[0][1]:
                        seen[entry_id] = now
                        last = entry_id
                conn.close()
            except BaseException as exc:
                failure.append(exc)
                ready.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        ready.wait(10)
        writer = _Conn(cluster.primary.port)
        batch = max(1, rate // 500)  # a batch every 2 ms
        interval = batch / rate
        begun = next_tick = time.perf_counter()
        written = 0
        while written < total and not failure:
            count = min(batch, total - written)
            writer.send(*[("XADD", "lagstream", "*", "n", written + i) for i in range(count)])
            for _ in range(count):
                entry_id = writer.read()
                assert isinstance(entry_id, bytes)
                acked[entry_id] = time.perf_counter()
            written += count
            next_tick += interval
            delay = next_tick - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        achieved = written / max(1e-9, time.perf_counter() - begun)
        writer.close()
        reader.join(30)
        if failure:
            raise BenchError(f"lag reader failed: {failure[0]}")
    finally:
        cluster.stop()
    lags = [seen[i] - acked[i] for i in acked if i in seen]
    return {"rate": rate, "achieved_rate": round(achieved), "entries": len(lags),
            "p50_ms": round(_percentile(lags, 0.5) * 1e3, 3), "p99_ms": round(_percentile(lags, 0.99) * 1e3, 3),
            "max_ms": round(max(lags) * 1e3, 3)}


# Rows 2* and 2†: Rill with two replicas and one of its replication tunings off, to show
# what each buys (docs/replication.md, "Where the CPU goes").
_VARIANT_FLAGS: dict[str, tuple[str, ...]] = {
    "2-no-busy-batching": ("--repl-busy-batch-interval", "0"),
    "2-no-apply-slicing": ("--repl-apply-slice-time", "0"),
}
_VARIANTS = (
    ("2-no-busy-batching", "2*", "repl-busy-batch-interval 0 (no extra batching while saturated)"),
    ("2-no-apply-slicing", "2†", "repl-apply-slice-time 0 (replicas apply each batch in one go)"),
)


# -- report ---------------------------------------------------------------------------------

def _table(doc: dict[str, Any]) -> str:
    lines = ["XADD throughput on the primary (-c {c} -P 1), requests/s, median of {r} interleaved round(s):".format(
        c=doc["params"]["clients"], r=doc["params"]["throughput_rounds"])]
    lines.append(f"  {'replicas':<9}{'redis':>10}{'rill':>10}{'rill/redis':>12}{'rill/rill(0)':>14}"
                 f"{'redis catch-up s':>18}{'rill catch-up s':>17}")
    base = doc["throughput"]["0"]["rill"]["rps"]
    for n in ("0", "1", "2"):
        row = doc["throughput"][n]
        r, x = row["redis"], row["rill"]
        lines.append(f"  {n:<9}{r['rps']:>10,.0f}{x['rps']:>10,.0f}{x['rps'] / r['rps']:>12.2f}{x['rps'] / base:>14.2f}"
                     f"{r['replicas_caught_up_after_s']:>18.3f}{x['replicas_caught_up_after_s']:>17.3f}")
    for key, label, meaning in _VARIANTS:
        off = doc["throughput"].get(key)
        if off is None:
            continue
        x = off["rill"]
        lines.append(f"  {label:<9}{'':>10}{x['rps']:>10,.0f}"
                     f"{x['rps'] / doc['throughput']['2']['redis']['rps']:>12.2f}{x['rps'] / base:>14.2f}"
                     f"{'':>18}{x['replicas_caught_up_after_s']:>17.3f}")
        lines.append(f"  {label} = Rill with {meaning}")
    if doc["params"]["throughput_rounds"] > 1:
        # The ratios round by round: the medians' ratio above hides how far the host drifted.
        lines.append("  each round, n replicas / none:")
        for kind in KINDS:
            alone = doc["throughput"]["0"][kind]["rps_rounds"]
            cells = [f"{n}: " + " ".join(f"{x / a:.2f}" for x, a in zip(doc["throughput"][n][kind]["rps_rounds"], alone))
                     for n in ("1", "2")]
            lines.append(f"    {kind:<6}" + "   ".join(cells))
    kept = [m for row in doc["throughput"].values() for m in row.values()]
    steal = [v for m in kept for v in m["steal_percent_rounds"]]
    repeats = sum(a - 1 for m in kept for a in m["attempts_rounds"])
    lines.append(f"  host steal during the kept runs (this VM's CPU given to other guests): {min(steal):.1f}-{max(steal):.1f} %;"
                 f" {repeats} run(s) repeated for over {doc['params']['max_steal_percent']} %")
    cores = doc["environment"]["cpus"]
    lines.append(f"CPU µs per XADD: primary + each replica + the client (= total); cores busy of {cores};")
    lines.append(f"  the ceiling is what {cores} fully busy cores allow at that total, and its ratio to the row-0 rps:")
    for n in ("0", "1", "2"):
        for kind in KINDS:
            m = doc["throughput"][n][kind]
            parts = [m["primary_cpu_us_per_req"], *m["replica_cpu_us_per_req"], m["client_cpu_us_per_req"]]
            ceiling = cores * 1e6 / sum(parts)
            lines.append(f"  {n} {kind:<6}{' + '.join(f'{p:.1f}' for p in parts):<26} (= {sum(parts):5.1f})"
                         f"  busy {m['cores_busy']:.2f}  ceiling {ceiling:>7,.0f}/s"
                         f" = {ceiling / doc['throughput']['0'][kind]['rps']:.2f}x")
    w = doc["wait"]
    lines.append("XADD + WAIT 1 100, one replica, ms:")
    for kind in KINDS:
        lines.append(f"  {kind:<6} p50 {w[kind]['p50_ms']:.3f}  p99 {w[kind]['p99_ms']:.3f}  (timed out: {w[kind]['timed_out']})")
    lag = doc["lag"]
    lines.append(f"Replica lag at {doc['params']['lag_rate']:,} XADD/s (seen on replica - acked on primary), ms:")
    for kind in KINDS:
        lines.append(f"  {kind:<6} p50 {lag[kind]['p50_ms']:.3f}  p99 {lag[kind]['p99_ms']:.3f}  max {lag[kind]['max_ms']:.3f}"
                     f"  (achieved {lag[kind]['achieved_rate']:,}/s)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replication", description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", "--requests", type=int, default=100_000, help="XADD requests per throughput run")
    parser.add_argument("-c", "--clients", type=int, default=50, help="redis-benchmark connections (default 50)")
    parser.add_argument("--wait-samples", type=int, default=3000, help="XADD+WAIT round trips (default 3000)")
    parser.add_argument("--lag-rate", type=int, default=10_000, help="paced XADD/s for the lag test")
    parser.add_argument("--lag-seconds", type=float, default=5.0, help="duration of the lag test")
    parser.add_argument("--rounds", type=int, default=3,
                        help="throughput rounds, each running every configuration once; medians are reported (default 3)")
    parser.add_argument("--max-steal", type=float, default=5.0,
                        help="a throughput run during which the host stole more %% of the CPU is run again (default 5)")
    parser.add_argument("--attempts", type=int, default=3,
                        help="at most this many attempts per throughput run; the least disturbed is kept (default 3)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "replication"))
    args = parser.parse_args(argv)
    if args.attempts < 1 or args.rounds < 1:
        parser.error("--attempts and --rounds must be at least 1")
    install_exit_handlers()
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    doc: dict[str, Any] = {
        "timestamp": stamp,
        "params": {"clients": args.clients, "requests": args.requests, "pipeline": 1,
                   "wait_samples": args.wait_samples, "lag_rate": args.lag_rate, "lag_seconds": args.lag_seconds,
                   "throughput_rounds": args.rounds, "max_steal_percent": args.max_steal,
                   "attempts": args.attempts},
        "environment": {"cpus": os.cpu_count(), "note": "primary and replicas share the machine's cores"},
        "throughput": {}, "wait": {}, "lag": {},
    }
    try:
        # Every configuration once per round, rounds one after the other; the medians are kept.
        configs = [(str(n), kind, n, ()) for n in (0, 1, 2) for kind in KINDS]
        configs += [(key, "rill", 2, flags) for key, flags in _VARIANT_FLAGS.items()]
        runs: dict[tuple[str, str], list[dict[str, Any]]] = {(row, kind): [] for row, kind, _, _ in configs}
        for round_no in range(1, args.rounds + 1):
            for row, kind, n, flags in configs:
                run = _least_stolen_run(kind, n, args, flags)
                runs[row, kind].append(run)
                print(f"  round {round_no}, throughput {row} ({n} replica(s)), {kind}: {run['rps']:,.0f}/s"
                      f" (steal {run['steal_percent']} %, attempt(s) {run['attempts']})", file=sys.stderr, flush=True)
        for (row, kind), measured in runs.items():
            doc["throughput"].setdefault(row, {})[kind] = _median_run(measured)
        for kind in KINDS:
            doc["wait"][kind] = wait_latency(kind, args.wait_samples)
            print(f"  XADD+WAIT {kind}: {doc['wait'][kind]}", file=sys.stderr, flush=True)
        for kind in KINDS:
            doc["lag"][kind] = replica_lag(kind, args.lag_rate, args.lag_seconds)
            print(f"  lag {kind}: {doc['lag'][kind]}", file=sys.stderr, flush=True)
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    doc["duration_s"] = round(time.time() - started, 1)
    print(_table(doc))
    for path in write_json(doc, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
