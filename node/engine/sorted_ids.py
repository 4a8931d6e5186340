"""Sorted containers of stream IDs for the pending entries lists, compiled with the engine.

`SortedIds` is a sorted set of ints kept as a list of sorted chunks (the layout of
sortedcontainers.SortedList: bisect the chunk maxima, then the chunk; a chunk splits in two
when it doubles its load), and `PendingMap` a dict from ID to value ordered by a
`SortedIds`.  They replace sortedcontainers' SortedList/SortedDict, which are interpreted
Python: every XREADGROUP delivery and XACK went through a few microseconds of it.

Pending IDs mostly arrive in ascending order (XREADGROUP '>' delivers past the group's last
ID), so an ID above the current maximum is appended without bisecting.  Neither container
may be modified while one of its iterators is in use.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from typing import Any, Final

# Chunk size: a chunk splits past twice this.  Inserting in the middle of a chunk moves at
# most 2 * LOAD pointers; sortedcontainers' default.
LOAD: Final = 1000


class SortedIds:
    """A sorted set of ints (a consumer's pending IDs; the order of a PendingMap)."""

    __slots__ = ("_chunks", "_maxes", "_len", "_load")

    def __init__(self, ids: Iterable[int] = (), load: int = LOAD) -> None:
        self._chunks: list[list[int]] = []
        self._maxes: list[int] = []
        self._load = load  # a parameter so that tests can split chunks with few IDs
        values = sorted(set(ids))
        for i in range(0, len(values), load):
            chunk = values[i : i + load]
            self._chunks.append(chunk)
            self._maxes.append(chunk[-1])
        self._len = len(values)

    def __len__(self) -> int:
        return self._len

    def __bool__(self) -> bool:
        return self._len > 0

    def _locate(self, x: int) -> tuple[int, int]:
        """(chunk, index) of x; (-1, -1) if x is not here."""
        maxes = self._maxes
        pos = bisect_left(maxes, x)
        if pos == len(maxes):
            return -1, -1
        i = bisect_left(self._chunks[pos], x)
        return (pos, i) if self._chunks[pos][i] == x else (-1, -1)

    def __contains__(self, x: int) -> bool:
        return self._locate(x)[0] >= 0

    def add(self, x: int) -> bool:
        """Insert x; False if it was already there."""
        maxes = self._maxes
        if not maxes:
            self._chunks.append([x])
            maxes.append(x)
            self._len = 1
            return True
        pos = len(maxes) - 1
        if x > maxes[pos]:
            # The common case: a new highest ID.
            chunk = self._chunks[pos]
            chunk.append(x)
            maxes[pos] = x
        else:
            pos = bisect_left(maxes, x)
            chunk = self._chunks[pos]
            i = bisect_left(chunk, x)
            if chunk[i] == x:
                return False
            chunk.insert(i, x)
        self._len += 1
        load = self._load
        if len(chunk) > 2 * load:
            self._chunks.insert(pos + 1, chunk[load:])
            del chunk[load:]
            maxes.insert(pos, chunk[-1])
        return True

    def discard(self, x: int) -> bool:
        """Remove x; False if it was not there."""
        pos, i = self._locate(x)
        if pos < 0:
            return False
        maxes = self._maxes
        chunk = self._chunks[pos]
        del chunk[i]
        self._len -= 1
        if not chunk:
            del self._chunks[pos]
            del maxes[pos]
        elif i == len(chunk):
            maxes[pos] = chunk[-1]
        return True

    def remove(self, x: int) -> None:
        if not self.discard(x):
            raise KeyError(x)

    def first(self) -> int:
        return self._chunks[0][0]

    def last(self) -> int:
        return self._maxes[-1]

    def __iter__(self) -> Iterator[int]:
        for chunk in self._chunks:
            yield from chunk

    def irange(self, lo: int, hi: int | None = None) -> Iterator[int]:
        """IDs in [lo, hi] (no upper bound when hi is None), ascending."""
        maxes = self._maxes
        pos = bisect_left(maxes, lo)
        chunks = self._chunks
        if pos == len(chunks):
            return
        i = bisect_left(chunks[pos], lo)
        while pos < len(chunks):
            chunk = chunks[pos]
            if hi is not None and chunk[-1] > hi:
                end = bisect_right(chunk, hi)
                while i < end:
                    yield chunk[i]
                    i += 1
                return
            while i < len(chunk):
                yield chunk[i]
                i += 1
            pos += 1
            i = 0

    # -- lazy removal (PendingMap, a consumer's IDs): sweeps and trims drop the ghosts -------

    def _keep_only(self, pos: int, keep: dict[int, Any]) -> int:
        """Filter one chunk (`pos`, or the first when pos is past the end) down to the IDs in
        `keep`; returns the chunk to filter next."""
        pos = self._sweep_pos(pos)
        if pos < 0:
            return 0
        return self._replace_chunk(pos, [x for x in self._chunks[pos] if x in keep])

    def _keep_owned(self, pos: int, pending: PendingMap, owner: bytes) -> int:
        """Filter one chunk (as _keep_only) down to the IDs `pending` has with this owner (a
        value's item 2); returns the chunk to filter next."""
        pos = self._sweep_pos(pos)
        if pos < 0:
            return 0
        values = pending._values
        kept = []
        for x in self._chunks[pos]:
            value = values.get(x)
            if value is not None and value[2] == owner:
                kept.append(x)
        return self._replace_chunk(pos, kept)

    def _sweep_pos(self, pos: int) -> int:
        """The chunk a sweep at `pos` filters: pos, 0 once past the end, -1 with no chunk."""
        if pos < len(self._chunks):
            return pos
        return 0 if self._chunks else -1

    def _replace_chunk(self, pos: int, kept: list[int]) -> int:
        """Chunk `pos` keeps only `kept` (a subsequence of it; deleted when empty); returns
        the position of the chunk after it."""
        chunk = self._chunks[pos]
        removed = len(chunk) - len(kept)
        if not removed:
            return pos + 1
        self._len -= removed
        if kept:
            self._chunks[pos] = kept
            self._maxes[pos] = kept[-1]
            return pos + 1
        del self._chunks[pos]
        del self._maxes[pos]
        return pos  # its successor moved here

    def _trim_front(self, keep: dict[int, Any]) -> int:
        """Drop the leading IDs that are not in `keep`; how many went."""
        chunks = self._chunks
        removed = 0
        while chunks:
            chunk = chunks[0]
            i = 0
            n = len(chunk)
            while i < n and chunk[i] not in keep:
                i += 1
            removed += i
            if i < n:
                del chunk[:i]
                break
            del chunks[0]
            del self._maxes[0]
        self._len -= removed
        return removed

    def _trim_back(self, keep: dict[int, Any]) -> int:
        """Drop the trailing IDs that are not in `keep`; how many went."""
        chunks = self._chunks
        maxes = self._maxes
        removed = 0
        while chunks:
            chunk = chunks[-1]
            n = len(chunk)
            j = n
            while j > 0 and chunk[j - 1] not in keep:
                j -= 1
            removed += n - j
            if j > 0:
                del chunk[j:]
                maxes[-1] = chunk[-1]
                break
            chunks.pop()
            maxes.pop()
        self._len -= removed
        return removed

    def copy(self) -> SortedIds:
        c = SortedIds((), self._load)
        c._chunks = [chunk[:] for chunk in self._chunks]
        c._maxes = self._maxes[:]
        c._len = self._len
        return c

    def _check(self) -> None:
        assert len(self._chunks) == len(self._maxes)
        assert sum(len(c) for c in self._chunks) == self._len
        prev = -1
        for chunk, top in zip(self._chunks, self._maxes):
            assert chunk and len(chunk) <= 2 * self._load and chunk[-1] == top
            for x in chunk:
                assert x > prev
                prev = x


class PendingMap:
    """A dict from ID to value, iterated in ID order (a group's pending entries list).

    Removal is lazy: popping a key takes it out of the dict only, and the order keeps it as
    a ghost that readers skip.  An XACK of a random pending ID then costs one hash lookup
    instead of a bisect through chunks of int objects (every compare there is a cache miss
    on a large PEL).  `first`/`last` trim the ghosts they step over at the ends, and pops
    sweep one chunk at a time (a rotating cursor) while ghosts outnumber live keys, so ghosts
    stay about as many as live keys and no single call filters more than one chunk."""

    __slots__ = ("_values", "_ids", "_ghosts", "_sweep")

    def __init__(self, items: Iterable[tuple[int, Any]] = (), load: int = LOAD) -> None:
        self._values: dict[int, Any] = dict(items)
        self._ids = SortedIds(self._values, load)
        self._ghosts = 0  # keys in _ids that are not in _values
        self._sweep = 0  # the chunk the next sweep filters

    def __len__(self) -> int:
        return len(self._values)

    def __bool__(self) -> bool:
        return len(self._values) > 0

    def __contains__(self, key: int) -> bool:
        return key in self._values

    def __getitem__(self, key: int) -> Any:
        return self._values[key]

    def get(self, key: int) -> Any:
        """The value, or None."""
        return self._values.get(key)

    def __setitem__(self, key: int, value: Any) -> None:
        values = self._values
        n = len(values)
        values[key] = value
        if len(values) != n and not self._ids.add(key):
            self._ghosts -= 1  # the key was a ghost: it is live again

    def pop(self, key: int) -> Any:
        """Remove key; its value, or None if it was not there."""
        value = self._values.pop(key, None)
        if value is not None:
            self._ghosts += 1
            if self._ghosts > len(self._values) + (self._ids._load >> 4):
                self._sweep_chunk()
        return value

    def __delitem__(self, key: int) -> None:
        if self.pop(key) is None:
            raise KeyError(key)

    def _sweep_chunk(self) -> None:
        ids = self._ids
        held = len(ids)
        self._sweep = ids._keep_only(self._sweep, self._values)
        self._ghosts -= held - len(ids)

    def first(self) -> int:
        ids = self._ids
        self._ghosts -= ids._trim_front(self._values)
        return ids.first()

    def last(self) -> int:
        ids = self._ids
        self._ghosts -= ids._trim_back(self._values)
        return ids.last()

    def __iter__(self) -> Iterator[int]:
        values = self._values
        for key in self._ids:
            if key in values:
                yield key

    def keys(self) -> Iterator[int]:
        return iter(self)

    def values(self) -> Iterator[Any]:
        values = self._values
        for key in self._ids:
            value = values.get(key)
            if value is not None:
                yield value

    def items(self) -> Iterator[tuple[int, Any]]:
        values = self._values
        for key in self._ids:
            value = values.get(key)
            if value is not None:
                yield key, value

    def irange(self, lo: int, hi: int | None = None) -> Iterator[int]:
        """Keys in [lo, hi] (no upper bound when hi is None), ascending."""
        values = self._values
        for key in self._ids.irange(lo, hi):
            if key in values:
                yield key

    def copy(self) -> PendingMap:
        return PendingMap(self._values.items(), self._ids._load)

    def _check(self) -> None:
        ids = self._ids
        ids._check()
        values = self._values
        assert len(ids) == len(values) + self._ghosts
        assert all(key in ids for key in values)
