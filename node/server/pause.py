"""Pausing clients: CLIENT PAUSE / CLIENT UNPAUSE and the FAILOVER command's pause (Redis
7.2's pauseActions, networking.c).

Each purpose (`client`: CLIENT PAUSE; `failover`: FAILOVER) holds a level (`WRITE`: commands
that may write, EXEC of a transaction holding one; `ALL`: every command) until an end time;
the node is paused at the most restrictive level among the purposes still running. A paused
command is not refused: its client is postponed (blocked, as CLIENT LIST's `b` flag and
`blocked_clients` show) and the command runs again, from the start of its checks, when the
pause becomes less restrictive (in the order the clients were postponed); it may be postponed
again. CLIENT PAUSE keeps the longer of the old and new end times and, for WRITE, an ALL pause
still running. The dispatcher decides what is paused (node/server/dispatch.py); the replication
link of a replica and the AOF's replay are never paused (Redis pauses its master client too:
docs/compatibility.md).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Final, Protocol


class Postponed(Protocol):
    """A client whose command waits for the pause to end (node/server/connection.py)."""

    def reprocess_postponed(self) -> None: ...

NONE: Final = 0
WRITE: Final = 1
ALL: Final = 2

CLIENT: Final = "client"
FAILOVER: Final = "failover"


class ClientPause:
    """The node's pauses; `level` is what the dispatcher applies."""

    def __init__(self, on_level: Callable[[int], None], clock: Callable[[], float] = time.monotonic) -> None:
        self._on_level = on_level  # tells the dispatcher the new level
        self._clock = clock
        self._purposes: dict[str, tuple[float, int]] = {}  # purpose -> (end, level)
        self.level = NONE
        self._timer: asyncio.TimerHandle | None = None
        self._postponed: list[Postponed] = []

    def pause(self, purpose: str, end: float, level: int) -> None:
        """Pause `level` for `purpose` until `end` (on this clock; math.inf: until unpaused).
        The longer end is kept (pauseActions); CLIENT PAUSE WRITE keeps a running ALL."""
        old_end, old_level = self._purposes.get(purpose, (0.0, NONE))
        if purpose == CLIENT and level == WRITE and old_level == ALL and old_end > self._clock():
            level = ALL
        self._purposes[purpose] = (max(old_end, end), level)
        self._update()

    def unpause(self, purpose: str) -> None:
        self._purposes.pop(purpose, None)
        self._update()

    def postponed(self, conn: Postponed) -> None:
        """`conn`'s command waits for the pause to become less restrictive."""
        self._postponed.append(conn)

    def _update(self) -> None:
        now = self._clock()
        level = NONE
        nearest = math.inf
        for purpose, (end, paused) in list(self._purposes.items()):
            if end > now:
                level = max(level, paused)
                nearest = min(nearest, end)
            else:
                del self._purposes[purpose]
        previous, self.level = self.level, level
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if nearest < math.inf:
            self._timer = asyncio.get_running_loop().call_later(max(0.0, nearest - now), self._update)
        if level != previous:
            self._on_level(level)
        if level < previous:
            self._release()

    def _release(self) -> None:
        """Every postponed client runs its command again (unblockPostponedClients)."""
        postponed, self._postponed = self._postponed, []
        for conn in postponed:
            conn.reprocess_postponed()
