"""In-process primaries and replicas over real loopback gRPC, holding toy state machines."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any, TypeVar

from replication import (
    Backlog,
    ClientTls,
    CommitPoint,
    Fence,
    Lease,
    OutputBufferLimit,
    Primary,
    PrimarySettings,
    ReplicaLink,
    ReplicaSettings,
    ReplicationError,
    ServerTls,
    majority_offset,
    new_replid,
    new_run_id,
)
from tests.replication.toy import ToyMachine, encode

T = TypeVar("T")

# Short enough that timeouts, heartbeats and reconnects happen within a test's bounded time.
FAST_PRIMARY = PrimarySettings(ping_period=0.2, timeout=2.0)
FAST_REPLICA = ReplicaSettings(timeout=2.0, ack_period=0.2, backoff_initial=0.05, backoff_max=0.3)
TEST_TIMEOUT = 30.0


def run(coro: Coroutine[Any, Any, T], timeout: float = TEST_TIMEOUT) -> T:
    """Runs one test body on a fresh event loop, bounded in time."""
    return asyncio.run(asyncio.wait_for(coro, timeout))


class Node:
    """A backlog + toy machine that is a primary (serving) and/or a replica (linked). With
    `fenced`, it runs fenced mode: a Fence (saved to `saves`) and a Lease needing `needed`
    replicas' echoes for `lease` seconds; its toy machine is then persistent unless told
    otherwise (fenced mode counts only what a replica's log file holds)."""

    def __init__(
        self,
        backlog_size: int = 1 << 20,
        *,
        persistent: bool | None = None,
        fenced: bool = False,
        needed: int = 1,
        lease: float = 0.6,
        committed: bool = False,
    ) -> None:
        self.backlog = Backlog(backlog_size)
        self.machine = ToyMachine(persistent=fenced if persistent is None else persistent)
        self.run_id = new_run_id()
        self.primary: Primary | None = None
        self.port = 0
        self.link: ReplicaLink | None = None
        self.saves: list[int] = []
        self.fence = Fence(self.backlog.replid, save=lambda f: self.saves.append(f.fence_epoch)) if fenced else None
        self.lease = Lease(needed, lease) if fenced else None
        # With `committed`, its committed point (replication/commit.py), as a node's: moved by
        # its replicas' acks while it is a primary (majority of itself and two replicas), by
        # what its primary announces while it follows one.
        self.commit = CommitPoint() if committed else None
        self.failover_handler: Callable[[str], str | None] | None = None
        self.handshakes: list[ReplicationError | None] = []

    async def serve(self, settings: PrimarySettings = FAST_PRIMARY, tls: ServerTls | None = None) -> int:
        self.primary = Primary(
            self.backlog, self.machine.snapshot, settings, fence=self.fence, lease=self.lease,
            failover_handler=self.failover_handler, commit=self.commit,
        )
        if self.commit is not None:
            commit, registry, backlog = self.commit, self.primary.registry, self.backlog

            def recount() -> None:
                commit.advance(majority_offset(registry.online_offsets(written=False), 1, backlog.end) or 0)

            registry.add_ack_listener(recount)
        self.port = await self.primary.start("127.0.0.1", 0, tls)
        return self.port

    def write(self, record: bytes) -> int:
        """A write on the primary: apply locally, then log the unit; returns its end offset."""
        assert self.primary is not None
        unit = encode(record)
        end = self.backlog.end + len(unit)
        self.machine.apply(unit, end)
        self.primary.append(unit, end)
        return end

    def write_many(self, count: int, prefix: bytes = b"r", size: int = 16) -> int:
        end = 0
        base = len(self.machine.records)
        for i in range(count):
            end = self.write(b"%s%d:" % (prefix, base + i) + b"x" * size)
        return end

    def follow(
        self,
        port: int,
        settings: ReplicaSettings = FAST_REPLICA,
        tls: ClientTls | None = None,
        host: str = "127.0.0.1",
        contended: Callable[[], bool] | None = None,
        cpu_clock: Callable[[], float] = time.thread_time,
        failover: bool = False,
    ) -> ReplicaLink:
        self.link = ReplicaLink(
            host,
            port,
            self.backlog,
            self.machine,
            settings,
            replica_id=self.run_id,
            announce_host="127.0.0.1",
            announce_port=7000,
            tls=tls,
            contended=contended,
            cpu_clock=cpu_clock,
            fence=self.fence,
            failover=failover,
            on_handshake=self.handshakes.append,
            commit=self.commit,
        )
        self.link.start()
        return self.link

    async def unfollow(self) -> None:
        if self.link is not None:
            await self.link.stop()
            self.link = None

    async def promote(self, settings: PrimarySettings = FAST_PRIMARY, epoch: int | None = None) -> int:
        """REPLICAOF NO ONE (in fenced mode SLAVEOF NO ONE EPOCH epoch): stop following, new
        replid (old kept as replid2), serve."""
        await self.unfollow()
        self.promote_now(epoch)
        if self.primary is not None:
            await self.primary.stop(grace=0)
        return await self.serve(settings)

    def promote_now(self, epoch: int | None = None) -> None:
        """The synchronous part of a promotion (what a PSYNC FAILOVER handler does)."""
        replid = new_replid()
        if self.fence is not None and self.lease is not None:
            assert epoch is not None
            self.fence.promote(epoch, self.backlog.end, replid)
            self.lease.restart(epoch)
        self.backlog.shift_replid(replid)

    async def close(self) -> None:
        await self.unfollow()
        if self.primary is not None:
            await self.primary.stop(grace=0)
            self.primary = None

    async def caught_up(self, offset: int, timeout: float = 10.0) -> None:
        assert self.link is not None
        await self.link.wait_for_offset(offset, timeout)


@contextlib.asynccontextmanager
async def nodes(count: int, **kwargs: Any) -> AsyncIterator[list[Node]]:
    created = [Node(**kwargs) for _ in range(count)]
    try:
        yield created
    finally:
        for node in created:
            await node.close()


async def eventually(predicate: Any, timeout: float = 10.0, interval: float = 0.01) -> None:
    """Waits until predicate() is true (polling briefly), else fails the test."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not predicate():
        if loop.time() > deadline:
            raise AssertionError(f"condition not reached within {timeout}s")
        await asyncio.sleep(interval)


def limit(hard: int, soft: int = 0, seconds: float = 60.0) -> OutputBufferLimit:
    return OutputBufferLimit(hard_bytes=hard, soft_bytes=soft, soft_seconds=seconds)
