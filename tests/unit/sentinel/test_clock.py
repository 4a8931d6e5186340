"""The clocks a sentinel reads (node/sentinel/clock.py): every duration the policy measures —
SDOWN, the failover timeouts, fenced mode's lease wait W — comes from CLOCK_BOOTTIME, which a
wall-clock step (`date -s`, an NTP step, a VM's time resync) does not move and which keeps
counting while the machine is suspended; the wall clock is read only for what Redis shows as a
date (the "Next failover delay" log line) and for TILT, which watches both (docs/failover.md).

A wall-clock step cannot be made on this machine without disturbing every other process, so
these tests step the wall clock as Python reads it (`time.time_ns`, `time.time`) and check what
the runner hands the policy."""

from __future__ import annotations

import os
import random
import time

import pytest

from node.sentinel import config as sentinel_config
from node.sentinel.runner import Runner

STEP_NS = 1_500_000_000  # an NTP step of 1.5 s: under TILT's 2 s, inside the lease wait W


def _runner(tmp_path: object) -> Runner:
    path = os.path.join(str(tmp_path), "sentinel.conf")
    text = "port 26379\nsentinel myid " + "a" * 40 + "\nsentinel monitor mymaster 127.0.0.1 6379 2\n"
    with open(path, "w") as f:
        f.write(text)
    sentinel, options = sentinel_config.load(text, now=0, rng=random.Random(1))
    return Runner(sentinel, options, path)


@pytest.mark.parametrize("step", [STEP_NS, -STEP_NS])
def test_a_wall_clock_step_does_not_move_the_time_the_runner_gives_the_policy(
    tmp_path: object, monkeypatch: pytest.MonkeyPatch, step: int
) -> None:
    runner = _runner(tmp_path)
    before = runner.now()
    real_ns = time.time_ns
    monkeypatch.setattr(time, "time_ns", lambda: real_ns() + step)
    monkeypatch.setattr(time, "time", lambda: (real_ns() + step) / 1e9)
    elapsed = runner.now() - before
    # Only real time passed between the two readings (well under the step), never backwards.
    assert 0 <= elapsed < 500, f"the policy's clock moved by {elapsed} ms when the wall clock stepped {step // 10**6} ms"
