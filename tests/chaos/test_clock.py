"""The clock nemesis moves the clock the code reads: the wall clock of a process started with
the shim steps forward and back and changes rate when the lab says so, while its monotonic and
boot-time clocks (what durations are measured on) do not move; a real `rill node` answers TIME
from the stepped clock."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
import redis

from bench.procs import free_port
from chaos.clocks import Clock, build_shim

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


def test_a_rill_node_answers_time_from_the_stepped_clock(shim: str, tmp_path: object) -> None:
    clock = Clock(os.path.join(str(tmp_path), "clock"))
    port = free_port()
    rill = os.path.join(os.path.dirname(sys.executable), "rill")
    node = subprocess.Popen([rill, "node", "--port", str(port), "--dir", str(tmp_path)],
                            env={**os.environ, **clock.env(shim)}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    client = redis.Redis("127.0.0.1", port, socket_timeout=5)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                assert node.poll() is None and time.monotonic() < deadline, "rill node did not start"
                time.sleep(0.1)

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
