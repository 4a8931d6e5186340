"""WAIT and WAITAOF accounting on the primary: futures that resolve when enough replicas
acknowledged (applied, or fsynced) an offset, or when the timeout expires.

Redis semantics (replication.c waitCommand / processClientsWaitingReplicas): if enough
replicas already acknowledged, the count is returned at once without blocking; otherwise the
caller blocks until the count reaches `numreplicas` (returning the count at that moment, which
may exceed it) or the timeout passes (returning the count then). A timeout of 0 blocks
forever. Only online replicas count.

Replicas here ack after every batch they apply, so a WAIT needs no extra request; a WAITAOF
does (fsyncs advance without new batches), so it asks replicas for a fresh ack (Redis's
REPLCONF GETACK) instead of waiting for their periodic one.

Fenced mode (`acknowledging` given): WAIT counts what replicas wrote to their log files
rather than applied (a SIGKILLed replica keeps it), and a wait is answered only while the
primary may acknowledge (it leads its epoch and holds its lease): otherwise it fails with
`NotAcknowledging`, at once or at the moment it would have been answered.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from replication.errors import NotAcknowledging, ReplicationClosed
from replication.registry import ReplicaRegistry


@dataclass(eq=False)
class _Waiter:
    offset: int
    numreplicas: int
    fsynced: bool
    future: asyncio.Future[int] = field(repr=False)


class AckWaiters:
    def __init__(
        self,
        registry: ReplicaRegistry,
        request_acks: Callable[[], None] | None = None,
        acknowledging: Callable[[], bool] | None = None,
    ) -> None:
        self._registry = registry
        self._request_acks = request_acks
        self._acknowledging = acknowledging
        self._waiters: list[_Waiter] = []
        self._closed: ReplicationClosed | None = None
        registry.add_ack_listener(self._on_ack)

    def _count(self, offset: int, fsynced: bool) -> int:
        if fsynced:
            return self._registry.count_fsynced(offset)
        if self._acknowledging is not None:
            return self._registry.count_written(offset)
        return self._registry.count_acked(offset)

    def _answer(self, count: int) -> int:
        """The count as the reply, or NotAcknowledging when the primary may not answer now."""
        if self._acknowledging is not None and not self._acknowledging():
            raise NotAcknowledging("NOREPLICAS this primary holds no majority lease (fenced mode)")
        return count

    async def wait_for(self, offset: int, numreplicas: int, timeout_ms: int) -> int:
        """WAIT: replicas that applied `offset`, once `numreplicas` did or `timeout_ms` passed."""
        return await self._wait(offset, numreplicas, timeout_ms, fsynced=False)

    async def wait_for_fsync(self, offset: int, numreplicas: int, timeout_ms: int) -> int:
        """WAITAOF's replica half: replicas that fsynced `offset` (the node counts local fsync)."""
        return await self._wait(offset, numreplicas, timeout_ms, fsynced=True)

    def count_now(self, offset: int, *, fsynced: bool = False) -> int:
        """The non-blocking answer (WAIT inside MULTI or a script)."""
        return self._count(offset, fsynced)

    def good_replicas(self, max_lag: float) -> int:
        """min-replicas-to-write: online replicas with an ack at most `max_lag` seconds old."""
        return self._registry.good_replicas(max_lag)

    async def _wait(self, offset: int, numreplicas: int, timeout_ms: int, *, fsynced: bool) -> int:
        if timeout_ms < 0:
            raise ValueError("timeout is negative")
        if self._closed is not None:
            raise self._closed
        count = self._count(offset, fsynced)
        if count >= numreplicas:
            return self._answer(count)
        loop = asyncio.get_running_loop()
        waiter = _Waiter(offset, numreplicas, fsynced, loop.create_future())
        self._waiters.append(waiter)
        if fsynced and self._request_acks is not None:
            self._request_acks()
        try:
            if timeout_ms == 0:
                return self._answer(await waiter.future)
            try:
                return self._answer(await asyncio.wait_for(asyncio.shield(waiter.future), timeout_ms / 1000))
            except TimeoutError:
                if waiter.future.done():
                    return self._answer(waiter.future.result())
                return self._answer(self._count(offset, fsynced))
        finally:
            # Also reached when the caller is cancelled (its client disconnected).
            if waiter in self._waiters:
                self._waiters.remove(waiter)

    def _on_ack(self) -> None:
        if not self._waiters:
            return
        for waiter in list(self._waiters):
            if waiter.future.done():
                continue
            count = self._count(waiter.offset, waiter.fsynced)
            if count >= waiter.numreplicas:
                waiter.future.set_result(count)
                self._waiters.remove(waiter)

    def pending(self) -> int:
        return len(self._waiters)

    def close(self, reason: str = "replication stopped") -> None:
        """Fails every pending wait (the primary stopped or became a replica: Redis answers
        such clients with -UNBLOCKED); later waits fail at once."""
        self._closed = ReplicationClosed(reason)
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.future.done():
                waiter.future.set_exception(self._closed)

    def reopen(self) -> None:
        """Accepts waits again (the node became a primary again)."""
        self._closed = None
