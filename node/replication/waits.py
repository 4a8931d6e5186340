"""WAIT and WAITAOF: clients parked until enough replicas acknowledged their writes (WAIT:
applied; WAITAOF: fsynced, and with `numlocal` fsynced by this node's AOF too).

One list of parked clients for both commands. It is re-checked whenever something it counts
changes, and only then: a replica's ack (or its departure, `ReplicaRegistry` ack listeners),
and this node's AOF becoming durable further (the persistence service's durability
listeners: an fsync reported, a rewrite installed, the AOF turned off). A replica acks after
every batch it applies and, on its side, whenever its own AOF's fsync advances, so nothing
polls. A parked client's timeout reply follows the counts, so a timeout answers what was
reached at that moment (Redis's replies and errors, replication.c waitCommand and
waitaofCommand).

In fenced mode a WAIT counts what replicas wrote to their AOF (not merely applied), and a
WAIT or WAITAOF is answered only while the primary may acknowledge (node/replication/
fencing.py): decided without a lease, at once, on an ack or at its timeout, its reply is the
-NOREPLICAS error. Its timeout is then timed here, so the reply is decided at that moment.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from node.commands.context import Block, Session
from node.commands.reply import CommandError, ReplyError
from node.persistence.service import AOF_OFF, AOF_ON, Persistence
from node.replication.backlog_feed import BacklogFeed
from node.replication.fencing import Fencing
from replication import OnlineAcks

if TYPE_CHECKING:
    from node.server.server import Server
    from replication import Primary


def _never_ready(session: Session) -> None:
    return None


@dataclass(frozen=True)
class _Counts:
    """A moment's counts, for every parked wait at once."""

    refusal: str | None  # fenced mode: the error WAIT gets now (no lease); None outside it
    replicated: list[int]  # what WAIT counts, per online replica, ascending
    fsynced: list[int]  # what WAITAOF counts, per online replica, ascending
    local_synced: int  # this node's durable AOF offset (WAITAOF numlocal); -1: none counts


@dataclass(eq=False)
class _Wait:
    session: Session
    block: Block
    offset: int  # the log offset to acknowledge
    numreplicas: int
    numlocal: int  # WAITAOF: 1 when this node's AOF must have it too
    fsync: bool  # WAITAOF (fsynced), not WAIT (applied)
    timer: asyncio.TimerHandle | None = None  # fenced mode: the timeout, timed here


class Waits:
    """The node's parked WAIT and WAITAOF clients (`ctx.node.waits`)."""

    def __init__(self, server: Server, persistence: Persistence, feed: BacklogFeed, fencing: Fencing) -> None:
        self.server = server
        self.persistence = persistence
        self.fencing = fencing
        # Ships the log's pending units to the replicas (a waiting client's write must not
        # wait for the next batch, which a busy primary spaces by repl-busy-batch-interval).
        self._feed = feed
        self._primary: Primary | None = None
        self._waits: list[_Wait] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        persistence.add_durability_listener(self.changed)

    def attach(self, primary: Primary) -> None:
        """Counts the replicas of `primary` from now on."""
        self._primary = primary
        primary.registry.add_ack_listener(self.changed)

    def wait(self, session: Session, numreplicas: int, timeout_ms: int) -> Any:
        """WAIT: the replicas that applied the client's last write (c->woff)."""
        assert self._primary is not None
        wait = _Wait(session, Block([], timeout_ms, _never_ready), session.woff, numreplicas, 0, False)
        done, reply = self._state(wait, self._counts())
        if done or session.in_exec:
            return reply
        self._feed.flush_soon()  # the client's write goes to the replicas at the end of this turn
        wait.block.timeout_reply = reply
        self._park(wait)
        return wait.block

    def waitaof(self, session: Session, numlocal: int, numreplicas: int, timeout_ms: int) -> Any:
        """WAITAOF: [1 if this node's AOF fsynced the offset, replicas that fsynced it]. With
        replicas the offset is the client's last write (c->woff); without, the node's offset
        at the call (which covers the client's writes), and only the local AOF counts."""
        if numreplicas:
            offset = session.woff
        else:
            if numlocal and self.persistence.aof_state == AOF_OFF:
                raise CommandError("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled.")
            offset = self.server.effects.offset
        wait = _Wait(session, Block([], timeout_ms, _never_ready), offset, numreplicas, numlocal, True)
        done, reply = self._state(wait, self._counts())
        if done or session.in_exec or "replay" in session.flags:
            return reply
        wait.block.timeout_reply = reply
        self._park(wait)
        if numreplicas and self._primary is not None:
            self._feed.flush()  # now: the ack requested next must cover the client's write
            self._primary.request_acks()  # Redis's REPLCONF GETACK: a fresh ack from each replica
        return wait.block

    def _park(self, wait: _Wait) -> None:
        if self.fencing.enabled and wait.block.timeout_ms > 0:
            # The reply at the timeout depends on the lease at that moment: timed here.
            loop = self._loop
            if loop is None:  # kept: get_running_loop() makes a getpid() call (CPython 3.11)
                loop = self._loop = asyncio.get_running_loop()
            wait.timer = loop.call_later(wait.block.timeout_ms / 1000, self._expire, wait)
            wait.block.timeout_ms = 0
        self._waits.append(wait)

    def _expire(self, wait: _Wait) -> None:
        if wait in self._waits:
            self._waits.remove(wait)
        if wait.session.blocked_on is wait.block:
            _, reply = self._state(wait, self._counts())
            if self.server.unblock_session(wait.session, reply):
                self.server.after_batch()

    def _counts(self) -> _Counts:
        """What the waits are checked against now: read once for all of them."""
        primary = self._primary
        refusal = self.fencing.refusal(primary) if self.server.role == "master" else None
        acks = primary.registry.online_acks() if primary is not None else OnlineAcks([], [], [])
        persistence = self.persistence
        writer = persistence.writer
        # Until the first base is in a manifest (AOF_WAIT_REWRITE) an fsynced incr file would
        # not be loaded after a crash: it does not count.
        local = writer.synced_offset if persistence.aof_state == AOF_ON and writer is not None else -1
        # Fenced mode's WAIT counts what replicas wrote to their log file, not what they applied.
        return _Counts(refusal, acks.written if self.fencing.enabled else acks.applied, acks.fsynced, local)

    @staticmethod
    def _state(wait: _Wait, counts: _Counts) -> tuple[bool, Any]:
        """Whether `wait` is satisfied (or must be answered with an error now), and the reply
        it gets now."""
        if counts.refusal is not None:
            return True, ReplyError(counts.refusal)
        if not wait.fsync:
            count = OnlineAcks.count(counts.replicated, wait.offset)
            return count >= wait.numreplicas, count
        local = int(counts.local_synced >= wait.offset)
        count = OnlineAcks.count(counts.fsynced, wait.offset) if wait.numreplicas else 0
        return local >= wait.numlocal and count >= wait.numreplicas, [local, count]

    def changed(self) -> None:
        """Something counted changed (an ack, a replica left, the AOF's durable offset):
        release the waits it satisfies; the others' timeout reply follows the counts."""
        if not self._waits:
            return
        waits, self._waits = self._waits, []
        keep: list[_Wait] = []
        released = False
        counts = self._counts()
        for wait in waits:
            if wait.session.blocked_on is not wait.block:
                continue  # timed out, unblocked or disconnected
            done, reply = self._state(wait, counts)
            if done:
                if wait.timer is not None:
                    wait.timer.cancel()
                released = self.server.unblock_session(wait.session, reply) or released
            else:
                wait.block.timeout_reply = reply
                keep.append(wait)
        # Released clients may have run queued commands that parked new waits meanwhile.
        self._waits = keep + self._waits
        if released:
            self.server.after_batch()

    def forget_all(self) -> None:
        """The node stopped being a primary: its clients were unblocked with an error."""
        for wait in self._waits:
            if wait.timer is not None:
                wait.timer.cancel()
        self._waits.clear()
