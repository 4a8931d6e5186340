"""Driver side of a read: what a stream holds right now (one XINFO STREAM), the ranges a batch
query reads, and the data-loss rule streaming queries apply to their committed offsets.

Data loss means entries after the committed offset were removed (trimmed, or deleted) before
the query read them.  Stream IDs are sparse, so "the first entry is past my offset" alone
proves nothing; the counters XINFO STREAM reports do: ``entries-added - length`` entries were
ever removed, and if the query knows how many entries were ever added up to its offset (its
*ordinal*), more removals than that means some removed entry came after the offset.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from pipeline import ids
from pipeline.options import Bound


@dataclass(frozen=True)
class StreamState:
    """XINFO STREAM, reduced to what planning needs (IDs as ints)."""

    length: int
    first_id: int | None  # first entry, None when empty
    last_id: int | None  # last entry, None when empty
    last_generated: int
    entries_added: int
    max_deleted: int

    @property
    def removed(self) -> int:
        """Entries ever removed (trimmed or deleted)."""
        return self.entries_added - self.length


def _entry_id(entry: Any) -> int | None:
    if not entry:
        return None
    return ids.parse(entry[0])


def stream_state(client: redis.Redis, stream: str) -> StreamState | None:
    """None when the key does not exist."""
    try:
        info = client.xinfo_stream(stream)
    except redis.exceptions.ResponseError as e:
        if "no such key" in str(e):
            return None
        raise
    return StreamState(
        length=int(info["length"]),
        first_id=_entry_id(info.get("first-entry")),
        last_id=_entry_id(info.get("last-entry")),
        last_generated=ids.parse(info["last-generated-id"]),
        entries_added=int(info.get("entries-added", info["length"])),
        max_deleted=ids.parse(info.get("max-deleted-entry-id", b"0-0")),
    )


def batch_range(state: StreamState | None, start: Bound, end: Bound) -> tuple[int, int] | None:
    """The inclusive range a batch query reads, clamped to what the stream holds now (so every
    reader, on whichever node, reads the same entries), or None when it is empty."""
    if state is None or state.first_id is None or state.last_id is None:
        return None
    lo = state.first_id if start.kind == "earliest" else start.id if start.inclusive else ids.successor(start.id)
    hi = state.last_id if end.kind == "latest" else end.id if end.inclusive else ids.predecessor(end.id)
    lo, hi = max(lo, state.first_id), min(hi, state.last_id)
    return (lo, hi) if lo <= hi else None


def initial_offset(state: StreamState | None, start: Bound) -> tuple[int, int | None]:
    """Where a new streaming query starts: (the ID it has "read up to", its ordinal if known).
    The offset is exclusive: the first batch reads the entries after it."""
    if start.kind == "id":
        return (ids.predecessor(start.id) if start.inclusive else start.id), None
    if state is None:
        return ids.MIN_ID, 0
    if start.kind == "latest":
        if state.last_id is None:
            return state.last_generated, state.entries_added
        return state.last_id, state.entries_added if state.last_id == state.last_generated else None
    # earliest: just before the first entry; everything before it is gone already.
    if state.first_id is None:
        return state.last_generated, state.entries_added
    exact = state.max_deleted < state.first_id
    return ids.predecessor(state.first_id), state.removed if exact else None


def lost_after(start: int, ordinal: int | None, state: StreamState | None, *, existed: bool = False,
               deletions_seen: int = 0) -> str | None:
    """Why entries after the offset ``start`` may have been removed before being read, or None
    when none were. ``ordinal``: how many entries were ever added up to ``start``, if known;
    ``existed``: the query read the stream before; ``deletions_seen``: the greatest deleted ID
    already reported (XDEL beyond the offset is reported once)."""
    if state is None:
        # The key is gone: a stream the query read was deleted, with whatever it still held.
        return "the stream was deleted" if existed else None
    if state.max_deleted > max(start, deletions_seen):
        return (f"entries after {ids.fmt(start)} were deleted (XDEL) before they were read (the greatest deleted "
                f"ID is {ids.fmt(state.max_deleted)})")
    if state.first_id is not None and ids.successor(start) >= state.first_id:
        return None  # nothing can lie between the offset and the first entry
    if state.first_id is None and start >= state.last_generated:
        return None  # nothing was ever added after the offset
    # Every entry up to `start` is gone too (it precedes the first entry, or the stream is
    # empty), so removals beyond the `ordinal` entries up to `start` removed later ones.
    if ordinal is not None:
        if state.removed > ordinal:
            return (f"{state.removed - ordinal} entries after {ids.fmt(start)} were removed before they were read "
                    f"(first entry now {ids.fmt(state.first_id) if state.first_id is not None else 'none'})")
        return None
    if state.removed == 0:
        return None
    return (f"the stream no longer holds entries up to {ids.fmt(start)} and has lost {state.removed} entries to "
            f"trimming or deletion (first entry now "
            f"{ids.fmt(state.first_id) if state.first_id is not None else 'none'}); entries after the offset "
            "may be among them")


BEHIND = "behind"  # a node that has not caught up with the position yet


def vouch(client: redis.Redis, stream: str, position: int, tail: str, state: StreamState | None,
          primary: bool) -> str | None:
    """After the history changed (a failover, a resync): whether the node still holds the
    entry the query last read, as it read it. None: it does; BEHIND: the node, a replica, has
    not reached it yet (ask again later); otherwise why the query cannot vouch for it."""
    from pipeline.offsets import fingerprint

    if state is None:
        return f"the stream is gone from the new history, which should hold {ids.fmt(position)}"
    found = client.execute_command("XRANGE", stream, ids.fmt(position), ids.fmt(position))
    if found:
        entry_id, fields = found[0]
        if fingerprint(entry_id, fields) == tail:
            return None
        return (f"the new history holds another entry under ID {ids.fmt(position)}: the entries read up to it "
                "were lost in the failover and the ID reissued")
    if state.last_generated < position:
        if not primary:
            return BEHIND
        return (f"the new history of the stream ends at {ids.fmt(state.last_generated)}, before "
                f"{ids.fmt(position)}, the last entry read: the entries read after it were lost in the failover")
    if state.first_id is not None and state.first_id > position:
        return None  # trimmed since: the usual data-loss rule decides about what followed
    return (f"entry {ids.fmt(position)}, the last one read, is not in the new history (deleted, or lost in the "
            "failover)")
