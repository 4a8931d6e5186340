"""The clocks a sentinel's shell reads (the policy reads none: its inputs carry the time).

Every duration the policy measures — SDOWN's down-after-milliseconds, the election and
failover timeouts, fenced mode's lease wait W — comes from `monotonic_ms`: CLOCK_BOOTTIME,
the clock the nodes time their leases with (replication/lease.py). No wall-clock step moves it
(`date -s`, an NTP step, a VM's time resync), and unlike CLOCK_MONOTONIC it keeps counting
while the machine is suspended, so a suspended sentinel finds its timers expired rather than
paused. Fenced mode depends on it: W timed on a clock that a step can shorten could promote a
replica while the old primary still holds its lease (docs/safety.md, *Fenced mode*).

`wall_ms` is the wall clock, read where Redis shows a date (the "Next failover delay" log
line) and by TILT, which watches both clocks (node/sentinel/policy/sentinel.py, `_timer`).

Readings of `monotonic_ms` are offset to equal the wall clock at start-up, so they look like
the mstime() values Redis's timers hold (never near 0, which the policy's fields use for
"never").
"""

from __future__ import annotations

import time
from typing import Final, Protocol

_BOOTTIME: Final = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)


class Clock(Protocol):
    def monotonic_ms(self) -> int: ...
    def wall_ms(self) -> int: ...


def _boottime_ms() -> int:
    return time.clock_gettime_ns(_BOOTTIME) // 1_000_000


def wall_clock_ms() -> int:
    return time.time_ns() // 1_000_000


class SystemClock:
    """CLOCK_BOOTTIME for durations, CLOCK_REALTIME for dates."""

    def __init__(self) -> None:
        self._anchor = wall_clock_ms() - _boottime_ms()

    def monotonic_ms(self) -> int:
        return _boottime_ms() + self._anchor

    def wall_ms(self) -> int:
        return wall_clock_ms()


# The process's clock: the configuration is loaded and the runner ticks on the same readings.
SYSTEM_CLOCK: Final = SystemClock()
