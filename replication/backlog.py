"""The replication log's memory: a bounded ring of recent log units with Redis-style offsets
under a replication id, and the PSYNC rule that decides whether a replica can continue from it.

Offsets count bytes of the log since the history began (Redis's master_repl_offset): a unit
appended at offset `o` with `n` bytes ends at `o + n`, and a replica "at offset o" has applied
every byte before `o`. The backlog keeps the most recent units, at most `size` bytes of them
(repl-backlog-size), evicting whole units from the front. Unit boundaries are kept exactly, so
batches are always cut between units, on every node, whoever forwarded them.

PSYNC2 identity (`History`): `replid` names the current history; after a promotion (or when
a replica adopts its primary's new id) the previous id is kept as `replid2`, valid up to
`second_offset` (the offset at which the histories split). A replica may continue partially
when it follows `replid`, or follows `replid2` and has not gone past `second_offset`, and its
offset is still held here (and is not in the future). A node passes the `History` its log
records under, so the backlog's changes of id are the log's.

Retention floor: the primary pins the offset its slowest connected replica still has to send;
units at or after it are never evicted even past `size` (Redis 7 keeps replication buffer
blocks referenced by replicas the same way), so replicas read from here and need no private
copy. The primary bounds how far a floor may trail (client-output-buffer-limit).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections import deque
from dataclasses import dataclass
from itertools import accumulate
from operator import sub
from typing import Protocol

from replication.replids import NO_REPLID, History, is_replid, new_replid

__all__ = ["NO_REPLID", "Backlog", "BacklogInfo", "BacklogListener", "PsyncDecision", "is_replid", "new_replid"]

# Units are packed into blocks of about this size: one bytearray and one int array per block,
# instead of one Python object per unit (units are often ~100 bytes).
BLOCK_BYTES = 64 * 1024


class BacklogListener(Protocol):
    def log_appended(self, end: int) -> None:
        """New units were appended; `end` is the new end offset."""
        ...

    def history_changed(self) -> None:
        """The replication id changed or the log was reset: peers must handshake again."""
        ...


@dataclass(frozen=True)
class PsyncDecision:
    """Whether a replica at (replid, offset) can continue from the backlog, and why not."""

    ok: bool
    reason: str = ""


@dataclass(frozen=True)
class BacklogInfo:
    """The backlog's INFO replication fields, with Redis's value conventions."""

    master_replid: str
    master_replid2: str
    master_repl_offset: int
    second_repl_offset: int  # Redis reports the switch offset + 1, or -1 when none
    repl_backlog_active: int
    repl_backlog_size: int
    repl_backlog_first_byte_offset: int  # Redis counts bytes from 1 here
    repl_backlog_histlen: int


class _Block:
    """Consecutive units: their bytes back to back and the offset each ends at."""

    __slots__ = ("start", "data", "ends", "first")

    def __init__(self, start: int) -> None:
        self.start = start  # offset of data[0]
        self.data = bytearray()
        self.ends = array("q")  # absolute end offset of each unit, ascending
        self.first = 0  # index of the first unit still held; earlier ones are evicted

    def unit_start(self, index: int) -> int:
        return self.start if index == 0 else self.ends[index - 1]

    def held_start(self) -> int:
        return self.unit_start(self.first)

    def end(self) -> int:
        return self.ends[-1] if self.ends else self.start


class Backlog:
    def __init__(
        self,
        size: int,
        *,
        replid: str | None = None,
        offset: int = 0,
        replid2: str = NO_REPLID,
        second_offset: int = -1,
        history: History | None = None,
    ) -> None:
        """An empty backlog at `offset` of `replid` (and `replid2` up to `second_offset`), or
        of `history`, shared with the log it records (a node's effect log)."""
        if size <= 0:
            raise ValueError("backlog size must be positive")
        if offset < 0:
            raise ValueError("offset must be >= 0")
        self._size = size
        self._history = history if history is not None else History(replid, replid2, second_offset)
        if self._history.second_offset > offset:
            raise ValueError("second_offset must be <= offset")
        self._end = offset
        self._blocks: deque[_Block] = deque()
        self._floor: int | None = None
        self._listeners: list[BacklogListener] = []

    # ------------------------------------------------------------------ identity and offsets

    @property
    def history(self) -> History:
        return self._history

    @property
    def replid(self) -> str:
        return self._history.replid

    @property
    def replid2(self) -> str:
        return self._history.replid2

    @property
    def second_offset(self) -> int:
        """Offset where replid2's history ends (bytes so far, not Redis's +1); -1 if none."""
        return self._history.second_offset

    @property
    def end(self) -> int:
        """The offset after the last unit: the node's master_repl_offset."""
        return self._end

    @property
    def start(self) -> int:
        """The offset of the first byte still held (== end when empty)."""
        return self._blocks[0].held_start() if self._blocks else self._end

    @property
    def histlen(self) -> int:
        return self._end - self.start

    @property
    def size(self) -> int:
        return self._size

    def resize(self, size: int) -> None:
        """CONFIG SET repl-backlog-size: takes effect at once (shrinking evicts)."""
        if size <= 0:
            raise ValueError("backlog size must be positive")
        self._size = size
        self._trim()

    def add_listener(self, listener: BacklogListener) -> None:
        self._listeners.append(listener)

    def remove_listener(self, listener: BacklogListener) -> None:
        self._listeners.remove(listener)

    # ------------------------------------------------------------------ writing

    def append(self, unit: bytes) -> int:
        """Appends one unit (an empty one is ignored); returns the new end offset."""
        if unit:
            self._add(unit, (len(unit),))
            self._appended()
        return self._end

    def extend(self, data: bytes, unit_sizes: list[int]) -> int:
        """Appends consecutive units given as their concatenation and sizes (a replica storing
        a batch exactly as its primary cut it); returns the new end offset."""
        if sum(unit_sizes) != len(data) or (unit_sizes and min(unit_sizes) <= 0):
            raise ValueError("unit sizes must be positive and sum to the data length")
        if data:
            self._add(data, unit_sizes)
            self._appended()
        return self._end

    def skip_to(self, offset: int) -> None:
        """The log advanced to `offset` without its units being recorded here (a primary no
        replica has synced from keeps no history, as Redis keeps no backlog then): the
        backlog empties and continues at `offset` under the same replication id."""
        if offset < self._end:
            raise ValueError(f"offset {offset} is behind the backlog's end {self._end}")
        self._blocks.clear()
        self._end = offset

    def _add(self, data: bytes, unit_sizes: tuple[int, ...] | list[int]) -> None:
        last = self._blocks[-1] if self._blocks else None
        if last is None or (last.data and len(last.data) + len(data) > BLOCK_BYTES):
            last = _Block(self._end)
            self._blocks.append(last)
        last.data += data
        # Running sums in C: batches of a thousand small units are common on replicas.
        unit_ends = accumulate(unit_sizes, initial=self._end)
        next(unit_ends)
        last.ends.extend(unit_ends)
        self._end = last.ends[-1]

    def _appended(self) -> None:
        self._trim()
        for listener in list(self._listeners):
            listener.log_appended(self._end)

    def retain_from(self, floor: int | None) -> None:
        """Pins every unit ending after `floor` (None releases the pin) and trims what the pin
        no longer holds."""
        self._floor = floor
        self._trim()

    def _trim(self) -> None:
        # Evict whole units from the front until at most `size` bytes are held, but never a
        # unit a connected replica still has to receive (it ends after the floor).
        # Per block, with bisections rather than a unit at a time (a full backlog evicts
        # about one unit per unit appended): unit k may go while the bytes held from its
        # start exceed the size (its start, ends[k-1], is below `limit`) and it ends at or
        # before the floor.
        limit = self._end - self._size
        floor = self._floor
        blocks = self._blocks
        while blocks:
            block = blocks[0]
            if block.held_start() >= limit:
                break
            ends = block.ends
            stop = bisect_left(ends, limit) + 1  # units 0..stop-1 start below the limit
            if floor is not None:
                stop = min(stop, bisect_right(ends, floor))
            stop = min(stop, len(ends))
            if stop <= block.first:
                break
            block.first = stop
            if stop < len(ends):
                break
            blocks.popleft()

    # ------------------------------------------------------------------ history changes

    def shift_replid(self, new: str | None = None) -> None:
        """Starts a new history at the current offset, keeping the old id as replid2 (Redis's
        shiftReplicationId): on promotion, and on a replica adopting its primary's new id."""
        self._history.shift(self._end, new)
        self._history_changed()

    def reset(self, replid: str, offset: int) -> None:
        """Empties the backlog and restarts it at `offset` of `replid` with no replid2: after
        loading a full-sync snapshot, the node's history is the primary's from that point."""
        if offset < 0:
            raise ValueError("offset must be >= 0")
        self._history.restart(replid)
        self._end = offset
        self._blocks.clear()
        self._history_changed()

    def _history_changed(self) -> None:
        for listener in list(self._listeners):
            listener.history_changed()

    # ------------------------------------------------------------------ reading

    def psync(self, replid: str, offset: int) -> PsyncDecision:
        """Redis's masterTryPartialResynchronization rule for a replica at (replid, offset)."""
        if not replid:
            return PsyncDecision(False, "replica asked for a full sync")
        if replid == self._history.replid:
            pass
        elif replid == self._history.replid2 and replid != NO_REPLID:
            if offset > self._history.second_offset:
                return PsyncDecision(
                    False,
                    f"replica at offset {offset} of the previous replication id went past the "
                    f"switch point {self._history.second_offset}",
                )
        else:
            return PsyncDecision(False, f"replication id mismatch (replica has {replid})")
        if offset > self._end:
            return PsyncDecision(False, f"offset {offset} is in the future (primary is at {self._end})")
        if offset < self.start:
            return PsyncDecision(False, f"offset {offset} left the backlog (it holds {self.start}..{self._end})")
        if not self.is_boundary(offset):
            return PsyncDecision(False, f"offset {offset} is not at a unit boundary")
        return PsyncDecision(True)

    def can_continue(self, replid: str, offset: int) -> bool:
        return self.psync(replid, offset).ok

    def is_boundary(self, offset: int) -> bool:
        """Whether a unit held here starts at `offset` (the end counts)."""
        if offset == self._end:
            return True
        located = self._locate(offset)
        return located is not None

    def _locate(self, offset: int) -> tuple[int, int] | None:
        """(block index, unit index) of the held unit starting at `offset`, if any."""
        # Searched from the newest block: replicas read near the end.
        blocks = self._blocks
        for block_index in range(len(blocks) - 1, -1, -1):
            block = blocks[block_index]
            if offset < block.held_start():
                continue
            if offset >= block.end():
                return None
            unit = bisect_right(block.ends, offset)
            if block.unit_start(unit) != offset:
                return None
            return block_index, unit
        return None

    def read(self, offset: int, max_bytes: int) -> tuple[bytes, list[int]]:
        """Whole units from `offset` on, about `max_bytes` of them (always at least one, unless
        offset == end), as their concatenation and their sizes."""
        if offset == self._end:
            return b"", []
        located = self._locate(offset)
        if located is None:
            raise ValueError(f"offset {offset} is not a unit boundary held in {self.start}..{self._end}")
        block_index, unit = located
        parts: list[bytes] = []
        sizes: list[int] = []
        taken = 0
        for index in range(block_index, len(self._blocks)):
            block = self._blocks[index]
            ends = block.ends
            first = unit if index == block_index else block.first
            start = block.unit_start(first)
            # Last unit whose end stays within the budget; at least one unit overall.
            last = bisect_right(ends, start + (max_bytes - taken), lo=first) - 1
            if last < first:
                if parts:
                    break
                last = first
            end = ends[last]
            parts.append(bytes(block.data[start - block.start : end - block.start]))
            segment = ends[first : last + 1]
            sizes.append(segment[0] - start)
            sizes.extend(map(sub, segment[1:], segment[:-1]))
            taken += end - start
            if last < len(ends) - 1 or taken >= max_bytes:
                break
        return (parts[0] if len(parts) == 1 else b"".join(parts)), sizes

    def info(self) -> BacklogInfo:
        return BacklogInfo(
            master_replid=self._history.replid,
            master_replid2=self._history.replid2,
            master_repl_offset=self._end,
            second_repl_offset=self._history.second_offset + 1 if self._history.second_offset >= 0 else -1,
            repl_backlog_active=1,
            repl_backlog_size=self._size,
            repl_backlog_first_byte_offset=self.start + 1,
            repl_backlog_histlen=self.histlen,
        )

    def memory_bytes(self) -> int:
        """Bytes held by unit data and boundaries (evicted parts of the front block included)."""
        return sum(len(block.data) + block.ends.itemsize * len(block.ends) for block in self._blocks)

    def _check(self) -> None:
        """Asserts every invariant (tests call it after each operation)."""
        previous_end: int | None = None
        for block in self._blocks:
            assert block.ends, "empty block kept"
            assert 0 <= block.first < len(block.ends)
            assert block.start + len(block.data) == block.end()
            assert all(a < b for a, b in zip(block.ends, block.ends[1:])), "ends not ascending"
            assert block.ends[0] > block.start
            if previous_end is not None:
                assert block.start == previous_end, "blocks not contiguous"
            previous_end = block.end()
        assert (previous_end if previous_end is not None else self._end) == self._end
        if self._floor is None or self._floor >= self._end:
            assert self.histlen <= self._size, "backlog over size without a pin"
        assert (self._history.replid2 == NO_REPLID) == (self._history.second_offset == -1)
