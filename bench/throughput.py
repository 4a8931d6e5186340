"""Throughput side by side: the same redis-benchmark run (test, clients, pipeline, request
count) against redis-server and a Rill node, with each server's CPU time per request.

Each test names the redis-benchmark arguments, the data it needs (loaded fresh before every
run, so both servers start each run from the same state) and a probe: the command sent once
before measuring. A server that replies an error to the probe or the set-up does not support
the test, and the row is skipped with that error as its reason.
"""

from __future__ import annotations

import csv
import io
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from bench.client import RespClient, ServerReplyError
from bench.procs import BenchError, Server

# Pipelined runs send this many times the requests of unpipelined ones: at -P 16 redis-server
# finishes 100k requests in about 0.1 s, too short for /proc's 10 ms CPU-time resolution.
PIPELINED_SCALE = 4
# redis-benchmark runs that take longer than this are stopped and reported as failures.
RUN_TIMEOUT_S = 240.0
# Each XREADGROUP/XACK request touches 10 entries that are loaded before the run; this caps
# the load (and so the run time) whatever -n says.
STREAM_READ_MAX_REQUESTS = 25_000
ENTRIES_PER_READ = 10
GROUP = "benchgroup"
CONSUMER = "benchconsumer"

Setup = Callable[[RespClient, int], None]


@dataclass(frozen=True)
class Test:
    """One benchmark row family: `args` follow the common redis-benchmark options."""

    name: str
    args: tuple[str, ...]
    probe: tuple[str, ...]
    setup: Setup | None = None
    max_requests: int | None = None
    rand_range: Callable[[int], int] | None = None  # -r for __rand_int__, from the request count

    @property
    def label(self) -> str:
        return self.args[1].upper() if self.args[0] == "-t" else " ".join(self.args)


@dataclass(frozen=True)
class Measurement:
    rps: float
    cpu_s: float
    requests: int

    @property
    def cpu_us_per_req(self) -> float:
        return self.cpu_s * 1e6 / self.requests


@dataclass(frozen=True)
class Row:
    test: str
    label: str
    pipeline: int
    requests: int
    redis: Measurement | None
    rill: Measurement | None
    skipped: str | None = None


# -- data set-up ----------------------------------------------------------------------------

def _load_stream(client: RespClient, key: str, count: int) -> None:
    """A fresh stream with entries 1-0 .. 1-(count-1), so XACK can name them."""
    client.check("DEL", key)
    client.pipeline(("XADD", key, f"1-{i}", "field", "value") for i in range(count))


def _setup_get(client: RespClient, requests: int) -> None:
    # redis-benchmark's GET test reads the key its SET test writes (no -r: one fixed key).
    client.check("SET", "key:__rand_int__", "xxx")


VOLATILE_KEYS = 100_000


def _setup_volatile(client: RespClient, requests: int) -> None:
    # Every key redis-benchmark's -r draws (key:000000000000 ..) exists with a time to live of
    # an hour: each GET pays the lazy-expiry check on a database full of volatile keys.
    client.pipeline(("SET", "key:%012d" % i, "xxx", "EX", "3600") for i in range(VOLATILE_KEYS))


def _setup_range(client: RespClient, requests: int) -> None:
    _load_stream(client, "rangestream", 1000)


def _setup_readgroup(client: RespClient, requests: int) -> None:
    # Room for every request plus the probe and the requests redis-benchmark sends past -n
    # while its last pipelines are in flight.
    _load_stream(client, "groupstream", ENTRIES_PER_READ * (requests + 1 + 50 * 16))
    client.check("XGROUP", "CREATE", "groupstream", GROUP, "0")


def _setup_ack(client: RespClient, requests: int) -> None:
    total = ENTRIES_PER_READ * requests
    _load_stream(client, "ackstream", total)
    client.check("XGROUP", "CREATE", "ackstream", GROUP, "0")
    delivered = 0
    while delivered < total:
        client.check("XREADGROUP", "GROUP", GROUP, CONSUMER, "COUNT", "10000", "STREAMS", "ackstream", ">")
        delivered += 10000


_ACK_IDS = tuple(["1-__rand_int__"] * ENTRIES_PER_READ)

TESTS: dict[str, Test] = {
    t.name: t
    for t in (
        Test("ping", ("-t", "ping_mbulk"), ("PING",)),
        Test("set", ("-t", "set"), ("SET", "bench:probe", "xxx")),
        Test("get", ("-t", "get"), ("GET", "key:__rand_int__"), _setup_get),
        Test("get-volatile", ("GET", "key:__rand_int__"), ("GET", "key:000000000000"), _setup_volatile,
             rand_range=lambda requests: VOLATILE_KEYS),
        Test("xadd", ("XADD", "mystream", "*", "field", "value"), ("XADD", "mystream", "*", "field", "value")),
        Test("xrange", ("XRANGE", "rangestream", "-", "+", "COUNT", "10"),
             ("XRANGE", "rangestream", "-", "+", "COUNT", "10"), _setup_range),
        Test("xreadgroup",
             ("XREADGROUP", "GROUP", GROUP, CONSUMER, "COUNT", "10", "STREAMS", "groupstream", ">"),
             ("XREADGROUP", "GROUP", GROUP, CONSUMER, "COUNT", "10", "STREAMS", "groupstream", ">"),
             _setup_readgroup, STREAM_READ_MAX_REQUESTS),
        # Acks 10 random delivered IDs per request (some repeat, as redis-benchmark draws
        # __rand_int__ independently): the PEL lookup and removal path of XACK.
        Test("xack", ("XACK", "ackstream", GROUP, *_ACK_IDS), ("XACK", "ackstream", GROUP, "1-0"),
             _setup_ack, STREAM_READ_MAX_REQUESTS, lambda requests: ENTRIES_PER_READ * requests),
        Test("xlen", ("XLEN", "rangestream"), ("XLEN", "rangestream"), _setup_range),
    )
}
DEFAULT_TESTS = tuple(TESTS)


def requests_for(test: Test, pipeline: int, n: int) -> int:
    requests = n * PIPELINED_SCALE if pipeline > 1 else n
    if test.max_requests is not None:
        requests = min(requests, test.max_requests)
    return requests


# -- running ----------------------------------------------------------------------------------

def parse_csv_rps(output: str) -> float:
    """requests/s of the single test in `redis-benchmark --csv` output."""
    rows = [row for row in csv.reader(io.StringIO(output)) if row]
    if len(rows) < 2 or rows[0][:2] != ["test", "rps"]:
        raise ValueError(f"unexpected redis-benchmark output: {output!r}")
    return float(rows[1][1])


def _failure_text(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in proc.stderr.splitlines() + proc.stdout.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln or "ERR" in ln]
    return (errors or lines or [f"exit code {proc.returncode}"])[0].strip()


def run_benchmark(server: Server, test: Test, requests: int, pipeline: int, clients: int) -> Measurement:
    """One redis-benchmark run; raises ServerReplyError when the server replied errors."""
    args = ["redis-benchmark", "-h", "127.0.0.1", "-p", str(server.port), "-c", str(clients),
            "-n", str(requests), "-P", str(pipeline), "--csv"]
    if test.rand_range is not None:
        args += ["-r", str(test.rand_range(requests))]
    args += test.args
    cpu_before = server.cpu_seconds()
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise BenchError(f"redis-benchmark {test.name} -P {pipeline} on {server.kind} took over {RUN_TIMEOUT_S}s") from None
    cpu_after = server.cpu_seconds()
    if not server.alive():
        raise BenchError(f"{server.kind} died during {test.name} -P {pipeline} (exit code {server.proc.returncode})")
    if proc.returncode != 0 or "Error from server" in proc.stderr:
        raise ServerReplyError(_failure_text(proc))
    return Measurement(parse_csv_rps(proc.stdout), cpu_after - cpu_before, requests)


def measure(server: Server, test: Test, requests: int, pipeline: int, clients: int) -> Measurement:
    """Set up the data, probe the command, run the benchmark."""
    with RespClient(server.port) as client:
        if test.setup is not None:
            test.setup(client, requests)
        client.check(*test.probe)
    return run_benchmark(server, test, requests, pipeline, clients)


def run_row(servers: dict[str, Server], test: Test, pipeline: int, n: int, clients: int) -> Row:
    requests = requests_for(test, pipeline, n)
    results: dict[str, Measurement] = {}
    for kind in ("redis", "rill"):
        try:
            results[kind] = measure(servers[kind], test, requests, pipeline, clients)
        except ServerReplyError as exc:
            reason = f"{kind} replied an error: {exc}"
            print(f"  {test.name:<11} -P {pipeline:<3} SKIPPED: {reason}", file=sys.stderr, flush=True)
            return Row(test.name, test.label, pipeline, requests, results.get("redis"), None, reason)
        m = results[kind]
        print(f"  {test.name:<11} -P {pipeline:<3} {kind:<5} {m.rps:>12,.0f} req/s  "
              f"{m.cpu_us_per_req:8.2f} µs CPU/req", file=sys.stderr, flush=True)
    return Row(test.name, test.label, pipeline, requests, results["redis"], results["rill"])
