"""The value stored at a stream key: the entries (`Stream`) plus the key's consumer groups
and its idempotent-production state.

Redis keeps both inside the stream object (`stream->cgroups`, the IDMP producers), so that
DEL, RENAME, COPY and snapshots carry them along with the entries; `StreamValue` does the
same by extending `Stream` with two slots. `groups` stays None until the first XGROUP CREATE
and `idmp` until the stream's first IDMP add or setting (None means the default settings and
nothing remembered), which keeps the many plain stream keys small.
"""

from __future__ import annotations

import sys

from node.engine.groups import ConsumerGroup
from node.engine.idmp import IdmpState
from node.engine.stream import Stream


class StreamValue(Stream):
    """A stream key's value: entries, counters, consumer groups (by name) and IDMP state."""

    __slots__ = ("groups", "idmp")

    groups: dict[bytes, ConsumerGroup] | None
    idmp: IdmpState | None

    def __init__(self) -> None:
        super().__init__()
        self.groups = None
        self.idmp = None

    def idmp_state(self) -> IdmpState | None:
        """The IDMP state unless it is the default one (what snapshots and digests record)."""
        idmp = self.idmp
        return idmp if idmp is not None and not idmp.pristine() else None

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
        if self.idmp is not None:
            clone.idmp = self.idmp.copy()
        return clone

    def memory_bytes(self) -> int:
        total = Stream.memory_bytes(self)
        if self.groups:
            total += sys.getsizeof(self.groups)
            total += sum(sys.getsizeof(name) + g.memory_bytes() for name, g in self.groups.items())
        if self.idmp is not None:
            total += self.idmp.memory_bytes()
        return total

    def _check(self) -> None:
        """Assert the entry storage's, every group's and the IDMP state's invariants."""
        Stream._check(self)
        if self.groups is not None:
            assert self.groups, "an empty groups dict must be None"
            for group in self.groups.values():
                group._check()
        if self.idmp is not None:
            self.idmp._check()
