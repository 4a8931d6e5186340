"""The deadlines of one database's volatile keys: Redis's `db->expires`.

Kept beside the database's dict, never in the values, so a key without a time to live costs
nothing (no field in any value, no entry here) and a database without volatile keys costs an
empty dict. Pure data: no I/O, no clock; time comes in as an argument.

Rules (Redis 7.2, db.c and expire.c):
* a deadline is an absolute unix time in milliseconds, any signed 64-bit value (EXPIREAT
  with a negative time is allowed);
* a key is logically expired once the time is *past* its deadline (`now > deadline`,
  keyIsExpired), so at `now == deadline` it still exists;
* a key's deadline leaves with the key; which writes keep it is the command layer's rule.

The deadlines are also kept in a min-heap of (deadline, key). The active expiry cycle pops
it in deadline order, so it reclaims exactly the keys that are due and never samples a live
one; its top, the earliest deadline, tells every command at once whether any key at all can
be expired, which spares a lookup per key while none can. Setting a deadline pushes an
entry; removing or changing one leaves the old entry behind, stale, dropped as soon as it
reaches the top (the top is always live); the heap is rebuilt from the dict (O(n), amortised
O(1) per change) whenever it holds more than twice as many entries as there are volatile
keys, plus a constant.
"""

from __future__ import annotations

import heapq
from typing import Final

# The heap is rebuilt when it holds more than this many entries beyond twice the live ones.
_STALE_SLACK: Final = 64
_NEVER: Final = 1 << 63


class Expires:
    """Deadline per volatile key, with the heap the active expiry cycle pops."""

    __slots__ = ("deadlines", "_heap", "_total")

    def __init__(self) -> None:
        # key -> deadline (unix ms). Read directly on hot paths: empty means no volatile key.
        self.deadlines: dict[bytes, int] = {}
        self._heap: list[tuple[int, bytes]] = []
        self._total = 0  # sum of the deadlines: the average TTL in O(1)

    def __len__(self) -> int:
        return len(self.deadlines)

    def get(self, key: bytes) -> int | None:
        return self.deadlines.get(key)

    def set(self, key: bytes, when: int) -> None:
        deadlines = self.deadlines
        old = deadlines.get(key)
        if old == when:
            return
        if old is not None:
            self._total -= old
        deadlines[key] = when
        self._total += when
        heap = self._heap
        heapq.heappush(heap, (when, key))
        if len(heap) > 2 * len(deadlines) + _STALE_SLACK:
            self._rebuild()
        elif old is not None:
            self._drop_stale_top()

    def remove(self, key: bytes) -> bool:
        """Forget key's deadline (PERSIST, a deletion, an overwrite); False if it had none."""
        when = self.deadlines.pop(key, None)
        if when is None:
            return False
        self._total -= when
        if not self.deadlines:
            self._heap.clear()
        elif len(self._heap) > 2 * len(self.deadlines) + _STALE_SLACK:
            self._rebuild()
        else:
            self._drop_stale_top()
        return True

    def clear(self) -> None:
        self.deadlines.clear()
        self._heap.clear()
        self._total = 0

    def replace_with(self, other: Expires) -> None:
        """Take other's deadlines in place (this object stays the one sessions point at)."""
        self.deadlines.clear()
        self.deadlines.update(other.deadlines)
        self._heap = list(other._heap)
        self._total = other._total

    def earliest(self) -> int:
        """The earliest deadline (the heap's top, kept live): until it has passed no key can
        be expired, which spares commands a lookup per key. Large without deadlines."""
        heap = self._heap
        return heap[0][0] if heap else _NEVER

    def is_expired(self, key: bytes, now: int) -> bool:
        when = self.deadlines.get(key)
        return when is not None and now > when

    def pop_due(self, now: int, limit: int) -> list[bytes]:
        """Up to `limit` keys whose deadline is past at `now`, earliest deadline first, their
        deadlines removed: the caller deletes the keys themselves."""
        heap = self._heap
        deadlines = self.deadlines
        due: list[bytes] = []
        while heap and len(due) < limit:
            when, key = heap[0]
            if deadlines.get(key) != when:
                heapq.heappop(heap)  # stale: persisted, deleted or given another deadline
                continue
            if not now > when:
                break
            heapq.heappop(heap)
            del deadlines[key]
            self._total -= when
            due.append(key)
        if len(heap) > 2 * len(deadlines) + _STALE_SLACK:
            self._rebuild()
        return due

    def average_ttl(self, now: int) -> int:
        """Mean of the remaining times to live in ms (INFO keyspace avg_ttl); 0 without keys."""
        count = len(self.deadlines)
        if not count:
            return 0
        return max(self._total // count - now, 0)

    def _drop_stale_top(self) -> None:
        """Pop stale entries off the top, so that the top is always a live deadline."""
        heap = self._heap
        deadlines = self.deadlines
        while heap:
            when, key = heap[0]
            if deadlines.get(key) == when:
                return
            heapq.heappop(heap)

    def _rebuild(self) -> None:
        heap = [(when, key) for key, when in self.deadlines.items()]
        heapq.heapify(heap)
        self._heap = heap

    def _check(self) -> None:
        """Assert the invariants: every deadline has a heap entry, the sum is right, the
        heap is a heap and no larger than the bound."""
        live = {(when, key) for key, when in self.deadlines.items()}
        assert live <= set(self._heap), "a deadline without a heap entry"
        assert self._total == sum(self.deadlines.values())
        assert len(self._heap) <= 2 * len(self.deadlines) + _STALE_SLACK
        heap = self._heap
        for i in range(1, len(heap)):
            assert heap[(i - 1) // 2] <= heap[i], "heap order broken"
        if heap:
            assert self.deadlines.get(heap[0][1]) == heap[0][0], "a stale entry on top"
            assert self.earliest() == min(self.deadlines.values())
