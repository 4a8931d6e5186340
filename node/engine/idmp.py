"""Idempotent production (Redis 8.6's XADD IDMP / IDMPAUTO): what one stream remembers of the
idempotent IDs it was given, per producer, and for how long.

A stream's `IdmpState` maps each producer ID (pid) to the idempotent IDs (iids) it added and
the entry each one became. An XADD whose (pid, iid) is still remembered adds nothing and
answers the original entry's ID, even if that entry was deleted or trimmed since: trimming
and XDEL never touch this map. The rules, as Redis 8.6's tests (tests/unit/type/stream.tcl)
pin them:

* producers are isolated: the same iid under two pids is two entries;
* IDMP-MAXSIZE is per producer, first in first out: past it, the producer's oldest iid is
  forgotten. Answering a duplicate does not refresh an iid's place;
* IDMP-DURATION (seconds): an iid is forgotten that long after its entry was added;
* changing either value (XCFGSET) forgets every producer's iids; the lifetime counters
  (iids-added, iids-duplicates) stay.

Time. The engine reads no clock, and replicas must reach the primary's decisions, so an iid's
age is measured from its entry's ID: IDMP takes only auto-generated IDs, whose millisecond is
the primary's clock at the add (or later, when the stream's last ID is ahead of the clock).
Lookups compare that with the caller's `now_ms` and change nothing; every change (recording
an iid, forgetting expired or surplus ones) is a function of the recorded entry IDs, so
replaying the log's effects rebuilds exactly the same map. Redis expires iids from a timer;
here an iid that is due is ignored by lookups at once and physically dropped by the next
record on the stream: its producer's expired iids leave the head of its FIFO, and a producer
whose newest iid expired leaves whole. `tracked` counts what a lookup would still see.

Order invariants (`_check`): each producer's iids ascend by entry ID (the FIFO: XADD always
records the stream's newest ID), and producers ascend by their newest iid's entry ID, so the
producer at the head is the first to expire whole.
"""

from __future__ import annotations

import hashlib
import sys
from collections import OrderedDict
from collections.abc import Sequence
from typing import Final

DEFAULT_DURATION: Final = 100  # stream-idmp-duration's default, in seconds
DEFAULT_MAXSIZE: Final = 100  # stream-idmp-maxsize's default
MIN_DURATION: Final = 1
MAX_DURATION: Final = 86400
MIN_MAXSIZE: Final = 1
MAX_MAXSIZE: Final = 10000

Iids = OrderedDict[bytes, int]  # iid -> entry ID, ascending by entry ID


class IdmpState:
    """A stream's IDMP settings, its producers' remembered iids and its lifetime counters."""

    __slots__ = ("duration", "maxsize", "producers", "added", "duplicates")

    duration: int  # seconds an iid is remembered after its entry's millisecond
    maxsize: int  # iids remembered per producer
    producers: OrderedDict[bytes, Iids]  # pid -> its iids; ascending by newest entry ID, none empty
    added: int  # iids ever recorded (XINFO iids-added)
    duplicates: int  # duplicate XADDs answered (XINFO iids-duplicates)

    def __init__(self, duration: int = DEFAULT_DURATION, maxsize: int = DEFAULT_MAXSIZE) -> None:
        self.duration = duration
        self.maxsize = maxsize
        self.producers = OrderedDict()
        self.added = 0
        self.duplicates = 0

    # -- reading -----------------------------------------------------------------------------

    def expired(self, entry_id: int, now_ms: int) -> bool:
        """Whether an iid recorded as `entry_id` is forgotten at `now_ms`."""
        return now_ms - (entry_id >> 64) >= self.duration * 1000

    def lookup(self, pid: bytes, iid: bytes, now_ms: int) -> int | None:
        """The entry ID (pid, iid) was added as, if it is still remembered at `now_ms`."""
        iids = self.producers.get(pid)
        if iids is None:
            return None
        entry_id = iids.get(iid)
        if entry_id is None or self.expired(entry_id, now_ms):
            return None
        return entry_id

    def find(self, pid: bytes, iid: bytes) -> int | None:
        """The entry ID (pid, iid) is recorded as, expired or not (replaying the log)."""
        iids = self.producers.get(pid)
        return iids.get(iid) if iids is not None else None

    def tracked(self, now_ms: int) -> tuple[int, int]:
        """(pids-tracked, iids-tracked): producers holding an iid a lookup at `now_ms` would
        see, and those iids. Expired iids sit at the head of each FIFO."""
        pids = iids_total = 0
        for iids in self.producers.values():
            live = len(iids)
            for entry_id in iids.values():
                if not self.expired(entry_id, now_ms):
                    break
                live -= 1
            if live:
                pids += 1
                iids_total += live
        return pids, iids_total

    def pristine(self) -> bool:
        """Whether this is the state of a stream that never saw IDMP under default settings
        (snapshots and digests leave such a state out, as if the stream had none)."""
        return (
            self.duration == DEFAULT_DURATION
            and self.maxsize == DEFAULT_MAXSIZE
            and not self.producers
            and not self.added
            and not self.duplicates
        )

    # -- writing -----------------------------------------------------------------------------

    def record(self, pid: bytes, iid: bytes, entry_id: int) -> None:
        """Remember (pid, iid) as `entry_id`, replacing what it was recorded as. First drops what
        is expired at the entry's millisecond (this producer's expired iids, producers whose
        newest iid expired), then the producer's oldest iids beyond IDMP-MAXSIZE."""
        now = entry_id >> 64
        producers = self.producers
        while producers:
            if not self.expired(_newest(producers[next(iter(producers))]), now):
                break
            producers.popitem(last=False)
        iids = producers.get(pid)
        if iids is None:
            iids = producers[pid] = OrderedDict()
        else:
            while iids and self.expired(iids[next(iter(iids))], now):
                iids.popitem(last=False)
            iids.pop(iid, None)
        if iids and entry_id < _newest(iids):
            # Only XIDMPRECORD names an older entry: keep the FIFO in entry order.
            ordered = sorted([*iids.items(), (iid, entry_id)], key=lambda item: item[1])
            iids.clear()
            iids.update(ordered)
        else:
            iids[iid] = entry_id
        while len(iids) > self.maxsize:
            iids.popitem(last=False)
        self._place(pid, iids)
        self.added += 1

    def _place(self, pid: bytes, iids: Iids) -> None:
        """Keep producers ascending by newest entry ID after `pid`'s newest may have moved
        (an XADD's record makes it the newest of all: a move to the end)."""
        producers = self.producers
        newest = _newest(iids)
        behind = reversed(producers)
        last = next(behind)
        if last != pid:
            if newest >= _newest(producers[last]):
                producers.move_to_end(pid)
                return
        else:
            before = next(behind, None)
            if before is None or _newest(producers[before]) <= newest:
                return
        # Only XIDMPRECORD gets here.
        ordered = sorted(producers.items(), key=lambda item: _newest(item[1]))
        producers.clear()
        producers.update(ordered)

    def configure(self, duration: int, maxsize: int) -> bool:
        """XCFGSET: set both values; if either changes, forget every producer's iids (the
        counters stay). Returns whether anything changed."""
        if (duration, maxsize) == (self.duration, self.maxsize):
            return False
        self.duration = duration
        self.maxsize = maxsize
        self.producers.clear()
        return True

    # -- whole-state operations --------------------------------------------------------------

    def copy(self) -> IdmpState:
        clone = IdmpState(self.duration, self.maxsize)
        clone.producers = OrderedDict((pid, OrderedDict(iids)) for pid, iids in self.producers.items())
        clone.added = self.added
        clone.duplicates = self.duplicates
        return clone

    def memory_bytes(self) -> int:
        getsizeof = sys.getsizeof
        total = getsizeof(self) + getsizeof(self.producers)
        for pid, iids in self.producers.items():
            total += getsizeof(pid) + getsizeof(iids)
            total += sum(getsizeof(iid) + getsizeof(entry_id) for iid, entry_id in iids.items())
        return total

    def _check(self) -> None:
        """Assert the invariants of the module docstring."""
        assert MIN_DURATION <= self.duration <= MAX_DURATION
        assert MIN_MAXSIZE <= self.maxsize <= MAX_MAXSIZE
        assert self.added >= 0 and self.duplicates >= 0
        previous_newest = -1
        for pid, iids in self.producers.items():
            assert pid and iids, "an empty producer ID or a producer without iids"
            assert len(iids) <= self.maxsize
            ids = list(iids.values())
            assert ids == sorted(ids), "a producer's iids out of entry order"
            assert all(iids), "an empty iid"
            assert ids[-1] >= previous_newest, "producers out of order"
            previous_newest = ids[-1]


def _newest(iids: Iids) -> int:
    """The entry ID of a producer's newest iid (its FIFO's tail)."""
    return iids[next(reversed(iids))]


def auto_iid(argv: Sequence[bytes], first: int) -> bytes:
    """IDMPAUTO's idempotent ID for the fields argv[first:]: 16 bytes that depend on the set of
    (field, value) pairs and not on their order. Redis XORs an XXH128 per pair; Rill hashes
    the sorted per-pair BLAKE2b digests instead, so that two identical pairs do not cancel out.
    Only the primary computes it: the log carries the result (docs/compatibility.md)."""
    digests = []
    for i in range(first, len(argv) - 1, 2):
        h = hashlib.blake2b(digest_size=16)
        h.update(b"%d:" % len(argv[i]))
        h.update(argv[i])
        h.update(argv[i + 1])
        digests.append(h.digest())
    digests.sort()
    return hashlib.blake2b(b"".join(digests), digest_size=16).digest()
