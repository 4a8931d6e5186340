"""The value stored at a stream key: the entries (`Stream`) plus the key's consumer groups.

Redis keeps the groups inside the stream object (`stream->cgroups`), so that DEL, RENAME,
COPY and snapshots carry them along with the entries; `StreamValue` does the same by
extending `Stream` with one slot. `groups` stays None until the first XGROUP CREATE, which
keeps the many group-less stream keys as small as a bare `Stream`.
"""

from __future__ import annotations

import sys

from node.engine.groups import ConsumerGroup
from node.engine.stream import Stream


class StreamValue(Stream):
    """A stream key's value: entries, counters and consumer groups (by name)."""

    __slots__ = ("groups",)

    groups: dict[bytes, ConsumerGroup] | None

    def __init__(self) -> None:
        super().__init__()
        self.groups = None

    def group(self, name: bytes) -> ConsumerGroup | None:
        groups = self.groups
        return groups.get(name) if groups is not None else None

    def add_group(self, name: bytes, group: ConsumerGroup) -> None:
        if self.groups is None:
            self.groups = {}
        self.groups[name] = group

    def remove_group(self, name: bytes) -> bool:
        groups = self.groups
        if groups is None or name not in groups:
            return False
        del groups[name]
        if not groups:
            self.groups = None
        return True

    def sorted_groups(self) -> list[tuple[bytes, ConsumerGroup]]:
        """Groups in Redis's order: its rax sorts names as raw bytes, as Python does."""
        return sorted(self.groups.items()) if self.groups else []

    def group_count(self) -> int:
        return len(self.groups) if self.groups else 0

    def first_stored_id(self) -> int | None:
        """ID of the first stored entry, deleted or not (Redis streamGetEdgeID(s,1,0)): the
        first node's master ID. None when no node is left."""
        masters = self.masters
        return masters[0] if masters else None

    def node_master_ids(self) -> list[int]:
        """Master ID of every node, ascending: the keys of Redis's radix tree."""
        return self.masters

    def copy(self) -> StreamValue:
        """Independent deep copy of entries and groups (COPY, snapshots)."""
        clone = StreamValue()
        self.copy_into(clone)
        if self.groups:
            clone.groups = {name: g.copy() for name, g in self.groups.items()}
        return clone

    def memory_estimate(self) -> int:
        """Stream.memory_estimate plus the consumer groups (O(groups + consumers))."""
        total = Stream.memory_estimate(self)
        if self.groups:
            total += sys.getsizeof(self.groups)
            total += sum(sys.getsizeof(name) + g.memory_bytes() for name, g in self.groups.items())
        return total

    def memory_bytes(self) -> int:
        total = Stream.memory_bytes(self)
        if self.groups:
            total += sys.getsizeof(self.groups)
            total += sum(sys.getsizeof(name) + g.memory_bytes() for name, g in self.groups.items())
        return total

    def _check(self) -> None:
        """Assert the entry storage's and every group's invariants."""
        Stream._check(self)
        if self.groups is not None:
            assert self.groups, "an empty groups dict must be None"
            for group in self.groups.values():
                group._check()
