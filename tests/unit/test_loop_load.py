"""The saturation signal behind repl-busy-batch-interval: a thread's demand (running or
waiting for a CPU) read from Linux's schedstat, judged per 100 ms window with hysteresis."""

from __future__ import annotations

import os
import time

from node.server.loop_load import LoopLoad, thread_demand_seconds


class _Demand:
    """A thread whose demand the test sets."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def __call__(self) -> float:
        return self.seconds


def _window(load: LoopLoad, demand: _Demand, now: float, share: float) -> tuple[float, bool]:
    """One more window (0.11 s: a little over the 0.1 s) in which the thread wanted a CPU for
    `share` of it."""
    now += 0.11
    demand.seconds += 0.11 * share
    return now, load.saturated(now)


def test_saturated_from_ninety_percent_until_a_window_under_seventy() -> None:
    demand = _Demand()
    load = LoopLoad(demand)
    now = time.monotonic()
    states = []
    for share in (0.5, 0.89, 0.95, 0.8, 0.71, 0.69, 0.8, 0.91):
        now, saturated = _window(load, demand, now, share)
        states.append(saturated)
    assert states == [False, False, True, True, True, False, False, True]


def _saturated() -> tuple[LoopLoad, _Demand, float]:
    """A load judged saturated after one fully busy window, and the time that window ended."""
    demand = _Demand()
    load = LoopLoad(demand)
    now, saturated = _window(load, demand, time.monotonic(), 1.0)
    assert saturated
    return load, demand, now


def test_no_new_judgement_before_the_window_ends() -> None:
    load, _, now = _saturated()
    assert load.saturated(now + 0.05)  # idle since, but the window is not over


def test_an_idle_gap_ends_saturation_at_the_next_write() -> None:
    load, demand, now = _saturated()
    demand.seconds += 0.2  # busy for 0.2 s of the next 5 s
    assert not load.saturated(now + 5.0)


def _host_steal_seconds() -> float:
    """CPU time the hypervisor gave this VM's CPUs to other guests, all CPUs summed."""
    with open("/proc/stat", encoding="ascii") as f:
        steal_ticks = int(f.readline().split()[8])
    return steal_ticks / os.sysconf("SC_CLK_TCK")


def test_demand_counts_a_spinning_thread_and_not_a_sleeping_one() -> None:
    before = thread_demand_seconds()
    steal_before = _host_steal_seconds()
    deadline = time.monotonic() + 0.2
    while time.monotonic() < deadline:
        pass
    spun = thread_demand_seconds() - before
    stolen = _host_steal_seconds() - steal_before
    # Running or runnable for the whole 0.2 s, however busy this machine is (schedstat's wait
    # counts the time other threads keep it off the CPU), except what the hypervisor stole:
    # the guest's clocks skip that. The host's steal over all CPUs bounds it; 20 ms is the
    # two CPUs' tick rounding.
    assert spun + stolen >= 0.18, (spun, stolen)
    before = thread_demand_seconds()
    time.sleep(0.2)
    assert thread_demand_seconds() - before < 0.05
