"""A fenced-mode primary's lease (docs/safety.md, *Fenced mode*): it acknowledges writes and
answers WAIT only while a majority of its replica set recently confirmed following it.

The primary stamps what it sends with its own clock; a replica that accepted the primary's
epoch echoes the newest stamp it received in its acks, and stops echoing once it is fenced by
a newer epoch. Echoes are counted per replica id, which must name a member of the replica set
durably (a node gives its `rill-node-id`, not its run id): a replica restarting over and over
is one member, not one per life. The lease lasts until the `needed`-th most recent echoed stamp plus `duration`,
all on the primary's clock: only the primary's clock is ever read, so clock offsets between
machines do not matter, only their rates (the sentinels wait out the lease stretched by the
drift bound before promoting). `needed` is ⌊N/2⌋ for a replica set of N nodes: with the
primary itself, a majority.

The clock is CLOCK_BOOTTIME where the system has it: unlike CLOCK_MONOTONIC it keeps counting
while the machine is suspended, so a primary whose VM was suspended finds its lease lapsed.
"""

from __future__ import annotations

import time
from collections.abc import Callable

_CLOCK = getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)


def lease_clock_ns() -> int:
    """Nanoseconds of the clock leases are measured with (never 0: 0 means "no stamp")."""
    return time.clock_gettime_ns(_CLOCK) + 1


class Lease:
    """The primary's side: stamps to send, echoes received, whether the lease holds."""

    def __init__(self, needed: int, duration: float, clock_ns: Callable[[], int] = lease_clock_ns) -> None:
        if needed < 0 or duration <= 0:
            raise ValueError("need needed >= 0 and a positive duration")
        self.needed = needed
        self.duration_ns = int(duration * 1e9)
        self._clock_ns = clock_ns
        self.epoch = 0  # the tenure the echoes count for
        self._issued = 0  # the newest stamp handed out
        self._echoes: dict[str, int] = {}  # replica id -> newest stamp it echoed
        # expires_ns() until the echoes change: every write and WAIT of a fenced primary asks.
        self._expires: int | None = None

    def stamp(self) -> int:
        """A stamp to send now."""
        now = self._clock_ns()
        self._issued = max(self._issued, now)
        return now

    def restart(self, epoch: int) -> None:
        """A new tenure (a promotion): echoes of earlier ones prove nothing about it."""
        self.epoch = epoch
        self._echoes.clear()
        self._expires = None

    def echo(self, replica_id: str, stamp: int, epoch: int) -> bool:
        """A replica following us in `epoch` echoed `stamp` (0: none yet). False when the
        stamp was never issued (the replica is broken or lying); ignored for another epoch.
        An echo outlives its replica's session: it still proves the replica was not fenced
        when the stamp was sent."""
        if stamp == 0 or epoch != self.epoch:
            return True
        if stamp < 0 or stamp > self._issued:
            return False
        if stamp > self._echoes.get(replica_id, 0):
            self._echoes[replica_id] = stamp
            self._expires = None
            # Echoes too old to hold a lease go (replicas that left do not pile up).
            horizon = stamp - self.duration_ns
            for other, seen in list(self._echoes.items()):
                if seen < horizon:
                    del self._echoes[other]
        return True

    def expires_ns(self) -> int:
        """When the lease lapses, on the lease clock (0: never held)."""
        expires = self._expires
        if expires is None:
            if self.needed == 0:
                expires = 1 << 62
            else:
                stamps = sorted(self._echoes.values(), reverse=True)
                expires = stamps[self.needed - 1] + self.duration_ns if len(stamps) >= self.needed else 0
            self._expires = expires
        return expires

    def holds(self) -> bool:
        return self._clock_ns() < self.expires_ns()

    def remaining(self) -> float:
        """Seconds until the lease lapses (0 when it does not hold)."""
        return max(0, self.expires_ns() - self._clock_ns()) / 1e9
