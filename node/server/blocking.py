"""Clients blocked on keys (XREAD/XREADGROUP BLOCK, later WAIT-like waits).

Rules, as Redis's blocked.c: waiters are kept per key in FIFO order; a write marks its key
ready; ready keys are served (each waiter's `retry` asked in order) before the server goes
back to the event loop, so the writer and the readers it wakes are answered in the same loop
iteration; a timeout ends the wait with the handler's timeout reply; a disconnect removes the
waiter without a trace.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from node.commands.context import Block, ClientSession
from node.commands.reply import CommandError, ReplyError

KeyRef = tuple[int, bytes]

# The "reply" that ends a postponed client's wait: its command runs again (CLIENT PAUSE).
REPROCESS: Any = object()


class Waiter:
    __slots__ = ("session", "block", "keys", "timer", "wake", "deliver", "done")

    def __init__(self, session: ClientSession, block: Block, deliver: Callable[[Any], None]) -> None:
        self.session = session
        self.block = block
        self.keys: list[KeyRef] = [(session.db_index, k) for k in dict.fromkeys(block.keys)]
        self.timer: asyncio.TimerHandle | None = None
        self.wake: asyncio.TimerHandle | None = None  # Block.wake_at's timer
        self.deliver = deliver  # sends the final reply and resumes the client's queue
        self.done = False


class BlockingManager:
    def __init__(self, unit: Callable[[], AbstractContextManager[object]] = nullcontext) -> None:
        # Each retry runs inside `unit()`: the server passes the effect log's unit, so the
        # effects of one woken command (XREADGROUP's XCLAIMs + SETID) stay one MULTI/EXEC.
        self._unit = unit
        self._by_key: dict[KeyRef, deque[Waiter]] = {}
        self._ready: dict[KeyRef, None] = {}  # insertion-ordered set
        self.blocked_count = 0
        # The loop of the first timed block, kept: asyncio.get_running_loop() makes a getpid()
        # system call each time (CPython 3.11), and every WAIT of a busy primary blocks.
        self._loop: asyncio.AbstractEventLoop | None = None

    def block(self, session: ClientSession, block: Block, deliver: Callable[[Any], None]) -> Waiter:
        waiter = Waiter(session, block, deliver)
        for ref in waiter.keys:
            self._by_key.setdefault(ref, deque()).append(waiter)
        if block.timeout_ms > 0:
            loop = self._loop
            if loop is None:
                loop = self._loop = asyncio.get_running_loop()
            waiter.timer = loop.call_later(block.timeout_ms / 1000.0, self._timeout, waiter)
        self._schedule_wake(waiter)
        session.blocked_on = block
        session.flags.add("blocked")
        self.blocked_count += 1
        return waiter

    def has_waiters(self) -> bool:
        return bool(self._by_key)

    def signal(self, ref: KeyRef) -> None:
        if ref in self._by_key:
            self._ready[ref] = None

    def signal_db(self, db_index: int | None) -> None:
        for ref in self._by_key:
            if db_index is None or ref[0] == db_index:
                self._ready[ref] = None

    def serve_ready(self) -> None:
        """Serve every ready key; serving may make more keys ready (a woken XREADGROUP
        propagates effects), so loop until none is left."""
        while self._ready:
            ref = next(iter(self._ready))
            del self._ready[ref]
            queue = self._by_key.get(ref)
            if not queue:
                continue
            for waiter in list(queue):
                if waiter.done:
                    continue
                session = waiter.session
                try:
                    with self._unit():
                        reply = waiter.block.retry(session)
                except CommandError as exc:
                    reply = ReplyError(exc.message)
                if reply is not None:
                    self._finish(waiter)
                    waiter.deliver(reply)
                else:
                    self._schedule_wake(waiter)

    def _schedule_wake(self, waiter: Waiter) -> None:
        """(Re)arm the timer at which a waiter with `wake_at` tries again by itself."""
        wake_at = waiter.block.wake_at
        if wake_at is None:
            return
        if waiter.wake is not None:
            waiter.wake.cancel()
            waiter.wake = None
        at = wake_at(waiter.session)
        if at is None:
            return
        delay = max(at - waiter.session.now_ms(), 0) / 1000.0
        waiter.wake = asyncio.get_running_loop().call_later(delay, self._woken, waiter)

    def _woken(self, waiter: Waiter) -> None:
        waiter.wake = None
        if waiter.done:
            return
        for ref in waiter.keys:
            self._ready[ref] = None
        self.serve_ready()

    def _timeout(self, waiter: Waiter) -> None:
        if waiter.done:
            return
        self._finish(waiter)
        waiter.deliver(waiter.block.timeout_reply)
        # The commands queued behind the timed-out one may have made keys ready; no batch
        # follows this callback to serve them.
        self.serve_ready()

    def unblock(self, waiter: Waiter, reply: Any) -> None:
        """End a wait from outside (CLIENT UNBLOCK, role change)."""
        if not waiter.done:
            self._finish(waiter)
            waiter.deliver(reply)
            self.serve_ready()

    def cancel(self, waiter: Waiter) -> None:
        """The client went away: drop the waiter silently."""
        if not waiter.done:
            self._finish(waiter)

    def waiters(self) -> list[Waiter]:
        seen: dict[int, Waiter] = {}
        for queue in self._by_key.values():
            for w in queue:
                seen[id(w)] = w
        return list(seen.values())

    def _finish(self, waiter: Waiter) -> None:
        waiter.done = True
        if waiter.timer is not None:
            waiter.timer.cancel()
        if waiter.wake is not None:
            waiter.wake.cancel()
        for ref in waiter.keys:
            queue = self._by_key.get(ref)
            if queue is not None:
                try:
                    queue.remove(waiter)
                except ValueError:
                    pass
                if not queue:
                    del self._by_key[ref]
        waiter.session.blocked_on = None
        waiter.session.flags.discard("blocked")
        self.blocked_count -= 1
