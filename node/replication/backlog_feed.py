"""The primary side of the node's log: every committed unit of the effect log goes into the
backlog, coalesced per event-loop turn (or spaced by repl-batch-interval, and by
repl-busy-batch-interval while this loop is saturated), from the first replica resync on.
Until then, as Redis keeps no backlog before a replica attaches, the backlog only follows the
log's offset and the effect log encodes nothing for it (`record`). On a replica the units are
the primary's, which the link stores in the backlog itself.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from node.log.effect_log import PositionMismatch
from node.replication.loop_load import LoopLoad
from replication import Backlog

if TYPE_CHECKING:
    from node.server.server import Server


class BacklogFeed:
    """Moves the effect log's units into the backlog (`flush`)."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.config = server.config
        self.backlog: Backlog | None = None
        # Whether the backlog records the log's units (see `record`).
        self.recording = False
        # A replica of a redis-server logs its own effects (node/replication/redis_link.py):
        # they feed the backlog as a primary's do.
        self.own_log = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[bytes] = []
        self._pending_end = 0
        self._last_flush = 0.0
        # A flush is queued for the end of this event-loop turn (`flush_soon`, or `_on_unit`
        # with no interval to wait).
        self._flush_queued = False
        self._batch_interval = self.config.get_int("repl-batch-interval") / 1000
        self._busy_batch_interval = self.config.get_int("repl-busy-batch-interval") / 1000
        self._loop_load = LoopLoad()
        # Kept: the effect log also removes the listener by identity.
        self._unit_listener = self._on_unit
        self.config.on_change(self._on_config_change)

    def attach(self, backlog: Backlog) -> None:
        self._loop = asyncio.get_running_loop()
        self.backlog = backlog

    def _on_unit(self, data: bytes, end_offset: int) -> None:
        """Effect-log listener. On a replica the units are the primary's, which the link
        already stores in the backlog itself (but for a Redis primary's: `own_log`)."""
        if self.backlog is None or (self.server.role != "master" and not self.own_log):
            return
        if not self._pending and self._loop is not None:
            # With repl-batch-interval set, flushes under load are at least that far apart
            # (fewer, larger batches: less CPU, at most that much more replication lag,
            # nothing more to WAIT); an idle link flushes at once. With 0, the default, the
            # units of each event-loop turn flush at its end and the replica streams batch
            # them while a batch waits for its ack (replication.primary). While this loop is
            # saturated, repl-busy-batch-interval applies instead when it is longer.
            now = time.monotonic()
            interval = self._batch_interval
            if self._busy_batch_interval > interval and self._loop_load.saturated(now):
                interval = self._busy_batch_interval
            delay = self._last_flush + interval - now
            if delay > 0:
                self._loop.call_later(delay, self.flush)
            elif not self._flush_queued:
                self._flush_queued = True
                self._loop.call_soon(self.flush)
        self._pending.append(data)
        self._pending_end = end_offset

    def record(self) -> None:
        """From now on every unit of the effect log goes into the backlog: at a replica's
        first resync, or when this node becomes a replica. Until then the backlog holds no
        history (a replica can only fully sync, as from a Redis primary without a backlog),
        the effect log encodes nothing for it, and `flush` only moves its end along."""
        if self.recording or self.backlog is None:
            return
        self.flush()
        self.recording = True
        self.server.effects.add_listener(self._unit_listener)

    def flush_soon(self) -> None:
        """Flushes at the end of this event-loop turn, whatever the batch intervals: a client
        waits for replicas (WAIT). One flush for all the WAITs of a turn: with 50 clients each
        sending XADD + WAIT, a flush per WAIT (a backlog append and its listeners each) cost
        the primary a fifth of its CPU, and the replica stream could take no more of them
        sooner (its pump runs after this turn either way)."""
        if self._pending and not self._flush_queued and self._loop is not None:
            self._flush_queued = True
            self._loop.call_soon(self.flush)

    def flush(self) -> None:
        """Moves the units committed so far into the backlog: once per event-loop turn (or
        at most every repl-batch-interval under load, when set, and every
        repl-busy-batch-interval while this loop is saturated), at the end of the turn when a
        client waits for replicas (WAIT, `flush_soon`), at once for WAITAOF, and before
        anything reads the backlog's end (snapshot, INFO, ROLE, a role change)."""
        self._flush_queued = False
        if not self.recording:
            if self.backlog is not None and self.backlog.end != self.server.effects.offset:
                self.backlog.skip_to(self.server.effects.offset)
            return
        pending = self._pending
        if not pending or self.backlog is None:
            return
        self._pending = []
        self._last_flush = time.monotonic()
        backlog = self.backlog
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        # The units end where the effect log did when the last was committed; the backlog
        # must end where they start (a bug otherwise: nothing is stored, see check_follower).
        if backlog.end + len(data) != self._pending_end:
            raise PositionMismatch(f"the backlog ends at offset {backlog.end}, but the units flushed to it "
                                   f"start at {self._pending_end - len(data)}")
        backlog.extend(data, [len(unit) for unit in pending])

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "repl-batch-interval":
            self._batch_interval = int(value) / 1000
        elif name == "repl-busy-batch-interval":
            self._busy_batch_interval = int(value) / 1000
