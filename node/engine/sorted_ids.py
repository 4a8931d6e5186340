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
    """A dict from ID to value, iterated in ID order (a group's pending entries list)."""

    __slots__ = ("_values", "_ids")

    def __init__(self, items: Iterable[tuple[int, Any]] = (), load: int = LOAD) -> None:
        self._values: dict[int, Any] = dict(items)
        self._ids = SortedIds(self._values, load)

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
        if len(values) != n:
            self._ids.add(key)

    def pop(self, key: int) -> Any:
        """Remove key; its value, or None if it was not there."""
        value = self._values.pop(key, None)
        if value is not None:
            self._ids.discard(key)
        return value

    def __delitem__(self, key: int) -> None:
        del self._values[key]
        self._ids.discard(key)

    def first(self) -> int:
        return self._ids.first()

    def last(self) -> int:
        return self._ids.last()

    def __iter__(self) -> Iterator[int]:
        return iter(self._ids)

    def keys(self) -> Iterator[int]:
        return iter(self._ids)

    def values(self) -> Iterator[Any]:
        values = self._values
        for key in self._ids:
            yield values[key]

    def items(self) -> Iterator[tuple[int, Any]]:
        values = self._values
        for key in self._ids:
            yield key, values[key]

    def irange(self, lo: int, hi: int | None = None) -> Iterator[int]:
        """Keys in [lo, hi] (no upper bound when hi is None), ascending."""
        return self._ids.irange(lo, hi)

    def copy(self) -> PendingMap:
        c = PendingMap((), self._ids._load)
        c._values = dict(self._values)
        c._ids = self._ids.copy()
        return c

    def _check(self) -> None:
        self._ids._check()
        assert len(self._ids) == len(self._values)
        for key in self._ids:
            assert key in self._values
