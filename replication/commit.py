"""The committed point of a log: the offset up to which a majority of the replica set holds it,
as Raft's commit index. A read bounded by it never returns a write that a failover can take
back (in fenced mode, where a promotion keeps every majority-held byte: docs/safety.md, G1).

The primary computes it from its replicas' acknowledgements (`majority_offset`) and carries it
to them on the link, in every batch and heartbeat (protocol field 40), as Raft carries its
commit index in AppendEntries; a replica's committed point is what it heard, bounded by what it
holds. A node's `CommitPoint` only moves forward, except when its log is replaced (a full sync).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

CommitListener = Callable[[int], None]


def majority_offset(acknowledged: Iterable[int], replicas_needed: int, end: int) -> int | None:
    """The highest offset that the primary (holding everything up to `end`) and at least
    `replicas_needed` of the replicas, whose acknowledged offsets are given, all hold; None
    when fewer replicas than needed acknowledged anything."""
    if replicas_needed <= 0:
        return end
    held = sorted(acknowledged, reverse=True)
    if len(held) < replicas_needed:
        return None
    return min(held[replicas_needed - 1], end)


class CommitPoint:
    """One node's committed offset, shared by its primary side (which advances it from acks and
    announces it) and its replica link (which advances it from what the primary announces)."""

    def __init__(self) -> None:
        self.offset = 0
        self._listeners: list[CommitListener] = []

    def add_listener(self, listener: CommitListener) -> None:
        """`listener(offset)` after every advance (and reset)."""
        self._listeners.append(listener)

    def advance(self, offset: int) -> bool:
        """Moves the point to `offset` if that is further; returns whether it moved."""
        if offset <= self.offset:
            return False
        self.offset = offset
        for listener in list(self._listeners):
            listener(offset)
        return True

    def reset(self, offset: int = 0) -> None:
        """The log was replaced (a full sync): nothing is known committed beyond `offset`."""
        self.offset = offset
        for listener in list(self._listeners):
            listener(offset)
