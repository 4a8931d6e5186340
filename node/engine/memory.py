"""What the data of a keyspace takes in memory, estimated cheaply enough to check before
every write (INFO's used_memory_dataset, the maxmemory check).

A key costs its bytes object, its dict slot and its value: a string its bytes object, a
stream `StreamValue.memory_estimate()` (O(1) amortized: node sizes are kept as nodes come
and go). `DatasetMeter` keeps the sum up to date from the writes the dispatcher measures
(the size of the keys a write names, before and after it runs); anything else that changed
the data (a replica applying its primary's log, AOF loading, active expiry, FLUSHALL) moved
the effect log's offset without being measured, and makes the next reading count again.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Final

from node.engine.keyspace import Database, Keyspace, Value

# A dict entry (hash, key and value pointers, with the table's slack) per key.
_KEY_SLOT: Final = 48


def value_estimate(value: Value) -> int:
    if type(value) is bytes:
        return sys.getsizeof(value)
    assert not isinstance(value, bytes)
    return value.memory_estimate()


def key_estimate(key: bytes, value: Value) -> int:
    return _KEY_SLOT + sys.getsizeof(key) + value_estimate(value)


def keyspace_estimate(keyspace: Keyspace) -> int:
    """Every key of every database: O(keys)."""
    total = 0
    for db, expires in zip(keyspace.dbs, keyspace.expires):
        for key, value in db.items():
            total += key_estimate(key, value)
        total += _KEY_SLOT * len(expires)
    return total


class DatasetMeter:
    """The keyspace's estimate, kept up to date write by write. `seen` is the effect-log
    offset the estimate matches; a reading at any other offset counts again."""

    __slots__ = ("keyspace", "total", "seen")

    def __init__(self, keyspace: Keyspace) -> None:
        self.keyspace = keyspace
        self.total = 0
        self.seen = -1

    def measure(self, db: Database, deadlines: dict[bytes, int], keys: Sequence[bytes]) -> int:
        """Bytes the named keys of `db` (with `deadlines`, its TTLs) take now (before and
        after a write)."""
        total = 0
        for key in keys:
            value = db.get(key)
            if value is not None:
                total += key_estimate(key, value)
                if key in deadlines:
                    total += _KEY_SLOT
        return total

    def dataset(self, offset: int) -> int:
        """The estimate at effect-log offset `offset`, counted again if changes since the
        last measured write went unmeasured."""
        if offset != self.seen:
            self.total = keyspace_estimate(self.keyspace)
            self.seen = offset
        return self.total
