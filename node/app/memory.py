"""The node's used memory as INFO, MEMORY STATS and the maxmemory check see it: an estimate
of what the data (node.engine.memory), the clients' buffers, the replication backlog and
the AOF buffer take. The interpreter itself is not counted (`used_memory_rss` has it): a
figure that falls when data is deleted, unlike the RSS, which Python's allocator rarely
gives back.

While `maxmemory` is set, the dispatcher keeps the dataset figure up to date write by write
and asks `over_maxmemory()` before each command that may add memory; the clients' buffers
and the backlog (O(clients) to sum) are summed at most every 100 ms, and the AOF buffer is
left out, as Redis leaves it out (mem_not_counted_for_evict).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Protocol

from node.engine.memory import DatasetMeter
from node.replication import info as replication_info

if TYPE_CHECKING:
    from node.config import Config
    from node.engine.keyspace import Keyspace
    from node.log.effect_log import EffectLog
    from node.persistence.service import Persistence
    from node.replication.role import ReplicationNode
    from node.server.server import Server


class MeasuredParts(Protocol):
    """The parts of a node whose memory is counted (node/app/rill_node.py's RillNode)."""

    @property
    def config(self) -> Config: ...
    @property
    def keyspace(self) -> Keyspace: ...
    @property
    def effects(self) -> EffectLog: ...
    @property
    def server(self) -> Server: ...
    @property
    def replication(self) -> ReplicationNode: ...
    @property
    def persistence(self) -> Persistence: ...

# How long the summed overhead (clients, backlog, AOF buffer) is reused by the check.
_OVERHEAD_TTL: Final = 0.1


@dataclass(frozen=True, slots=True)
class MemoryParts:
    dataset: int
    clients: int
    backlog: int
    aof_buffer: int

    @property
    def overhead(self) -> int:
        return self.clients + self.backlog + self.aof_buffer

    @property
    def used(self) -> int:
        return self.dataset + self.overhead


class MemoryAccounting:
    __slots__ = ("node", "meter", "maxmemory", "peak", "_overhead", "_overhead_at")

    def __init__(self, node: MeasuredParts) -> None:
        self.node = node
        self.meter = DatasetMeter(node.keyspace)
        self.maxmemory = 0
        self.peak = 0
        self._overhead = 0
        self._overhead_at = 0.0
        node.config.on_change(self._on_config_change)
        self._apply_maxmemory()

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "maxmemory":
            self._apply_maxmemory()

    def _apply_maxmemory(self) -> None:
        self.maxmemory = self.node.config.get_int("maxmemory")
        dispatcher = self.node.server.dispatcher
        if self.maxmemory:
            self.meter.seen = -1  # count it all once, then follow the writes
            dispatcher.limit_memory(self.over_maxmemory, self.meter)
        else:
            dispatcher.limit_memory(None, None)

    # -- the parts ---------------------------------------------------------------------------

    def dataset(self) -> int:
        return self.meter.dataset(self.node.effects.offset)

    def clients(self) -> int:
        return sum(conn.buffered_bytes() for conn in list(self.node.server.connections.values()))

    def backlog(self) -> int:
        return replication_info.backlog_memory(self.node.replication)

    def aof_buffer(self) -> int:
        return self.node.persistence.aof_buffer_length()

    def parts(self) -> MemoryParts:
        """Every part, summed now (INFO memory, MEMORY STATS); the peak follows."""
        parts = MemoryParts(self.dataset(), self.clients(), self.backlog(), self.aof_buffer())
        self.peak = max(self.peak, parts.used)
        return parts

    def over_maxmemory(self) -> bool:
        """Whether used memory is over maxmemory (the per-command check: the overhead is
        reused for up to 100 ms)."""
        now = time.monotonic()
        if now - self._overhead_at > _OVERHEAD_TTL:
            # As performEvictions, not the AOF buffer (mem_not_counted_for_evict).
            self._overhead = self.clients() + self.backlog()
            self._overhead_at = now
        used = self.dataset() + self._overhead
        if used > self.peak:
            self.peak = used
        return used > self.maxmemory
