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
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from node.commands.context import Block, Session
from node.commands.reply import CommandError, ReplyError
from node.persistence.service import AOF_OFF, AOF_ON, Persistence
from node.replication.fencing import Fencing

if TYPE_CHECKING:
    from node.server.server import Server
    from replication import Primary


def _never_ready(session: Session) -> None:
    return None


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

    def __init__(self, server: Server, persistence: Persistence, flush: Callable[[], None], fencing: Fencing) -> None:
        self.server = server
        self.persistence = persistence
        self.fencing = fencing
        # Ships the log's pending units to the replicas now (a waiting client's write must
        # not wait for the next batch).
        self._flush = flush
        self._primary: Primary | None = None
        self._waits: list[_Wait] = []
        persistence.add_durability_listener(self.changed)

    def attach(self, primary: Primary) -> None:
        """Counts the replicas of `primary` from now on."""
        self._primary = primary
        primary.registry.add_ack_listener(self.changed)

    def wait(self, session: Session, numreplicas: int, timeout_ms: int) -> Any:
        """WAIT: the replicas that applied the client's last write (c->woff)."""
        assert self._primary is not None
        wait = _Wait(session, Block([], timeout_ms, _never_ready), session.woff, numreplicas, 0, False)
        done, reply = self._state(wait)
        if done or session.in_exec:
            return reply
        self._flush()  # the client's write goes to the replicas now, not at the next tick
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
        done, reply = self._state(wait)
        if done or session.in_exec or "replay" in session.flags:
            return reply
        wait.block.timeout_reply = reply
        self._park(wait)
        if numreplicas and self._primary is not None:
            self._flush()
            self._primary.request_acks()  # Redis's REPLCONF GETACK: a fresh ack from each replica
        return wait.block

    def _park(self, wait: _Wait) -> None:
        if self.fencing.enabled and wait.block.timeout_ms > 0:
            # The reply at the timeout depends on the lease at that moment: timed here.
            wait.timer = asyncio.get_running_loop().call_later(wait.block.timeout_ms / 1000, self._expire, wait)
            wait.block.timeout_ms = 0
        self._waits.append(wait)

    def _expire(self, wait: _Wait) -> None:
        if wait in self._waits:
            self._waits.remove(wait)
        if wait.session.blocked_on is wait.block:
            _, reply = self._state(wait)
            if self.server.unblock_session(wait.session, reply):
                self.server.after_batch()

    def _state(self, wait: _Wait) -> tuple[bool, Any]:
        """Whether `wait` is satisfied (or must be answered with an error now), and the reply
        it gets now."""
        refusal = self.fencing.refusal(self._primary) if self.server.role == "master" else None
        if refusal is not None:
            return True, ReplyError(refusal)
        registry = self._primary.registry if self._primary is not None else None
        if not wait.fsync:
            count = 0
            if registry is not None:
                count = registry.count_written(wait.offset) if self.fencing.enabled else registry.count_acked(wait.offset)
            return count >= wait.numreplicas, count
        local = self._local_fsynced(wait.offset)
        count = registry.count_fsynced(wait.offset) if registry is not None and wait.numreplicas else 0
        return local >= wait.numlocal and count >= wait.numreplicas, [local, count]

    def _local_fsynced(self, offset: int) -> int:
        # Until the first base is in a manifest (AOF_WAIT_REWRITE) an fsynced incr file would
        # not be loaded after a crash: it does not count.
        persistence = self.persistence
        writer = persistence.writer
        return int(persistence.aof_state == AOF_ON and writer is not None and writer.synced_offset >= offset)

    def changed(self) -> None:
        """Something counted changed (an ack, a replica left, the AOF's durable offset):
        release the waits it satisfies; the others' timeout reply follows the counts."""
        if not self._waits:
            return
        waits, self._waits = self._waits, []
        keep: list[_Wait] = []
        released = False
        for wait in waits:
            if wait.session.blocked_on is not wait.block:
                continue  # timed out, unblocked or disconnected
            done, reply = self._state(wait)
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
