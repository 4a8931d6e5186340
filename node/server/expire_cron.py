"""The active expiry timer: `hz` times a second, while the node is a primary and active
expiry is on (DEBUG SET-ACTIVE-EXPIRE) and no pause runs, one bounded expiry cycle (node.commands.expiry:
`Expiry.cycle`, Redis's serverCron → activeExpireCycle), after which the clients its
deletions woke are served. A replica runs none: its keys go when its primary's DELs arrive.

When it starts, a primary first deletes every key that expired while the data was on disk
(`expire_all_due`, logged as DELs like any expiry), so a restart drops them at once.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from node.commands.expiry import deletes_expired, expire_all_due
from node.server.pause import NONE

if TYPE_CHECKING:
    from node.commands.context import Node
    from node.server.server import Server

log = logging.getLogger("rill.server")


class ExpireCron:
    def __init__(self, server: Server, node: Node) -> None:
        self.server = server
        self.node = node  # the node as its commands see it (the expiry deletes through it)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._timer: asyncio.TimerHandle | None = None

    def start(self, loop: asyncio.AbstractEventLoop) -> int:
        """Expire what is due now (on a primary) and start the timer; returns how many keys
        that first pass deleted."""
        self._loop = loop
        server = self.server
        deleted = 0
        if deletes_expired(self.node):
            deleted = expire_all_due(self.node, server.clock())
            if deleted:
                log.info("Deleted %d key(s) that expired while the data set was on disk", deleted)
                server.after_batch()
        self._schedule()
        return deleted

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._loop = None

    def _schedule(self) -> None:
        if self._loop is not None:
            hz = min(max(self.server.config.get_int("hz"), 1), 500)
            self._timer = self._loop.call_later(1.0 / hz, self._tick)

    def _tick(self) -> None:
        server = self.server
        # A pause (CLIENT PAUSE, FAILOVER's) stops the active cycle too, as Redis pauses
        # PAUSE_ACTION_EXPIRE: the offset a FAILOVER waits for must not move; so does a
        # fenced primary without its lease, whose log must not grow.
        if server.expiry.active and server.pause.level == NONE and deletes_expired(self.node):
            if server.expiry.cycle(self.node, server.clock()):
                server.after_batch()  # serve the clients blocked on deleted keys
        self._schedule()
