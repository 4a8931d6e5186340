"""The clock nemesis moves the clock the code reads: the wall clock of a process started with
the shim steps forward and back and changes rate when the lab says so, while its monotonic and
boot-time clocks (what durations are measured on) do not move; a real `rill node` answers TIME
from the stepped clock. The drift fault makes the monotonic clocks run at a rate (never back):
a process sleeping X measures rate x X, its sleeps and timed waits keep lasting what they mean
however far its clock drifted from the real one, and the nemesis drives it on a real node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types

import pytest
import redis

from bench.procs import free_port
from chaos.clocks import Clock, build_shim
from chaos.cluster import Cluster
from chaos.history import Recorder
from chaos.nemesis import Nemesis
from chaos.steps import Step

CHILD = r"""
import sys, time
def clocks():
    return {"wall": time.time(), "mono": time.monotonic(), "boot": time.clock_gettime(time.CLOCK_BOOTTIME)}
before = clocks()
print("ready", flush=True)
sys.stdin.readline()
time.sleep(0.2)  # sleeping still works (libfaketime's monotonic-free mode breaks it)
after = clocks()
print(" ".join(f"{k}={after[k] - before[k]:.3f}" for k in before), flush=True)
"""


@pytest.fixture(scope="module")
def shim(tmp_path_factory: pytest.TempPathFactory) -> str:
    return build_shim(str(tmp_path_factory.mktemp("shim") / "rill-chaos-clock.so"))


def _moved(shim: str, clock: Clock, action: object) -> dict[str, float]:
    child = subprocess.Popen([sys.executable, "-c", CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, **clock.env(shim)})
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        action()  # type: ignore[operator]
        child.stdin.write("\n")
        child.stdin.flush()
        line = child.stdout.readline().split()
        assert child.wait(10) == 0
    finally:
        if child.poll() is None:
            child.kill()
    return {k: float(v) for k, v in (word.split("=") for word in line)}


@pytest.mark.parametrize(("seconds", "low", "high"), [(2.5, 2.6, 3.2), (-1.5, -1.4, -0.8)])
def test_a_step_moves_the_wall_clock_only(shim: str, tmp_path: object, seconds: float, low: float,
                                          high: float) -> None:
    clock = Clock(os.path.join(str(tmp_path), "clock"))
    moved = _moved(shim, clock, lambda: clock.step(seconds))
    assert low < moved["wall"] < high, moved  # the step plus the 0.2 s slept
    assert 0.19 < moved["mono"] < 0.7 and 0.19 < moved["boot"] < 0.7, moved
    clock.close()


def test_a_rate_makes_the_wall_clock_run_fast(shim: str, tmp_path: object) -> None:
    clock = Clock(os.path.join(str(tmp_path), "clock"))
    moved = _moved(shim, clock, lambda: clock.set_rate(4.0))
    assert moved["wall"] > 3 * moved["mono"], moved
    clock.close()


def _rill_node(shim: str, clock: Clock, workdir: str) -> tuple[subprocess.Popen[bytes], redis.Redis]:
    """A real `rill node` with the shim and this clock, answering PING."""
    port = free_port()
    rill = os.path.join(os.path.dirname(sys.executable), "rill")
    node = subprocess.Popen([rill, "node", "--port", str(port), "--dir", workdir],
                            env={**os.environ, **clock.env(shim)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis("127.0.0.1", port, socket_timeout=10)
    deadline = time.monotonic() + 30
    while True:
        try:
            client.ping()
            return node, client
        except redis.ConnectionError:
            if node.poll() is not None or time.monotonic() > deadline:
                node.kill()
                node.wait()
                raise AssertionError("rill node did not start") from None
            time.sleep(0.1)


def test_a_rill_node_answers_time_from_the_stepped_clock(shim: str, tmp_path: object) -> None:
    clock = Clock(os.path.join(str(tmp_path), "clock"))
    node, client = _rill_node(shim, clock, str(tmp_path))
    try:

        def skew() -> float:
            seconds, micros = client.time()
            return seconds + micros / 1e6 - time.time()

        assert abs(skew()) < 0.5
        clock.step(3.0)
        assert 2.5 < skew() < 3.5
        clock.step(-4.0)
        assert -1.5 < skew() < -0.5
        uptime = int(client.info("server")["uptime_in_seconds"])
        assert uptime < 30  # measured on a clock the step did not move
    finally:
        client.close()
        node.kill()
        node.wait()
        clock.close()


DRIFTING = r"""
import sys, threading, time
BOOT = time.CLOCK_BOOTTIME
def clocks():
    return {"mono": time.monotonic(), "boot": time.clock_gettime(BOOT), "wall": time.time()}
print("ready", flush=True)
for line in sys.stdin:
    wait = float(line)
    a = clocks()
    time.sleep(wait)  # clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) in CPython 3.11+
    b = clocks()
    threading.Event().wait(wait)  # sem_clockwait(CLOCK_MONOTONIC)
    c = clocks()
    print(" ".join(f"{k}={b[k] - a[k]:.4f},{c[k] - b[k]:.4f}" for k in a), flush=True)
"""


class _Child:
    """A Python process with the shim that sleeps, then waits on an Event, for the time it is
    sent, and says how long each took on each of its clocks."""

    def __init__(self, shim: str, clock: Clock) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", DRIFTING], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**os.environ, **clock.env(shim)})
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "ready"

    def measure(self, wait: float) -> dict[str, tuple[float, float]]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(f"{wait}\n")
        self.proc.stdin.flush()
        words = self.proc.stdout.readline().split()
        assert words, "the child died"
        return {k: (float(v.split(",")[0]), float(v.split(",")[1])) for k, v in (w.split("=") for w in words)}

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        assert self.proc.wait(10) == 0


@pytest.mark.parametrize("rate", [2.0, 0.5])
def test_a_drifting_process_measures_a_sleep_of_x_as_rate_times_x(shim: str, tmp_path: object, rate: float) -> None:
    clock = Clock(os.path.join(str(tmp_path), "clock"))
    child = _Child(shim, clock)
    try:
        clock.set_drift(rate)
        moved = child.measure(0.4)
    finally:
        child.close()
        clock.close()
    for waited in range(2):  # the sleep, the Event's timed wait
        wall = moved["wall"][waited]  # the wall clock is not drifted: real time
        assert 0.38 < wall < 2.0, moved
        for name in ("mono", "boot"):  # the ratio, whatever the machine's load made the wait last
            assert abs(moved[name][waited] / wall - rate) < 0.05 * rate, (name, moved)


@pytest.mark.parametrize("rate", [5.0, 0.2])
def test_sleeps_last_what_they_mean_after_the_clock_drifted_away_from_the_real_one(shim: str, tmp_path: object,
                                                                                   rate: float) -> None:
    """Once the monotonic clock is seconds ahead of (or behind) the real one, a sleep or a timed
    wait computed on it as a deadline still lasts its length: the shim moves such deadlines to
    the real clock. (Without that, after x5 for 1 s a 0.3 s sleep lasted 4.3 s; after x0.2,
    it returned at once.)"""
    clock = Clock(os.path.join(str(tmp_path), "clock"))
    child = _Child(shim, clock)
    try:
        clock.set_drift(rate)
        time.sleep(1.0)
        clock.set_drift(1.0)
        assert abs(clock.drift_offset_s) > 0.7, clock.drift_offset_s
        moved = child.measure(0.3)
    finally:
        child.close()
        clock.close()
    for waited in range(2):
        assert 0.28 < moved["wall"][waited] < 2.0, moved
        assert abs(moved["mono"][waited] - moved["wall"][waited]) < 0.05, moved


def test_the_monotonic_clocks_never_go_back_as_the_rate_changes(shim: str, tmp_path: object) -> None:
    clock = Clock(os.path.join(str(tmp_path), "clock"))
    reader = subprocess.Popen([sys.executable, "-c", r"""
import sys, time
print("ready", flush=True)
backwards = reads = 0
last = {c: time.clock_gettime_ns(c) for c in (time.CLOCK_MONOTONIC, time.CLOCK_BOOTTIME)}
end = time.time() + 1.5
while time.time() < end:
    for c in last:
        now = time.clock_gettime_ns(c)
        backwards += now < last[c]
        last[c] = now
        reads += 1
print(backwards, reads, flush=True)
"""], stdout=subprocess.PIPE, text=True, env={**os.environ, **clock.env(shim)})
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "ready"
        for k in range(60):
            clock.set_drift((0.5, 2.0, 0.8, 1.5)[k % 4])
            time.sleep(0.02)
        backwards, reads = (int(x) for x in reader.stdout.readline().split())
        assert reader.wait(10) == 0
    finally:
        if reader.poll() is None:
            reader.kill()
        clock.close()
    assert reads > 10000 and backwards == 0, (backwards, reads)


def test_the_nemesis_drifts_a_real_nodes_clocks_and_puts_them_back_to_real_rate(shim: str, tmp_path: object) -> None:
    """A `clock-drift` step of x4 on a real `rill node`: its WAIT timeout (timed on its monotonic
    clock) of 2 s ends in about 0.5 s while the step lasts, and in 2 s again once it ended."""
    clock = Clock(os.path.join(str(tmp_path), "clock"))
    node, client = _rill_node(shim, clock, str(tmp_path))
    cluster = Cluster({})
    cluster.nodes["n1"] = types.SimpleNamespace(clock=clock)  # type: ignore[assignment]
    links = types.SimpleNamespace(net=types.SimpleNamespace(members=[]))
    rec = Recorder(os.path.join(str(tmp_path), "history.jsonl"), time.monotonic())
    nemesis = Nemesis(cluster, links, rec, [Step(0.0, 4.0, "clock-drift", "n1", {"rate": 4.0})])  # type: ignore[arg-type]

    def wait_timeout() -> float:
        started = time.monotonic()
        assert client.execute_command("WAIT", 1, 2000) == 0  # no replica: always the timeout
        return time.monotonic() - started
    try:
        nemesis.start()
        while clock.drift == 1.0:
            assert rec.now() < 10, "the nemesis did not start the drift"
            time.sleep(0.01)
        during = wait_timeout()
        nemesis.join(15.0)
        assert not nemesis.running() and not nemesis.errors, nemesis.errors
        after = wait_timeout()
    finally:
        nemesis.abort()
        rec.close()
        client.close()
        node.kill()
        node.wait()
        clock.close()
    assert during < 1.5, during  # 2 s at real rate: a loaded machine only makes it longer
    assert after > 1.9, after
    with open(os.path.join(str(tmp_path), "history.jsonl"), encoding="utf-8") as f:
        events = [json.loads(line) for line in f]
    assert [e["f"] for e in events] == ["start", "stop"]
    assert events[1]["detail"].startswith("n1's monotonic clocks ran at x4 for 4.0s (now +"), events[1]
