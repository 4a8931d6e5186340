"""Whether the event loop's thread is saturated: it wanted a CPU for nearly all of the last
window, running or waiting in the run queue.

The replication flush (replication_node) batches more when the primary is saturated: each
gRPC message to a replica costs the primary a fixed ~0.1-0.3 ms of CPU whatever it carries,
so when the CPU is what limits the write rate, fewer and larger batches give it back to the
clients; when it is not, batches go at the end of each loop turn and lag stays low.

Demand, not CPU time: on a shared host a saturated loop may get only part of a core (the rest
of the time it waits in the run queue), and its CPU time alone would understate it. Linux's
/proc/thread-self/schedstat has both (run and wait, in ns); without it (another OS, a kernel
without schedstats) the thread's CPU time is the fallback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

SCHEDSTAT: Final = "/proc/thread-self/schedstat"


def thread_demand_seconds() -> float:
    """Seconds this thread has been running or runnable (CPU time without schedstat)."""
    try:
        with open(SCHEDSTAT, "rb") as f:
            fields = f.read().split()
        return (int(fields[0]) + int(fields[1])) / 1e9
    except (OSError, ValueError, IndexError):
        return time.thread_time()


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

    def __init__(self, demand: Callable[[], float] = thread_demand_seconds) -> None:
        self._demand = demand
        self._start = time.monotonic()
        self._start_demand = demand()
        self._saturated = False

    def saturated(self, now: float) -> bool:
        """Whether the loop is saturated as of the last complete window (`now` is
        time.monotonic()). A window that spans an idle gap averages over it, so the first
        writes after a pause are not held back."""
        elapsed = now - self._start
        if elapsed >= self.WINDOW:
            demand = self._demand()
            share = (demand - self._start_demand) / elapsed
            self._saturated = share >= (self.LEAVE if self._saturated else self.ENTER)
            self._start, self._start_demand = now, demand
        return self._saturated
