"""Whether the event loop's thread is saturated: it wanted a CPU for nearly all of the last
window, running or waiting in the run queue (LoopLoad); and whether it has had to wait for
one, that is whether other processes want its core (CpuContention).

The replication flush (backlog_feed) batches more when the primary is saturated: each
gRPC message to a replica costs the primary a fixed ~0.1-0.3 ms of CPU whatever it carries,
so when the CPU is what limits the write rate, fewer and larger batches give it back to the
clients; when it is not, batches go at the end of each loop turn and lag stays low.

Demand, not CPU time: on a shared host a saturated loop may get only part of a core (the rest
of the time it waits in the run queue), and its CPU time alone would understate it. Linux's
/proc/thread-self/schedstat has both (run and wait, in ns); without it (another OS, a kernel
without schedstats) the thread's CPU time is the fallback.

Steal: on a virtual machine the hypervisor may hand this VM's CPUs to other guests, and the
time it takes while the thread runs counts in neither its run nor its wait time (the guest's
task clock skips it). A saturated loop on a host stealing a fifth of the CPU then shows about
0.8 and would never be judged saturated. The machine's steal share over the window (from
/proc/stat) estimates what the thread's CPU lost, and its run time is scaled back up by it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

SCHEDSTAT: Final = "/proc/thread-self/schedstat"
PROC_STAT: Final = "/proc/stat"
# Past this share of steal the estimate says nothing useful; it also bounds the scaling.
_MAX_STEAL: Final = 0.9


def thread_run_wait_seconds() -> tuple[float, float]:
    """Seconds this thread has run and waited runnable (its CPU time and 0 without
    schedstat)."""
    try:
        with open(SCHEDSTAT, "rb") as f:
            fields = f.read().split()
        return int(fields[0]) / 1e9, int(fields[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return time.thread_time(), 0.0


def host_steal_ticks() -> tuple[int, int]:
    """(steal, total) clock ticks of all this machine's CPUs since boot, from /proc/stat;
    (0, 0) without it."""
    try:
        with open(PROC_STAT, "rb") as f:
            ticks = [int(v) for v in f.readline().split()[1:9]]
        # user nice system idle iowait irq softirq steal (guest time is already in user).
        return ticks[7], sum(ticks)
    except (OSError, ValueError, IndexError):
        return 0, 0


class LoopLoad:
    """Samples the calling thread's demand at most once per `window` seconds, lazily (from
    calls to `saturated`, so an idle node does no work for it); always call it from the same
    thread, the event loop's."""

    WINDOW: Final = 0.1
    # Shares of a window: saturated from ENTER on, until a window below LEAVE. The gap keeps
    # the state from flapping: batching more frees enough CPU that a saturated loop often
    # idles 5-15 % of a window, and dropping back to small batches would saturate it again.
    ENTER: Final = 0.9
    LEAVE: Final = 0.7

    def __init__(
        self,
        demand: Callable[[], tuple[float, float]] = thread_run_wait_seconds,
        steal: Callable[[], tuple[int, int]] = host_steal_ticks,
    ) -> None:
        self._demand = demand
        self._steal = steal
        self._start = time.monotonic()
        self._start_run, self._start_wait = demand()
        self._start_steal, self._start_ticks = steal()
        self._saturated = False

    def saturated(self, now: float) -> bool:
        """Whether the loop is saturated as of the last complete window (`now` is
        time.monotonic()). A window that spans an idle gap averages over it, so the first
        writes after a pause are not held back."""
        elapsed = now - self._start
        if elapsed >= self.WINDOW:
            run, wait = self._demand()
            steal, ticks = self._steal()
            stolen = (steal - self._start_steal) / (ticks - self._start_ticks) if ticks > self._start_ticks else 0.0
            ran = (run - self._start_run) / (1 - min(max(stolen, 0.0), _MAX_STEAL))
            share = (ran + wait - self._start_wait) / elapsed
            self._saturated = share >= (self.LEAVE if self._saturated else self.ENTER)
            self._start, self._start_run, self._start_wait = now, run, wait
            self._start_steal, self._start_ticks = steal, ticks
        return self._saturated


class CpuContention:
    """Whether the calling thread waited in the run queue for at least ENTER of the last
    window (until a window under LEAVE): other threads want the CPU it runs on. Sampled like
    LoopLoad, at most once per `window` seconds from calls to `contended`, from one thread.

    A replica slices large batches only while contended (replication.replica): on a core of
    its own, waiting 0.3-2 % of the time, slicing only cost it CPU (about 1.5x per XADD in
    the benchmark's pinned runs); sharing two cores with its primary and their client it
    waited 13-14 %, and slicing gave the primary 6-25 % more throughput. Without
    schedstat the wait reads 0: never contended."""

    WINDOW: Final = 0.1
    ENTER: Final = 0.05
    LEAVE: Final = 0.02

    def __init__(self, demand: Callable[[], tuple[float, float]] = thread_run_wait_seconds) -> None:
        self._demand = demand
        self._start = time.monotonic()
        self._start_wait = demand()[1]
        self._contended = False

    def contended(self, now: float) -> bool:
        """As of the last complete window (`now` is time.monotonic())."""
        elapsed = now - self._start
        if elapsed >= self.WINDOW:
            wait = self._demand()[1]
            share = (wait - self._start_wait) / elapsed
            self._contended = share >= (self.LEAVE if self._contended else self.ENTER)
            self._start, self._start_wait = now, wait
        return self._contended
