"""`python -m bench.safe_write`: the price of a safe write (issue 38). Rill, redis-server 7.0
and Valkey 8.1, each a primary with two replicas on loopback, side by side in one run, in
three groups of settings:

* `default`: redis-server and Valkey without persistence, Rill in its default mode;
* `aof-everysec`: redis-server and Valkey with `appendonly yes` (`appendfsync everysec`),
  Rill in fenced mode (which needs the AOF; `appendfsync everysec`, replica set of 3, 1 s lease);
* `aof-always`: the same with `appendfsync always` on every node.

Valkey runs with `io-threads 1` (`--valkey-io-threads`): on this 2-core machine, where three
servers and the clients share the cores, `io-threads 2` made its primary spend 0.5 ms of CPU
per write and run at 0.1-0.2x of redis-server (its I/O thread polls for work on a core the
others need), so a user of such a machine would leave it off. Each cluster measures, in this order:

* (`default` group) `XADD` with redis-benchmark `-c 50 -P 16` on the primary alone, then with
  its two replicas attached;
* one client (raw RESP, both commands in one write): `XADD` + `WAIT 1` and `XADD` + `WAIT 2`;
  `WAIT 1` alone (sent once the XADD's reply is in, timed to its reply); and `XADD` then
  `WAIT 1` as one redis-py client sees it (two round trips);
* 50 clients (one driver process, uvloop), each looping on `XADD` + `WAIT 1`, then `WAIT 2`:
  latency, writes/s, and for `WAIT 2` the CPU the primary, each replica and the client spent
  per write;
* replica lag at a paced 10,000 XADD/s (seen by `XREAD BLOCK` on a replica − acked on the
  primary).

Every configuration runs once per round, rounds interleaved, the order rotated each round, so
the load of this shared machine falls on all alike; latencies are percentiles of the samples
of all rounds, rates the median of the rounds. Each figure is given as the ratio against
redis-server with the same persistence in the same run (Valkey's too); the issue's targets are
marked met or not in latest.json. The host's steal and the CPU other processes took (other
engineers' tests) are recorded per cluster run. `--profile DIR` instead profiles a Rill
primary and one replica under the one-client `XADD` + `WAIT 1` loop with py-spy.

Results: bench/results/safe-write/latest.json and a line of history.jsonl.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from bench.client import ERRORS, AsyncConnection, RespClient, connect, encode
from bench.procs import ROOT, BenchError, busy_cpu_seconds, install_exit_handlers, steal_share
from bench.repl_cluster import (
    Cluster,
    children_cpu_seconds,
    lag_samples,
    percentile,
    redis_benchmark,
    start_cluster,
    timed_round_trips,
    wait_caught_up,
    xadd_wait_samples,
)
from bench.report import write_json
from node.replication.loop_load import host_steal_ticks

KINDS = ("redis", "valkey", "rill")
GROUPS = ("default", "aof-everysec", "aof-always")
REPLICAS = 2
WAIT_TIMEOUT_MS = 1000
FENCED = ("--fenced-mode", "yes", "--fenced-replica-set-size", str(REPLICAS + 1), "--fenced-lease-milliseconds", "1000")
_AOF = {"default": (), "aof-everysec": ("--appendonly", "yes", "--appendfsync", "everysec"),
        "aof-always": ("--appendonly", "yes", "--appendfsync", "always")}


@dataclass(frozen=True)
class Config:
    group: str
    kind: str
    flags: tuple[str, ...]
    settings: str

    @property
    def name(self) -> str:
        return self.kind if self.group == "default" else f"{self.kind}-{self.group}"

    @property
    def fenced(self) -> bool:
        return "--fenced-mode" in self.flags


def config(group: str, kind: str, valkey_io_threads: int) -> Config:
    aof = _AOF[group]
    persistence = "no persistence" if not aof else f"appendonly yes, appendfsync {aof[-1]}"
    if kind == "rill":
        if group == "default":
            return Config(group, kind, (), "default mode, no persistence")
        return Config(group, kind, (*FENCED, *aof), f"fenced mode (replica set 3, lease 1000 ms), {persistence}")
    if kind == "valkey":
        return Config(group, kind, ("--io-threads", str(valkey_io_threads), *aof),
                      f"io-threads {valkey_io_threads}, {persistence}")
    return Config(group, kind, aof, persistence)


# -- one client -----------------------------------------------------------------------------

def wait_alone_samples(port: int, samples: int, replicas: int, warmup: int = 100) -> tuple[list[float], int]:
    """`XADD`, its reply read, then `WAIT replicas`: the seconds from sending the WAIT to its
    reply (the replicas' acknowledgement of a write the primary already answered)."""
    conn = RespClient(port)

    def round_trip(i: int) -> tuple[float, object]:
        conn.send(("XADD", "waitalone", "*", "n", i))
        conn.read()
        started = time.perf_counter()
        conn.send(("WAIT", replicas, WAIT_TIMEOUT_MS))
        acked = conn.read()
        return time.perf_counter() - started, acked

    try:
        return timed_round_trips(samples, warmup, replicas, round_trip)
    finally:
        conn.close()


def redis_py_samples(port: int, samples: int, replicas: int, warmup: int = 100) -> tuple[list[float], int]:
    """`XADD` then `WAIT replicas` with redis-py's methods, one round trip each, timed from
    the first call to the second's return: what an application using redis-py sees."""
    import redis

    client = redis.Redis(port=port)

    def round_trip(i: int) -> tuple[float, object]:
        started = time.perf_counter()
        client.xadd("redispy", {"n": i})
        acked = client.wait(replicas, WAIT_TIMEOUT_MS)
        return time.perf_counter() - started, acked

    try:
        return timed_round_trips(samples, warmup, replicas, round_trip)
    finally:
        client.close()


# -- the 50-client driver (a process of its own: its CPU is the client's) --------------------

class WaitingWriter:
    """One connection looping on `XADD` + `WAIT n` (one write); records each pair's latency,
    from the write to the WAIT's reply, when that reply arrives inside the window."""

    def __init__(self, replicas: int, latencies_us: list[int]) -> None:
        self.request = encode(("XADD", "safewrite", "*", "n", "1")) + encode(("WAIT", replicas, WAIT_TIMEOUT_MS))
        self.replicas = replicas
        self.begin_ns = self.end_ns = 0
        self.latencies_us = latencies_us
        self.conn = AsyncConnection(self.on_reply)
        self.replies = 0
        self.sent_ns = 0
        self.short = 0
        self.running = True

    def start(self) -> None:
        self.sent_ns = time.time_ns()
        self.conn.write(self.request)

    def on_reply(self, reply: object, now: int) -> None:
        self.replies += 1
        if self.replies % 2:  # the XADD's reply; the WAIT's follows
            return
        if self.begin_ns <= now < self.end_ns:
            self.latencies_us.append((now - self.sent_ns) // 1000)
            self.short += reply != self.replicas
        if self.running:
            self.start()


async def _drive(args: argparse.Namespace) -> dict[str, Any]:
    latencies: list[int] = []
    writers = [WaitingWriter(args.replicas, latencies) for _ in range(args.clients)]
    for writer in writers:
        await connect(writer.conn, args.port)
    # The window starts once every client is connected; the orchestrator reads it to measure
    # the servers' CPU over the same interval.
    begin = time.time_ns() + int(args.warmup * 1e9)
    end = begin + int(args.seconds * 1e9)
    print(json.dumps({"begin_ns": begin, "end_ns": end}), flush=True)
    for writer in writers:
        writer.begin_ns, writer.end_ns = begin, end
        writer.start()
    cpu_before = None
    while time.time_ns() < end:
        if cpu_before is None and time.time_ns() >= begin:
            usage = resource.getrusage(resource.RUSAGE_SELF)
            cpu_before = usage.ru_utime + usage.ru_stime
        await asyncio.sleep(0.005)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = usage.ru_utime + usage.ru_stime - (cpu_before or 0.0)
    for writer in writers:
        writer.running = False
        if writer.conn.lost:
            ERRORS.append("a writer lost its connection")
    return {"errors": ERRORS[:5], "client_cpu_s": round(cpu, 4), "latencies_us": latencies,
            "timed_out": sum(w.short for w in writers)}


def driver_main(args: argparse.Namespace) -> int:
    import uvloop

    result = uvloop.run(_drive(args))
    # To a file: through the stdout pipe, whose reader is busy measuring, the line came out cut.
    with open(args.result, "w", encoding="utf-8") as f:
        json.dump(result, f)
    return 0


def clients_run(cluster: Cluster, replicas: int, args: argparse.Namespace) -> dict[str, Any]:
    """`args.clients` connections each looping on XADD + WAIT `replicas` for `args.seconds`:
    writes/s, latencies, and the CPU per write of every node and of the driver."""
    fd, result = tempfile.mkstemp(prefix="bench-safe-write-", suffix=".json")
    os.close(fd)
    cmd = [sys.executable, "-m", "bench.safe_write", "--driver", "--port", str(cluster.primary.port),
           "--clients", str(args.clients), "--wait", str(replicas), "--warmup", str(args.warmup),
           "--seconds", str(args.seconds), "--result", result]
    driver = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert driver.stdout is not None
        first = driver.stdout.readline()  # the window, once the clients are connected
        if not first:
            raise BenchError(f"the driver against {cluster.primary.kind} failed: {driver.communicate()[1][-2000:]}")
        window = json.loads(first)
        _sleep_until(window["begin_ns"])
        cpu_before = [n.cpu_seconds() for n in cluster.nodes]
        _sleep_until(window["end_ns"])
        cpu = [n.cpu_seconds() - b for n, b in zip(cluster.nodes, cpu_before)]
        _, stderr = driver.communicate(timeout=60)
        with open(result, encoding="utf-8") as f:
            out = json.load(f) if driver.returncode == 0 else {}
    except subprocess.TimeoutExpired:
        raise BenchError(f"the driver against {cluster.primary.kind} did not finish") from None
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.communicate()
        os.unlink(result)
    if driver.returncode != 0:
        raise BenchError(f"the driver against {cluster.primary.kind} failed: {stderr.strip()[-2000:]}")
    if out["errors"]:
        raise BenchError(f"{cluster.primary.kind} replied errors to the driver: {out['errors']}")
    writes = len(out["latencies_us"])
    if writes == 0:
        raise BenchError(f"no XADD + WAIT {replicas} completed on {cluster.primary.kind} in {args.seconds} s")
    return {"latencies_ms": [v / 1e3 for v in out["latencies_us"]], "timed_out": out["timed_out"],
            "rate": writes / args.seconds,
            "cpu_us_per_write": {"primary": cpu[0] * 1e6 / writes, "replicas": [c * 1e6 / writes for c in cpu[1:]],
                                 "client": out["client_cpu_s"] * 1e6 / writes}}


def _sleep_until(ns: int) -> None:
    delay = (ns - time.time_ns()) / 1e9
    if delay > 0:
        time.sleep(delay)


# -- one configuration, once ---------------------------------------------------------------

@contextmanager
def _load_meter() -> Iterator[dict[str, float]]:
    """The host's steal and the CPU other processes of this machine took (percent of one
    core) while the block ran: all CPU but ours (this process, its reaped children, the
    servers as `ours` reports them before the block ends)."""
    out: dict[str, float] = {"ours_s": 0.0}
    steal_before, busy_before = host_steal_ticks(), busy_cpu_seconds()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    self_before = usage.ru_utime + usage.ru_stime + children_cpu_seconds()
    started = time.monotonic()
    yield out
    elapsed = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    ours = usage.ru_utime + usage.ru_stime + children_cpu_seconds() - self_before + out["ours_s"]
    out["steal_percent"] = round(100 * steal_share(steal_before, host_steal_ticks()), 1)
    out["others_cpu_percent"] = round(max(0.0, 100 * (busy_cpu_seconds() - busy_before - ours) / elapsed), 1)
    del out["ours_s"]


def wait_leased(cluster: Cluster, timeout: float = 20.0) -> None:
    """Until a fenced primary holds its lease (it acknowledges no write before)."""
    from bench.repl_cluster import info

    deadline = time.monotonic() + timeout
    while int(info(cluster.primary.port).get("lease_remaining_ms", "0")) <= 0:
        if time.monotonic() > deadline:
            raise BenchError(f"the fenced primary got no lease within {timeout} s")
        time.sleep(0.02)


def run_config(cfg: Config, args: argparse.Namespace) -> dict[str, Any]:
    """Every measurement of one configuration on a fresh cluster."""
    runs: dict[str, Any] = {}
    with _load_meter() as load:
        cluster = start_cluster(cfg.kind, 0, cfg.flags)
        try:
            if cfg.group == "default":
                runs["xadd_p16_alone"] = redis_benchmark(cluster, args.p16_requests, args.clients, 16)
                with RespClient(cluster.primary.port) as client:
                    client.check("DEL", "benchstream")
            cluster.add_replicas(REPLICAS, cfg.flags)
            if cfg.fenced:
                wait_leased(cluster)
            if cfg.group == "default":
                runs["xadd_p16_two_replicas"] = redis_benchmark(cluster, args.p16_requests, args.clients, 16)
                with RespClient(cluster.primary.port) as client:
                    client.check("DEL", "benchstream")
                wait_caught_up(cluster.primary, cluster.replicas)
            port = cluster.primary.port
            runs["xadd_wait1_1c"] = xadd_wait_samples(port, args.samples, 1, timeout_ms=WAIT_TIMEOUT_MS)
            runs["xadd_wait2_1c"] = xadd_wait_samples(port, args.samples, 2, timeout_ms=WAIT_TIMEOUT_MS)
            runs["wait1_alone_1c"] = wait_alone_samples(port, args.samples, 1)
            runs["redispy_xadd_wait1_1c"] = redis_py_samples(port, args.samples, 1)
            runs["xadd_wait1_50c"] = clients_run(cluster, 1, args)
            runs["xadd_wait2_50c"] = clients_run(cluster, 2, args)
            runs["lag_10k"] = lag_samples(cluster, args.lag_rate, args.lag_seconds)
            if any(not n.alive() for n in cluster.nodes):
                raise BenchError(f"a {cfg.name} node exited during the run")
            load["ours_s"] = sum(n.cpu_seconds() for n in cluster.nodes)  # since each started
        finally:
            cluster.stop()
    runs["load"] = load
    return runs


# -- figures over the rounds ------------------------------------------------------------------

LATENCY_FIGURES = ("xadd_wait1_1c", "xadd_wait2_1c", "wait1_alone_1c", "redispy_xadd_wait1_1c",
                   "xadd_wait1_50c", "xadd_wait2_50c", "lag_10k")
FIGURE_TEXT = {
    "xadd_wait1_1c": "XADD + WAIT 1, one client, one write",
    "xadd_wait2_1c": "XADD + WAIT 2, one client, one write",
    "wait1_alone_1c": "WAIT 1 alone, after the XADD's reply",
    "redispy_xadd_wait1_1c": "XADD then WAIT 1, one redis-py client",
    "xadd_wait1_50c": "XADD + WAIT 1, 50 clients",
    "xadd_wait2_50c": "XADD + WAIT 2, 50 clients",
    "lag_10k": "replica lag at 10,000 XADD/s",
    "xadd_p16_alone": "XADD -c 50 -P 16, no replica",
    "xadd_p16_two_replicas": "XADD -c 50 -P 16, two replicas",
}


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One configuration's rounds: latencies pooled (p50/p99 over all samples, each round's p50
    kept), rates the median of the rounds, CPU per write the median."""
    def med(values: list[float]) -> float:
        return round(statistics.median(values), 3)

    out: dict[str, Any] = {}
    for figure in LATENCY_FIGURES:
        pooled: list[float] = []
        p50s: list[float] = []
        short = 0
        for run in runs:
            if figure.endswith("_50c"):
                samples, short = run[figure]["latencies_ms"], short + run[figure]["timed_out"]
            elif figure == "lag_10k":
                samples = [s * 1e3 for s in run[figure][0]]
            else:
                samples, short = [s * 1e3 for s in run[figure][0]], short + run[figure][1]
            pooled += samples
            p50s.append(round(percentile(samples, 0.5), 3))
        row: dict[str, Any] = {"p50_ms": round(percentile(pooled, 0.5), 3), "p99_ms": round(percentile(pooled, 0.99), 3),
                               "samples": len(pooled), "p50_ms_rounds": p50s}
        if figure != "lag_10k":
            row["timed_out"] = short
        else:
            row["achieved_rate"] = round(statistics.median(run[figure][1] for run in runs))
        if figure.endswith("_50c"):
            row["rate"] = round(statistics.median(run[figure]["rate"] for run in runs), 1)
            row["rate_rounds"] = [round(run[figure]["rate"], 1) for run in runs]
            cpu = [run[figure]["cpu_us_per_write"] for run in runs]
            row["cpu_us_per_write"] = {"primary": med([c["primary"] for c in cpu]),
                                       "replicas": [med([c["replicas"][i] for c in cpu]) for i in range(REPLICAS)],
                                       "client": med([c["client"] for c in cpu])}
        out[figure] = row
    for figure in ("xadd_p16_alone", "xadd_p16_two_replicas"):
        if figure in runs[0]:
            measured = [run[figure] for run in runs]
            out[figure] = {"rps": med([m["rps"] for m in measured]), "rps_rounds": [m["rps"] for m in measured],
                           "cpu_us_per_write": {
                               "primary": med([m["primary_cpu_us_per_req"] for m in measured]),
                               "replicas": [med([m["replica_cpu_us_per_req"][i] for m in measured])
                                            for i in range(len(measured[0]["replica_cpu_us_per_req"]))],
                               "client": med([m["client_cpu_us_per_req"] for m in measured])},
                           "steal_percent_rounds": [m["steal_percent"] for m in measured]}
    out["load_rounds"] = [run["load"] for run in runs]
    return out


def headline(figure: str) -> str:
    """The figure a ratio compares: the rate for throughput figures, the p50 for latencies."""
    if figure.startswith("xadd_p16"):
        return "rps"
    return "rate" if figure == "xadd_wait2_50c" else "p50_ms"


def cpu_total(row: dict[str, Any]) -> float:
    cpu = row["cpu_us_per_write"]
    return float(cpu["primary"] + sum(cpu["replicas"]) + cpu["client"])


def ratios(results: dict[str, dict[str, Any]], groups: list[str]) -> dict[str, dict[str, float | None]]:
    """Each configuration's figures over redis-server's with the same persistence: p50 and p99
    of the latencies, the rates, and the CPU per write of the throughput runs."""
    out: dict[str, dict[str, float | None]] = {}
    for group in groups:
        base = results.get(Config(group, "redis", (), "").name)
        if base is None:
            continue
        for kind in KINDS[1:]:
            name = Config(group, kind, (), "").name
            if name not in results:
                continue
            mine = results[name]
            row: dict[str, float | None] = {}
            for figure, measured in mine.items():
                if figure == "load_rounds" or figure not in base:
                    continue
                metrics = ("rps",) if figure.startswith("xadd_p16") else ("p50_ms", "p99_ms")
                if figure.endswith("_50c"):
                    metrics += ("rate",)
                for metric in metrics:
                    row[f"{figure}.{metric}"] = _ratio(measured[metric], base[figure][metric])
                if "cpu_us_per_write" in measured:
                    row[f"{figure}.cpu_us_per_write"] = _ratio(cpu_total(measured), cpu_total(base[figure]))
            out[name] = row
    return out


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 3) if b > 0 else None


@dataclass(frozen=True)
class Target:
    """One of issue 38's targets: `config`'s figure over redis-server's (same persistence)."""

    config: str
    key: str  # "<figure>.<metric>" in ratios()
    op: str  # "<=" or ">="
    bound: float
    text: str


TARGETS = (
    Target("rill", "wait1_alone_1c.p50_ms", "<=", 2.0, "WAIT 1 p50 ≤ 2× redis-server"),
    Target("rill", "redispy_xadd_wait1_1c.p50_ms", "<=", 1.5, "XADD + WAIT 1 (redis-py) p50 ≤ 1.5×"),
    Target("rill", "lag_10k.p50_ms", "<=", 1.5, "replica lag p50 at 10,000 XADD/s ≤ 1.5×"),
    Target("rill", "xadd_wait2_50c.rate", ">=", 0.7, "50 clients XADD + WAIT 2, default mode ≥ 0.7×"),
    Target("rill-aof-everysec", "xadd_wait2_50c.rate", ">=", 0.6,
           "50 clients XADD + WAIT 2, fenced mode (everysec) ≥ 0.6× of redis-server with the AOF"),
    Target("rill-aof-always", "xadd_wait2_50c.rate", ">=", 0.6,
           "50 clients XADD + WAIT 2, fenced mode (always) ≥ 0.6× of redis-server with the AOF"),
    Target("rill", "xadd_p16_alone.rps", ">=", 0.7, "XADD -P 16, no replica ≥ 0.7×"),
    Target("rill", "xadd_p16_two_replicas.rps", ">=", 0.65, "XADD -P 16, two replicas ≥ 0.65×"),
)


def judge(ratio_table: dict[str, dict[str, float | None]],
          results: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Each target with the ratio measured, whether it is met (None: not measured), and the
    ratio round by round (each round's figure over redis-server's of the same round): how far
    the machine's load moved it."""
    out = []
    for target in TARGETS:
        ratio = ratio_table.get(target.config, {}).get(target.key)
        met = None if ratio is None else (ratio <= target.bound if target.op == "<=" else ratio >= target.bound)
        verdict: dict[str, Any] = {"target": target.text, "config": target.config, "figure": target.key,
                                   "bound": f"{target.op} {target.bound}", "ratio": ratio, "met": met}
        base_name = "redis" + target.config.removeprefix("rill")  # the same group's redis-server
        if results is not None and target.config in results and base_name in results:
            figure, _, metric = target.key.partition(".")
            mine, base = results[target.config][figure], results[base_name][figure]
            verdict["ratio_rounds"] = [_ratio(a, b) for a, b in zip(mine[f"{metric}_rounds"], base[f"{metric}_rounds"])]
            # Whether every round alone gives the same verdict: if not, the load decided it.
            verdict["rounds_agree"] = met is not None and all(
                r is not None and (r <= target.bound if target.op == "<=" else r >= target.bound) == met
                for r in verdict["ratio_rounds"])
        out.append(verdict)
    return out


# -- report -----------------------------------------------------------------------------------

def _cell(row: dict[str, Any] | None, figure: str, ratio: float | None) -> str:
    if row is None or figure not in row:
        return ""
    m = row[figure]
    if figure.startswith("xadd_p16"):
        text = f"{m['rps']:,.0f}/s"
    elif figure == "xadd_wait2_50c":
        text = f"{m['rate']:,.0f}/s {m['p50_ms']:.2f}/{m['p99_ms']:.2f}"
    else:
        text = f"{m['p50_ms']:.3f}/{m['p99_ms']:.2f}"
    return text + (f" ({ratio:.2f}×)" if ratio is not None else "")


def table(doc: dict[str, Any]) -> str:
    results, rts = doc["results"], doc["ratios"]
    p = doc["params"]
    lines = [f"The price of a safe write: primary + {REPLICAS} replicas each; {p['rounds']} interleaved round(s); "
             "latencies p50/p99 ms, rates writes/s; (×) = over redis-server with the same persistence"]
    for group in doc["params"]["groups"]:
        names = [n for n in (Config(group, kind, (), "").name for kind in KINDS) if n in doc["configs"]]
        lines.append(f"[{group}] " + "; ".join(f"{n}: {doc['configs'][n]}" for n in names))
        width = 30
        lines.append(f"  {'':<38}" + "".join(f"{n:<{width}}" for n in names))
        for figure in FIGURE_TEXT:
            cells = [_cell(results.get(n), figure, rts.get(n, {}).get(f"{figure}.{headline(figure)}")) for n in names]
            if any(cells):
                lines.append(f"  {FIGURE_TEXT[figure]:<38}" + "".join(f"{c:<{width}}" for c in cells))
        cells = []
        for n in names:
            row = results.get(n, {}).get("xadd_wait2_50c")
            if row is None:
                cells.append("")
                continue
            c = row["cpu_us_per_write"]
            ratio = rts.get(n, {}).get("xadd_wait2_50c.cpu_us_per_write")
            cells.append(f"{c['primary']:.0f}+{'+'.join(f'{r:.0f}' for r in c['replicas'])}+{c['client']:.0f}"
                         + (f" ({ratio:.2f}×)" if ratio is not None else ""))
        lines.append(f"  {'CPU µs/write (WAIT 2, 50c): P+R1+R2+C':<38}" + "".join(f"{c:<{width}}" for c in cells))
    lines.append("Targets (issue 38), the ratio and each round's (? = the rounds disagree: the load decided):")
    for t in doc["targets"]:
        state = "not measured" if t["met"] is None else ("met" if t["met"] else "NOT met")
        if t["met"] is not None and not t.get("rounds_agree", True):
            state += "?"  # the rounds disagree
        ratio = "-" if t["ratio"] is None else f"{t['ratio']:.2f}"
        rounds = " ".join("-" if r is None else f"{r:.2f}" for r in t.get("ratio_rounds", []))
        lines.append(f"  {t['target']:<82} {ratio:>6}  {state:<12} rounds: {rounds}")
    env = doc["environment"]
    steal = [r["steal_percent"] for row in results.values() for r in row["load_rounds"]]
    others = [r["others_cpu_percent"] for row in results.values() for r in row["load_rounds"]]
    lines.append(f"Load: host steal {min(steal):.1f}-{max(steal):.1f} % per cluster run, other processes "
                 f"{min(others):.0f}-{max(others):.0f} % of a core; load average {env['loadavg_start'][0]:.2f} at start, "
                 f"{env['loadavg_end'][0]:.2f} at end; {env['cpus']} CPUs for everything")
    return "\n".join(lines)


# -- profile ----------------------------------------------------------------------------------

def profile(args: argparse.Namespace) -> int:
    """The Rill primary and its first replica while one client loops on XADD + WAIT 1, profiled
    twice: py-spy (the Python functions; the compiled modules' functions are not frames to it,
    their time shows in the Python function that called them; threads without Python, gRPC's
    own, are not seen), then `perf record` (every thread, the kernel included; by thread name
    and library, and by symbol). Prints each one's top `--profile-top`."""
    os.makedirs(args.profile, exist_ok=True)
    cluster = start_cluster("rill", REPLICAS)
    roles = (("primary", cluster.primary), ("replica", cluster.replicas[0]))
    done: dict[str, int] = {}
    try:
        for tool in ("py-spy", "perf"):
            tools: list[tuple[str, subprocess.Popen[bytes]]] = []
            try:
                for role, node in roles:
                    tools.append((role, subprocess.Popen(_profiler_command(tool, node.pid, role, args),
                                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)))
                time.sleep(1.0)  # attached
                deadline = time.monotonic() + args.profile_seconds
                done[tool] = 0
                while time.monotonic() < deadline:
                    done[tool] += len(xadd_wait_samples(cluster.primary.port, 200, 1, warmup=0,
                                                        timeout_ms=WAIT_TIMEOUT_MS)[0])
                for role, proc in tools:
                    if tool == "perf":
                        proc.send_signal(signal.SIGINT)
                    _, err = proc.communicate(timeout=60)
                    if proc.returncode not in (0, -signal.SIGINT, 128 + signal.SIGINT):  # perf ends on SIGINT
                        raise BenchError(f"{tool} on the {role} failed: {err.decode(errors='replace')[-1000:]}")
            finally:
                for _, proc in tools:
                    if proc.poll() is None:
                        proc.kill()
                        proc.wait()
    finally:
        cluster.stop()
    print(f"one client, XADD + WAIT 1: {done['py-spy']} in {args.profile_seconds:g} s under py-spy, "
          f"{done['perf']} under perf; files in {args.profile}")
    for role, _ in roles:
        own, inside, total = collapse(os.path.join(args.profile, f"{role}.py-spy.txt"))
        print(f"{role}, py-spy: {total} samples; own time (leaf frame), then time inside (any frame):")
        for name, count in sorted(own.items(), key=lambda kv: -kv[1])[:args.profile_top]:
            print(f"  own {100 * count / total:5.1f} %  {name}")
        for name, count in sorted(inside.items(), key=lambda kv: -kv[1])[:args.profile_top]:
            print(f"  in  {100 * count / total:5.1f} %  {name}")
        data = os.path.join(args.profile, f"{role}.perf.data")
        events = [line for line in subprocess.run(["perf", "report", "-i", data, "--stdio", "--sort", "pid"],
                                                  capture_output=True, text=True).stdout.splitlines()
                  if line.startswith("# Event count")]
        if events and done["perf"]:
            cpu_s = int(events[0].split(":")[1]) / 1e9  # cpu-clock events count nanoseconds
            print(f"{role}: perf counted {cpu_s:.2f} s of CPU, {cpu_s * 1e6 / done['perf']:.0f} µs per XADD + WAIT 1 "
                  f"(the time perf was attached without load included)")
        for sort in ("pid", "comm,dso", "dso,sym"):
            report = subprocess.run(["perf", "report", "-i", data, "--stdio", "--no-children", "-g", "none",
                                     "--sort", sort, "--percent-limit", "1"], capture_output=True, text=True)
            rows = [line for line in report.stdout.splitlines() if line.strip() and not line.startswith("#")]
            print(f"{role}, perf by {sort}:")
            print("\n".join(f"  {line.strip()}" for line in rows[:args.profile_top]))
    return 0


def _profiler_command(tool: str, pid: int, role: str, args: argparse.Namespace) -> list[str]:
    if tool == "py-spy":
        # --nonblocking: sampling without pausing the node (paused, it ran a seventh of the
        # round trips); no --native: with it the samples in epoll_wait counted as busy.
        return [_py_spy(), "record", "--threads", "--nonblocking",
                "--rate", "250", "--format", "raw", "--duration", str(int(args.profile_seconds)),
                "--pid", str(pid), "--output", os.path.join(args.profile, f"{role}.py-spy.txt")]
    return ["perf", "record", "-F", "499", "-g", "-p", str(pid), "-o", os.path.join(args.profile, f"{role}.perf.data")]


def _py_spy() -> str:
    beside = os.path.join(os.path.dirname(sys.executable), "py-spy")
    if os.access(beside, os.X_OK):
        return beside
    raise BenchError("py-spy is not installed (`make bench-deps` installs the bench extra)")


def collapse(path: str) -> tuple[dict[str, int], dict[str, int], int]:
    """py-spy's raw (collapsed) stacks: samples per function as the leaf, samples per function
    anywhere in the stack (once per sample), and the total."""
    own: dict[str, int] = {}
    inside: dict[str, int] = {}
    total = 0
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            stack, _, count_text = line.rstrip("\n").rpartition(" ")
            if not stack or not count_text.isdigit():
                continue
            count = int(count_text)
            frames = [_frame_name(frame) for frame in stack.split(";")]
            total += count
            own[frames[-1]] = own.get(frames[-1], 0) + count
            for name in set(frames[1:]):  # frames[0] names the thread
                inside[name] = inside.get(name, 0) + count
    return own, inside, total


def _frame_name(frame: str) -> str:
    # "function (module/path.py:123)" -> "function (module/path.py)": one entry per function
    name, _, where = frame.partition(" (")
    return f"{name} ({where.rsplit(':', 1)[0].rstrip(')')})" if where else name


# -- main -------------------------------------------------------------------------------------

def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.safe_write", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny run: one round, few samples, short runs")
    parser.add_argument("--groups", default=",".join(GROUPS), help="comma-separated groups (default: %(default)s)")
    parser.add_argument("--kinds", default=",".join(KINDS), help="comma-separated servers (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 3)")
    parser.add_argument("--samples", type=int, default=None, help="one-client round trips per figure (default 800)")
    parser.add_argument("-c", "--clients", type=int, default=50, help="clients of the many-client runs (default 50)")
    parser.add_argument("--seconds", type=float, default=None, help="measured seconds per many-client run (default 1.5)")
    parser.add_argument("--warmup", type=float, default=None, help="uncounted seconds first (default 0.3)")
    parser.add_argument("--lag-rate", type=int, default=10_000, help="paced XADD/s of the lag test (default 10000)")
    parser.add_argument("--lag-seconds", type=float, default=None, help="seconds of the lag test (default 1.5)")
    parser.add_argument("--p16-requests", type=int, default=None, help="XADDs per -P 16 run (default 100000)")
    parser.add_argument("--valkey-io-threads", type=int, default=1, help="Valkey's io-threads (default 1)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results", "safe-write"))
    parser.add_argument("--profile", metavar="DIR", help="profile a Rill primary and a replica instead (py-spy)")
    parser.add_argument("--profile-seconds", type=float, default=10.0)
    parser.add_argument("--profile-top", type=int, default=15)
    parser.add_argument("--driver", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--result", help=argparse.SUPPRESS)
    parser.add_argument("--wait", dest="replicas", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for name, normal, tiny in (("rounds", 3, 1), ("samples", 800, 100), ("seconds", 1.5, 0.5),
                               ("warmup", 0.3, 0.2), ("lag_seconds", 1.5, 0.5), ("p16_requests", 100_000, 20_000)):
        if getattr(args, name) is None:
            setattr(args, name, tiny if args.quick else normal)
    args.group_list = [g.strip() for g in args.groups.split(",") if g.strip()]
    args.kind_list = [k.strip() for k in args.kinds.split(",") if k.strip()]
    if not args.group_list or any(g not in GROUPS for g in args.group_list):
        parser.error(f"--groups: choose from {','.join(GROUPS)}")
    if not args.kind_list or any(k not in KINDS for k in args.kind_list):
        parser.error(f"--kinds: choose from {','.join(KINDS)}")
    if min(args.rounds, args.samples, args.clients, args.p16_requests, args.lag_rate) <= 0 \
            or min(args.seconds, args.lag_seconds) <= 0 or args.warmup < 0:
        parser.error("counts and durations must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.driver:
        return driver_main(args)
    install_exit_handlers()
    if args.profile:
        return profile(args)
    configs = [config(g, k, args.valkey_io_threads) for g in args.group_list for k in args.kind_list]
    started = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
    load_start = os.getloadavg()
    runs: dict[str, list[dict[str, Any]]] = {c.name: [] for c in configs}
    try:
        for round_no in range(args.rounds):
            shift = round_no % len(configs)  # each round starts with another configuration
            for cfg in configs[shift:] + configs[:shift]:
                run = run_config(cfg, args)
                runs[cfg.name].append(run)
                wait2 = run["xadd_wait2_50c"]
                print(f"  round {round_no + 1}, {cfg.name}: XADD+WAIT 1 p50 "
                      f"{percentile(run['xadd_wait1_1c'][0], 0.5) * 1e3:.3f} ms, 50c WAIT 2 {wait2['rate']:,.0f}/s, "
                      f"load {run['load']}", file=sys.stderr, flush=True)
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    results = {name: summarize(measured) for name, measured in runs.items()}
    loads = [run["load"] for measured in runs.values() for run in measured]
    ratio_table = ratios(results, args.group_list)
    doc: dict[str, Any] = {
        "timestamp": stamp,
        "duration_s": round(time.time() - started, 1),
        "params": {"rounds": args.rounds, "samples": args.samples, "clients": args.clients, "seconds": args.seconds,
                   "warmup": args.warmup, "lag_rate": args.lag_rate, "lag_seconds": args.lag_seconds,
                   "p16_requests": args.p16_requests, "replicas": REPLICAS, "wait_timeout_ms": WAIT_TIMEOUT_MS,
                   "groups": args.group_list, "kinds": args.kind_list, "quick": args.quick},
        "configs": {c.name: c.settings for c in configs},
        "environment": {"cpus": os.cpu_count(), "loadavg_start": [round(v, 2) for v in load_start],
                        "loadavg_end": [round(v, 2) for v in os.getloadavg()],
                        "redis_server": _version(["redis-server", "--version"]),
                        "valkey_server": _version(["valkey-server", "--version"]) if "valkey" in args.kind_list else None,
                        # Other processes' CPU (percent of one core) and the host's steal over the
                        # cluster runs: what of the run was the machine's doing.
                        "others_cpu_percent": _spread([load["others_cpu_percent"] for load in loads]),
                        "steal_percent": _spread([load["steal_percent"] for load in loads]),
                        "note": "every node and client shares the machine's cores; the load of other "
                                "engineers' work is in each configuration's load_rounds"},
        "targets": judge(ratio_table, results),
        "ratios": ratio_table,
        "results": results,
    }
    print(table(doc))
    for path in write_json(doc, args.out, stamp):
        print(f"wrote {os.path.relpath(path)}")
    return 0


def _spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": round(statistics.median(values), 1), "max": max(values)}


def _version(cmd: list[str]) -> str:
    if cmd[0] == "valkey-server":
        from bench.cluster import valkey_server_binary

        cmd = [valkey_server_binary(), *cmd[1:]]
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


if __name__ == "__main__":
    sys.exit(main())
