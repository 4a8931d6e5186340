"""The primary's table of connected replicas: who they are, their sync state, and the offsets
they acknowledged (applied and fsynced) with when — the source of INFO's slaveN lines, WAIT
counts and min-replicas-to-write.
"""

from __future__ import annotations

import time
from bisect import bisect_left
from collections.abc import Callable
from dataclasses import dataclass

# Redis's slaveN:state values. A full sync is `send_bulk` while the snapshot streams (there is
# no separate BGSAVE wait: the snapshot is taken synchronously at the handshake).
STATE_SEND_BULK = "send_bulk"
STATE_ONLINE = "online"

AckListener = Callable[[], None]


@dataclass(frozen=True)
class ReplicaInfo:
    """One connected replica, as INFO replication and ROLE report it."""

    replica_id: str
    host: str
    port: int
    state: str
    offset: int  # last applied offset it acknowledged
    fsynced_offset: int  # last fsynced offset it acknowledged; -1 when it persists nothing
    lag: float  # seconds since its last ack (Redis's `lag`, which INFO prints as an integer)


@dataclass(frozen=True)
class OnlineAcks:
    """What the online replicas acknowledged, read once for many counts (a primary checks every
    parked WAIT on each ack): each kind's offsets in ascending order, one per replica."""

    applied: list[int]
    written: list[int]  # -1: the replica reported no log file write
    fsynced: list[int]  # -1: the replica persists nothing

    @staticmethod
    def count(offsets: list[int], offset: int) -> int:
        """How many of `offsets` (one of the lists above) reach `offset`."""
        return len(offsets) - bisect_left(offsets, offset)


@dataclass
class _Entry:
    replica_id: str
    host: str
    port: int
    state: str
    offset: int
    fsynced_offset: int
    last_ack: float
    written_offset: int = -1  # end of what its log file has (write(2) done); -1: persists nothing


class ReplicaRegistry:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._entries: dict[str, _Entry] = {}  # insertion order = INFO's slave0, slave1, ...
        self._ack_listeners: list[AckListener] = []
        # online_acks() until an entry changes: every WAIT counts, many between two acks.
        self._online_acks: OnlineAcks | None = None

    def add_ack_listener(self, listener: AckListener) -> None:
        """Called after every ack (and every removal) so waiters re-count."""
        self._ack_listeners.append(listener)

    def add(self, replica_id: str, host: str, port: int, state: str, offset: int) -> None:
        self._entries[replica_id] = _Entry(replica_id, host, port, state, offset, -1, self._clock())
        self._online_acks = None

    def remove(self, replica_id: str) -> None:
        if self._entries.pop(replica_id, None) is not None:
            self._online_acks = None
            self._notify()

    def set_state(self, replica_id: str, state: str) -> None:
        entry = self._entries.get(replica_id)
        if entry is not None:
            entry.state = state
            self._online_acks = None
            # Lag counts from when the replica could first ack, not from the handshake.
            entry.last_ack = self._clock()

    def ack(self, replica_id: str, offset: int, fsynced_offset: int, written_offset: int = -1) -> None:
        entry = self._entries.get(replica_id)
        if entry is None:
            return
        entry.offset = offset
        entry.fsynced_offset = fsynced_offset
        entry.written_offset = written_offset
        entry.last_ack = self._clock()
        self._online_acks = None
        self._notify()

    def _notify(self) -> None:
        for listener in list(self._ack_listeners):
            listener()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, replica_id: object) -> bool:
        return replica_id in self._entries

    def get(self, replica_id: str) -> ReplicaInfo | None:
        entry = self._entries.get(replica_id)
        return None if entry is None else self._info(entry, self._clock())

    def replicas(self) -> list[ReplicaInfo]:
        now = self._clock()
        return [self._info(entry, now) for entry in self._entries.values()]

    @staticmethod
    def _info(entry: _Entry, now: float) -> ReplicaInfo:
        return ReplicaInfo(
            replica_id=entry.replica_id,
            host=entry.host,
            port=entry.port,
            state=entry.state,
            offset=entry.offset,
            fsynced_offset=entry.fsynced_offset,
            lag=max(0.0, now - entry.last_ack),
        )

    def count_acked(self, offset: int) -> int:
        """Online replicas that acknowledged applying `offset` (replicationCountAcksByOffset)."""
        return OnlineAcks.count(self.online_acks().applied, offset)

    def count_written(self, offset: int) -> int:
        """Online replicas whose log file has `offset` (fenced mode's WAIT: what a SIGKILL of
        the replica keeps). Only what a replica reported written counts: not what it applied,
        nor the offset of its handshake before its first ack."""
        return OnlineAcks.count(self.online_acks().written, offset)

    def online_offsets(self, written: bool) -> list[int]:
        """What each online replica acknowledged holding: the offsets WAIT counts (applied, or
        in fenced mode written), for the committed point (replication/commit.py)."""
        return [
            (e.written_offset if written and e.written_offset >= 0 else e.offset)
            for e in self._entries.values() if e.state == STATE_ONLINE
        ]

    def online_acks(self) -> OnlineAcks:
        """The offsets count_acked, count_written and count_fsynced count, as one snapshot."""
        acks = self._online_acks
        if acks is None:
            online = [e for e in self._entries.values() if e.state == STATE_ONLINE]
            acks = self._online_acks = OnlineAcks(sorted([e.offset for e in online]),
                                                  sorted([e.written_offset for e in online]),
                                                  sorted([e.fsynced_offset for e in online]))
        return acks

    def count_fsynced(self, offset: int) -> int:
        """Online replicas that acknowledged fsyncing `offset` (replicationCountAOFAcksByOffset)."""
        return OnlineAcks.count(self.online_acks().fsynced, offset)

    def good_replicas(self, max_lag: float) -> int:
        """Online replicas whose last ack is at most `max_lag` seconds old (min-replicas-max-lag)."""
        now = self._clock()
        return sum(1 for e in self._entries.values() if e.state == STATE_ONLINE and now - e.last_ack <= max_lag)
