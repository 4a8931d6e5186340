"""The saturation signal behind repl-busy-batch-interval: a thread's demand (running or
waiting for a CPU) read from Linux's schedstat, corrected for the hypervisor's steal, judged
per 100 ms window with hysteresis. And the contention signal behind a replica's apply slices:
the share of a window the thread waited for a CPU."""

from __future__ import annotations

import os
import time

from node.replication.loop_load import CpuContention, LoopLoad, host_steal_ticks, thread_run_wait_seconds
from tests.conftest import start_spinner, stop_process


class _Demand:
    """A thread whose run and wait time the test sets."""

    def __init__(self) -> None:
        self.run = 0.0
        self.wait = 0.0

    def __call__(self) -> tuple[float, float]:
        return self.run, self.wait


class _Steal:
    """A host whose steal the test sets, in /proc/stat's ticks of all CPUs."""

    def __init__(self) -> None:
        self.steal = 0
        self.total = 0

    def __call__(self) -> tuple[int, int]:
        return self.steal, self.total


def _window(load: LoopLoad, demand: _Demand, now: float, share: float) -> tuple[float, bool]:
    """One more window (0.11 s: a little over the 0.1 s) in which the thread ran for `share`
    of it."""
    now += 0.11
    demand.run += 0.11 * share
    return now, load.saturated(now)


def _load(demand: _Demand, steal: _Steal | None = None) -> LoopLoad:
    return LoopLoad(demand, steal if steal is not None else _Steal())


def test_saturated_from_ninety_percent_until_a_window_under_seventy() -> None:
    demand = _Demand()
    load = _load(demand)
    now = time.monotonic()
    states = []
    for share in (0.5, 0.89, 0.95, 0.8, 0.71, 0.69, 0.8, 0.91):
        now, saturated = _window(load, demand, now, share)
        states.append(saturated)
    assert states == [False, False, True, True, True, False, False, True]


def test_waiting_for_a_cpu_counts_as_demand() -> None:
    demand = _Demand()
    load = _load(demand)
    now = time.monotonic() + 0.11
    demand.run, demand.wait = 0.06, 0.04  # ran 55 %, runnable but kept off the CPU 36 %
    assert load.saturated(now)


def test_run_time_the_host_stole_is_counted_back() -> None:
    # The thread ran 70 % of the window and waited 5 %: on a host that stole a quarter of
    # every CPU meanwhile, it wanted the CPU throughout (0.7 / 0.75 + 0.05 = 0.98).
    demand, steal = _Demand(), _Steal()
    load = _load(demand, steal)
    demand.run, demand.wait = 0.07, 0.005
    steal.steal, steal.total = 5, 20
    assert load.saturated(time.monotonic() + 0.1)
    # The same thread with no steal wanted the CPU 75 % of the time: not saturated.
    demand, steal = _Demand(), _Steal()
    load = _load(demand, steal)
    demand.run, demand.wait = 0.07, 0.005
    steal.total = 20
    assert not load.saturated(time.monotonic() + 0.1)


def test_steal_never_makes_an_idle_thread_saturated() -> None:
    demand, steal = _Demand(), _Steal()
    load = _load(demand, steal)
    demand.run = 0.005  # 5 % of the window, with the host taking everything it could
    steal.steal, steal.total = 20, 20
    assert not load.saturated(time.monotonic() + 0.1)


def _saturated() -> tuple[LoopLoad, _Demand, float]:
    """A load judged saturated after one fully busy window, and the time that window ended."""
    demand = _Demand()
    load = _load(demand)
    now, saturated = _window(load, demand, time.monotonic(), 1.0)
    assert saturated
    return load, demand, now


def test_no_new_judgement_before_the_window_ends() -> None:
    load, _, now = _saturated()
    assert load.saturated(now + 0.05)  # idle since, but the window is not over


def test_an_idle_gap_ends_saturation_at_the_next_write() -> None:
    load, demand, now = _saturated()
    demand.run += 0.2  # busy for 0.2 s of the next 5 s
    assert not load.saturated(now + 5.0)


def _spin_cpu(seconds: float) -> None:
    """Runs until this thread has had `seconds` of CPU (however long that takes)."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_run_time_is_the_threads_cpu_time_and_a_sleeping_thread_adds_none() -> None:
    # Both are the kernel's count of this thread's time on a CPU (schedstat's and
    # CLOCK_THREAD_CPUTIME's), whatever else the machine runs; schedstat's is brought up to
    # date at the scheduler's ticks, hence the tolerance.
    run_before, cpu_before = thread_run_wait_seconds()[0], time.thread_time()
    _spin_cpu(0.1)
    run, cpu = thread_run_wait_seconds()[0] - run_before, time.thread_time() - cpu_before
    assert abs(run - cpu) < 0.02, (run, cpu)
    before = thread_run_wait_seconds()[0]
    time.sleep(0.2)
    assert thread_run_wait_seconds()[0] - before < 0.01


def test_host_steal_ticks_reads_this_machine() -> None:
    steal, total = host_steal_ticks()
    time.sleep(0.05)
    steal2, total2 = host_steal_ticks()
    assert 0 <= steal <= total and total2 > total and steal2 >= steal


def test_contended_from_five_percent_waiting_until_a_window_under_two() -> None:
    demand = _Demand()
    contention = CpuContention(demand)
    now = time.monotonic()
    states = []
    for share in (0.01, 0.04, 0.06, 0.03, 0.021, 0.019, 0.04, 0.5):
        now += 0.11
        demand.wait += 0.11 * share
        demand.run += 0.11 * 0.5  # running does not count
        states.append(contention.contended(now))
    assert states == [False, False, True, True, True, False, False, True]
    demand.wait += 0.05  # half of the next 0.1 s, but that window is not over yet
    assert contention.contended(now + 0.05)
    assert not contention.contended(now + 5.0)  # 0.05 s in 5 s: an idle gap dilutes it


def test_a_thread_sharing_its_cpu_with_a_spinning_process_waits_and_is_contended() -> None:
    # This thread and a spinning process pinned to the same CPU: while this thread runs, the
    # spinner is runnable, so the scheduler makes each wait for the other (about as long as
    # the other runs): far above the 5 % that makes a window contended.
    saved = os.sched_getaffinity(0)
    cpu = min(saved)
    spinner = start_spinner(cpu, 30)
    try:
        os.sched_setaffinity(0, {cpu})  # pid 0: the calling thread only
        contention = CpuContention()
        wait_before = thread_run_wait_seconds()[1]
        _spin_cpu(0.2)
        assert thread_run_wait_seconds()[1] - wait_before > 0.05
        assert contention.contended(time.monotonic())
    finally:
        os.sched_setaffinity(0, saved)
        stop_process(spinner)
