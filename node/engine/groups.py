"""Consumer groups: the last delivered ID, the read counter, the pending entries list (PEL)
and the consumers that own its entries.

This mirrors Redis's streamCG / streamConsumer / streamNACK (t_stream.c, stream.h) and owns
the rules that keep them consistent; which command does what to them lives in
`node.engine.stream_ops`.

Memory: a group can hold millions of pending entries, so a pending entry is one int key in
a PendingMap (node.engine.sorted_ids) plus one tuple `(delivery_time, delivery_count, owner_name)` of atomic values
(CPython stops tracking such tuples in the cyclic GC, so a large PEL does not slow down
collections), and one int in the owner's SortedIds. The owner is named, not referenced,
for the same reason; consumers are found by name in `consumers`.

Speed: the group PEL is the truth about who owns what. A consumer's own ordered IDs are
pruned lazily: an entry acked or claimed away stays there as a ghost until a sweep, so XACK
and XCLAIM cost the owner no bisect through its chunks (on a large PEL every compare there is
a cache miss). Readers go through `ConsumerGroup.owned`, which skips ghosts; `pending`
counts the live ones; a sweep filters one chunk whenever ghosts outnumber them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any, Final

from node.engine.sorted_ids import PendingMap, SortedIds

# Redis SCG_INVALID_ENTRIES_READ: the group's read counter is unknown.
INVALID_ENTRIES_READ: Final = -1

Nack = tuple[int, int, bytes]  # (delivery_time ms, delivery_count, owner consumer name)


# Ghosts a consumer may hold beyond its live count before sweeps start.
_GHOST_SLACK: Final = 64


class Consumer:
    """One consumer of a group (Redis streamConsumer)."""

    __slots__ = ("active_time", "name", "pending", "seen_time", "_ids", "_sweep")

    name: bytes
    seen_time: int  # last time the consumer ran a command on the group (ms)
    active_time: int  # last successful read or claim (ms); -1 = never
    pending: int  # how many pending entries it owns

    def __init__(self, name: bytes, now_ms: int) -> None:
        self.name = name
        self.seen_time = now_ms
        self.active_time = -1
        self.pending = 0
        # The IDs it owns, ascending, and ghosts of IDs it no longer owns (module docstring):
        # read through ConsumerGroup.owned.
        self._ids = SortedIds()
        self._sweep = 0  # the chunk of _ids the next sweep filters

    def load(self, ids: list[int]) -> None:
        """Set the IDs it owns (a snapshot being loaded)."""
        self._ids = SortedIds(ids)
        self.pending = len(self._ids)


class ConsumerGroup:
    """One consumer group of a stream (Redis streamCG)."""

    __slots__ = ("consumers", "entries_read", "last_id", "pel", "_fresh")

    last_id: int  # last ID delivered to the group (new reads are served after it)
    entries_read: int  # logical read counter of last_id; INVALID_ENTRIES_READ if unknown
    pel: PendingMap  # ID -> Nack, every pending entry of the group
    consumers: dict[bytes, Consumer]

    def __init__(self, last_id: int, entries_read: int = INVALID_ENTRIES_READ) -> None:
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = PendingMap()
        self.consumers = {}
        # The last first-delivery record: entries delivered to one consumer in the same
        # millisecond share it (Nacks are immutable), a few dozen bytes per pending entry.
        # Any, not Nack: compiled code holds a typed fixed-size tuple unboxed and would build
        # a new tuple object at every store.
        self._fresh: Any = None

    # -- consumers -------------------------------------------------------------------------

    def consumer(self, name: bytes) -> Consumer | None:
        return self.consumers.get(name)

    def create_consumer(self, name: bytes, now_ms: int) -> Consumer | None:
        """Add a consumer; None if one with that name exists (streamCreateConsumer)."""
        if name in self.consumers:
            return None
        c = self.consumers[name] = Consumer(name, now_ms)
        return c

    def delete_consumer(self, name: bytes) -> int:
        """Remove a consumer and its pending entries; returns how many were pending."""
        c = self.consumers.pop(name)
        pel = self.pel
        n = c.pending
        if n > 1000 and n > len(pel) // 4:
            # Past a quarter of the PEL, rebuilding it from the survivors beats deleting
            # one key at a time.
            self.pel = PendingMap([(k, v) for k, v in pel.items() if v[2] != name])
        else:
            for entry_id in list(self.owned(c)):
                del pel[entry_id]
        return n

    def sorted_consumers(self) -> list[Consumer]:
        """Consumers in Redis's rax order (names as raw bytes)."""
        return [self.consumers[n] for n in sorted(self.consumers)]

    # -- the pending entries list --------------------------------------------------------

    def deliver(self, entry_id: int, consumer: Consumer, now_ms: int) -> Nack:
        """A new delivery of `entry_id` to `consumer` (XREADGROUP '>'): a fresh pending entry
        with one delivery. An entry still pending from before (possible after XGROUP SETID
        moved the group back) changes owner and restarts its count, as Redis does."""
        pel = self.pel
        old = pel.get(entry_id)
        fresh = self._fresh
        if fresh is None or fresh[0] != now_ms or fresh[2] != consumer.name:
            fresh = self._fresh = (now_ms, 1, consumer.name)
        pel[entry_id] = fresh
        if old is not None:
            self._lost(self.consumers[old[2]])
        consumer._ids.add(entry_id)
        consumer.pending += 1
        nack: Nack = fresh
        return nack

    def redeliver(self, entry_id: int, now_ms: int) -> Nack:
        """The owner read `entry_id` again from its history: one more delivery, now."""
        t, count, owner = self.pel[entry_id]
        nack = (now_ms, count + 1, owner)
        self.pel[entry_id] = nack
        return nack

    def assign(self, entry_id: int, consumer: Consumer, delivery_time: int, delivery_count: int) -> Nack:
        """Give the pending (or new) entry `entry_id` to `consumer` with these delivery
        attributes (XCLAIM, XAUTOCLAIM)."""
        pel = self.pel
        old = pel.get(entry_id)
        nack = (delivery_time, delivery_count, consumer.name)
        pel[entry_id] = nack
        if old is None or old[2] != consumer.name:
            if old is not None:
                self._lost(self.consumers[old[2]])
            consumer._ids.add(entry_id)
            consumer.pending += 1
        return nack

    def ack(self, entry_id: int) -> Nack | None:
        """Remove a pending entry (XACK, or a claim of a deleted entry); returns it."""
        nack: Nack | None = self.pel.pop(entry_id)
        if nack is not None:
            self._lost(self.consumers[nack[2]])
        return nack

    def _lost(self, consumer: Consumer) -> None:
        """`consumer` no longer owns one of its entries (the group PEL already says so): the
        ID stays in its order as a ghost; a sweep filters one chunk while ghosts outnumber
        the live IDs."""
        consumer.pending -= 1
        ids = consumer._ids
        if len(ids) - consumer.pending > consumer.pending + _GHOST_SLACK:
            consumer._sweep = ids._keep_owned(consumer._sweep, self.pel, consumer.name)

    def owned(self, consumer: Consumer, lo: int = 0, hi: int | None = None) -> Iterator[int]:
        """The IDs pending for `consumer` in [lo, hi] (no upper bound when hi is None),
        ascending."""
        pel = self.pel
        name = consumer.name
        for entry_id in consumer._ids.irange(lo, hi):
            nack = pel.get(entry_id)
            if nack is not None and nack[2] == name:
                yield entry_id

    def pending_range(self, start: int, end: int) -> Iterator[int]:
        """Pending IDs in [start, end], ascending."""
        return self.pel.irange(start, end)

    def first_pending(self) -> int:
        return self.pel.first()

    def last_pending(self) -> int:
        return self.pel.last()

    # -- whole-group operations ------------------------------------------------------------

    def copy(self) -> ConsumerGroup:
        g = ConsumerGroup(self.last_id, self.entries_read)
        # Nack tuples are immutable, so the copies share them.
        g.pel = self.pel.copy()
        for name, c in self.consumers.items():
            nc = Consumer(name, c.seen_time)
            nc.active_time = c.active_time
            nc.load(list(self.owned(c)))
            g.consumers[name] = nc
        return g

    def memory_bytes(self) -> int:
        """Approximate bytes held (MEMORY USAGE); PEL ints and tuples estimated by size."""
        getsizeof = sys.getsizeof
        n = len(self.pel)
        total = getsizeof(self) + getsizeof(self.consumers)
        if n:
            first_id = self.pel.first()
            nack = self.pel[first_id]
            per_entry = getsizeof(first_id) + getsizeof(nack) + getsizeof(nack[0])
            # dict slot + SortedIds slot for the group, SortedIds slot for the owner.
            total += n * (per_entry + 3 * 8 + 16)
        for name, c in self.consumers.items():
            total += getsizeof(c) + getsizeof(name) + 64
        return total

    def _check(self) -> None:
        """Assert every invariant between the group PEL and the consumers' PELs."""
        assert self.entries_read >= INVALID_ENTRIES_READ
        owned = 0
        for name, c in self.consumers.items():
            assert c.name == name
            assert isinstance(c._ids, SortedIds)
            c._ids._check()
            ids = list(self.owned(c))
            assert len(ids) == c.pending, "a consumer's pending count is off"
            owned += len(ids)
        assert owned == len(self.pel), "group PEL entry not in its owner's PEL"
        for entry_id, nack in self.pel.items():
            holder = self.consumers.get(nack[2])
            assert holder is None or entry_id in holder._ids, "pending entry missing from its owner's IDs"
        self.pel._check()
        for entry_id, nack in self.pel.items():
            assert type(entry_id) is int and 0 <= entry_id < 1 << 128
            assert type(nack) is tuple and len(nack) == 3
            t, count, owner = nack
            assert type(t) is int and type(count) is int and type(owner) is bytes
            assert count >= 0
            assert owner in self.consumers, "pending entry owned by an unknown consumer"


def pending_counts(group: ConsumerGroup) -> Iterable[tuple[bytes, int]]:
    """(consumer name, pending count) for consumers with pending entries, by name
    (XPENDING summary)."""
    return ((c.name, c.pending) for c in group.sorted_consumers() if c.pending)
