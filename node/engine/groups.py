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

Redis 8.8's XNACK releases a pending entry without acknowledging it: the entry stays in the
group PEL with no owner (`UNOWNED`) and delivery time 0, and joins the group's NACK zone
(`nacked`, first released first), which XREADGROUP CLAIM serves before any other idle entry.
Redis 8.4's CLAIM serves the other idle entries oldest delivery first: `by_time`, built the
first time a group is claimed from and kept exact after that, orders the owned pending
entries by (delivery time, ID).

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

Nack = tuple[int, int, bytes | None]  # (delivery_time ms, delivery_count, owner consumer name)

# The owner of a pending entry released by XNACK (Redis: nack->consumer == NULL). Not b"": an
# empty consumer name is a valid one.
UNOWNED: Final = None

# XNACK FATAL's delivery count (LLONG_MAX): the entry is not to be tried again.
FATAL_DELIVERIES: Final = (1 << 63) - 1


def one_more(delivery_count: int) -> int:
    """A delivery count after one more delivery. It stops at LLONG_MAX (XNACK FATAL's count)
    rather than pass what a RESP integer can carry."""
    return delivery_count + 1 if delivery_count < FATAL_DELIVERIES else delivery_count


def time_key(delivery_time: int, entry_id: int) -> int:
    """An owned pending entry's place in ConsumerGroup.by_time: delivery time, then ID."""
    return (delivery_time << 128) | entry_id


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

    __slots__ = ("by_time", "consumers", "dead_letter", "entries_read", "last_id", "nacked", "pel", "_fresh")

    last_id: int  # last ID delivered to the group (new reads are served after it)
    entries_read: int  # logical read counter of last_id; INVALID_ENTRIES_READ if unknown
    pel: PendingMap  # ID -> Nack, every pending entry of the group
    consumers: dict[bytes, Consumer]
    # The NACK zone: the IDs of the UNOWNED pending entries, in the order XNACK released them
    # (Redis keeps them at the head of its time-ordered PEL, FIFO).
    nacked: dict[int, None]
    # time_key of every owned pending entry, once a CLAIM read needed it; None until then.
    by_time: SortedIds | None
    # Rill's dead-letter policy (node.engine.dead_letters.DeadLetterPolicy), None without one.
    dead_letter: Any

    def __init__(self, last_id: int, entries_read: int = INVALID_ENTRIES_READ) -> None:
        self.last_id = last_id
        self.entries_read = entries_read
        self.pel = PendingMap()
        self.consumers = {}
        self.nacked = {}
        self.by_time = None
        self.dead_letter = None
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
        if self.by_time is not None:
            for entry_id in self.owned(c):
                self.by_time.discard(time_key(pel[entry_id][0], entry_id))
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
            self._released(entry_id, old)
        if self.by_time is not None:
            self.by_time.add(time_key(now_ms, entry_id))
        consumer._ids.add(entry_id)
        consumer.pending += 1
        nack: Nack = fresh
        return nack

    def redeliver(self, entry_id: int, now_ms: int) -> Nack:
        """The owner read `entry_id` again from its history: one more delivery, now."""
        t, count, owner = self.pel[entry_id]
        nack = (now_ms, one_more(count), owner)
        self.pel[entry_id] = nack
        if self.by_time is not None:
            self.by_time.discard(time_key(t, entry_id))
            self.by_time.add(time_key(now_ms, entry_id))
        return nack

    def assign(self, entry_id: int, consumer: Consumer, delivery_time: int, delivery_count: int) -> Nack:
        """Give the pending (or new) entry `entry_id` to `consumer` with these delivery
        attributes (XCLAIM, XAUTOCLAIM)."""
        pel = self.pel
        old = pel.get(entry_id)
        nack = (delivery_time, delivery_count, consumer.name)
        pel[entry_id] = nack
        by_time = self.by_time
        if by_time is not None:
            if old is not None and old[2] is not UNOWNED:
                by_time.discard(time_key(old[0], entry_id))
            by_time.add(time_key(delivery_time, entry_id))
        if old is None or old[2] != consumer.name:
            if old is not None:
                self._released(entry_id, old, False)
            consumer._ids.add(entry_id)
            consumer.pending += 1
        return nack

    def ack(self, entry_id: int) -> Nack | None:
        """Remove a pending entry (XACK, or a claim of a deleted entry); returns it."""
        nack: Nack | None = self.pel.pop(entry_id)
        if nack is not None:
            self._released(entry_id, nack)
        return nack

    def nack(self, entry_id: int, delivery_count: int) -> Nack:
        """XNACK: the pending (or, with FORCE, new) entry `entry_id` loses its owner, gets
        delivery time 0 and this count, and goes to the end of the NACK zone (an entry
        already there moves to its end)."""
        old = self.pel.get(entry_id)
        nack: Nack = (0, delivery_count, UNOWNED)
        self.pel[entry_id] = nack
        if old is not None:
            self._released(entry_id, old)
        self.nacked[entry_id] = None
        return nack

    def _released(self, entry_id: int, old: Nack, untime: bool = True) -> None:
        """`entry_id` no longer belongs where `old` put it: its owner's PEL (and with
        `untime` the time index) or the NACK zone."""
        owner = old[2]
        if owner is UNOWNED:
            del self.nacked[entry_id]
            return
        if untime and self.by_time is not None:
            self.by_time.discard(time_key(old[0], entry_id))
        self._lost(self.consumers[owner])

    def _lost(self, consumer: Consumer) -> None:
        """`consumer` no longer owns one of its entries (the group PEL already says so): the
        ID stays in its order as a ghost; a sweep filters one chunk while ghosts outnumber
        the live IDs."""
        consumer.pending -= 1
        ids = consumer._ids
        if len(ids) - consumer.pending > consumer.pending + _GHOST_SLACK:
            consumer._sweep = ids._keep_owned(consumer._sweep, self.pel, consumer.name)

    def claim_order(self) -> SortedIds:
        """The time index of the owned pending entries (built on first use)."""
        by_time = self.by_time
        if by_time is None:
            by_time = self.by_time = SortedIds(
                time_key(nack[0], entry_id) for entry_id, nack in self.pel.items() if nack[2] is not UNOWNED
            )
        return by_time

    def idle_entries(self, now_ms: int, min_idle: int, count: int) -> list[int]:
        """XREADGROUP CLAIM's candidates, at most `count` (0: all): the NACK zone first, in
        release order (delivery time 0 satisfies any idle time), then owned entries idle for
        at least `min_idle` ms, longest idle first."""
        out = list(self.nacked)
        if count and len(out) >= count:
            return out[:count]
        latest = now_ms - min_idle  # delivered at or before this time
        low = (1 << 128) - 1
        for key in self.claim_order():
            if key >> 128 > latest:
                break
            out.append(key & low)
            if count and len(out) >= count:
                break
        return out

    def next_claimable_at(self, min_idle: int) -> int | None:
        """When the next owned entry becomes idle for `min_idle` ms (a blocked CLAIM read
        waits until then); None with no owned pending entry."""
        by_time = self.claim_order()
        if not by_time:
            return None
        return (by_time.first() >> 128) + min_idle

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
        g.nacked = dict(self.nacked)
        g.dead_letter = self.dead_letter
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
        assert owned + len(self.nacked) == len(self.pel), "group PEL entry neither owned nor NACKed"
        for entry_id, nack in self.pel.items():
            if nack[2] is UNOWNED:
                continue
            holder = self.consumers.get(nack[2])
            assert holder is None or entry_id in holder._ids, "pending entry missing from its owner's IDs"
        self.pel._check()
        unowned = []
        for entry_id, nack in self.pel.items():
            assert type(entry_id) is int and 0 <= entry_id < 1 << 128
            assert type(nack) is tuple and len(nack) == 3
            t, count, owner = nack
            assert type(t) is int and type(count) is int
            assert count >= 0
            if owner is UNOWNED:
                assert t == 0, "a NACKed entry keeps delivery time 0"
                unowned.append(entry_id)
            else:
                assert type(owner) is bytes
                assert owner in self.consumers, "pending entry owned by an unknown consumer"
        assert sorted(self.nacked) == unowned, "the NACK zone is not the set of unowned entries"
        if self.by_time is not None:
            self.by_time._check()
            expected = sorted(time_key(n[0], i) for i, n in self.pel.items() if n[2] is not UNOWNED)
            assert list(self.by_time) == expected, "the time index is not the owned PEL"


def pending_counts(group: ConsumerGroup) -> Iterable[tuple[bytes, int]]:
    """(consumer name, pending count) for consumers with pending entries, by name
    (XPENDING summary; NACKed entries count in the total, under no consumer)."""
    return ((c.name, c.pending) for c in group.sorted_consumers() if c.pending)
