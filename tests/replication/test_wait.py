"""WAIT / WAITAOF accounting and min-replicas-to-write: Redis's semantics on a registry with a
controlled clock, then the counts over real links with 0, 1 and 2 replicas."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import replace

import pytest

from replication import AckWaiters, ReplicaRegistry, ReplicationClosed
from replication.registry import STATE_ONLINE, STATE_SEND_BULK
from tests.replication.inprocess_cluster import FAST_REPLICA, eventually, nodes, run
from tests.replication.proxy import LinkProxy
from tests.replication.toy import ToyMachine


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(replicas: int = 2) -> tuple[ReplicaRegistry, AckWaiters, Clock, list[int]]:
    clock = Clock()
    registry = ReplicaRegistry(clock)
    requests: list[int] = []
    waiters = AckWaiters(registry, request_acks=lambda: requests.append(1))
    for i in range(replicas):
        registry.add(f"r{i}", "127.0.0.1", 7000 + i, STATE_ONLINE, 0)
    return registry, waiters, clock, requests


def test_wait_returns_at_once_without_asking_for_acks_when_enough_replicas_acked() -> None:
    async def body() -> None:
        registry, waiters, _, requests = make()
        registry.ack("r0", 100, -1)
        registry.ack("r1", 50, -1)
        assert await waiters.wait_for(100, 1, 0) == 1
        assert await waiters.wait_for(50, 2, 0) == 2
        assert await waiters.wait_for(100, 0, 1000) == 1  # numreplicas 0: the count, no block
        assert requests == [] and waiters.pending() == 0

    run(body())


def test_wait_blocks_until_enough_acks_and_returns_the_count_then() -> None:
    async def body() -> None:
        registry, waiters, _, requests = make(3)
        task = asyncio.create_task(waiters.wait_for(100, 2, 0))  # 0 = forever
        await asyncio.sleep(0)
        assert not task.done() and requests == []  # replicas ack every batch: no GETACK needed
        registry.ack("r0", 100, -1)
        await asyncio.sleep(0)
        assert not task.done()
        registry.ack("r1", 99, -1)
        await asyncio.sleep(0)
        assert not task.done()
        registry.ack("r1", 150, -1)
        assert await task == 2
        assert waiters.pending() == 0

    run(body())


def test_wait_timeout_returns_the_count_reached_so_far() -> None:
    async def body() -> None:
        registry, waiters, _, _ = make()
        registry.ack("r0", 100, -1)
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await waiters.wait_for(100, 2, 50) == 1
        assert loop.time() - started >= 0.04  # it waited for its timeout
        assert waiters.pending() == 0

    run(body())


def test_only_online_replicas_count() -> None:
    async def body() -> None:
        registry, waiters, _, _ = make(1)
        registry.add("syncing", "127.0.0.1", 7009, STATE_SEND_BULK, 0)
        registry.ack("r0", 10, 10)
        registry.ack("syncing", 10, 10)
        assert waiters.count_now(10) == 1
        assert waiters.count_now(10, fsynced=True) == 1

    run(body())


def test_waitaof_counts_fsynced_offsets_not_applied_ones() -> None:
    async def body() -> None:
        registry, waiters, _, requests = make()
        registry.ack("r0", 100, 40)
        registry.ack("r1", 100, -1)
        assert await waiters.wait_for(100, 2, 10) == 2
        assert await waiters.wait_for_fsync(100, 1, 10) == 0
        task = asyncio.create_task(waiters.wait_for_fsync(100, 1, 0))
        await asyncio.sleep(0)
        assert requests == [1, 1]  # fsyncs move without batches: GETACK each time
        registry.ack("r0", 120, 100)
        assert await task == 1

    run(body())


def test_cancelled_wait_leaves_no_waiter_behind() -> None:
    async def body() -> None:
        _, waiters, _, _ = make()
        task = asyncio.create_task(waiters.wait_for(100, 1, 0))
        await asyncio.sleep(0)
        assert waiters.pending() == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert waiters.pending() == 0

    run(body())


def test_close_fails_pending_and_later_waits_until_reopened() -> None:
    async def body() -> None:
        registry, waiters, _, _ = make()
        task = asyncio.create_task(waiters.wait_for(100, 1, 0))
        await asyncio.sleep(0)
        waiters.close("became a replica")
        with pytest.raises(ReplicationClosed, match="became a replica"):
            await task
        with pytest.raises(ReplicationClosed):
            await waiters.wait_for(100, 1, 0)
        waiters.reopen()
        registry.ack("r0", 100, -1)
        assert await waiters.wait_for(100, 1, 0) == 1

    run(body())


def test_negative_timeout_is_refused() -> None:
    async def body() -> None:
        _, waiters, _, _ = make()
        with pytest.raises(ValueError):
            await waiters.wait_for(1, 1, -1)

    run(body())


def test_good_replicas_counts_recent_acks_only() -> None:
    registry, waiters, clock, _ = make(2)
    clock.now += 5
    registry.ack("r0", 1, -1)
    assert waiters.good_replicas(10) == 2
    assert waiters.good_replicas(4) == 1
    clock.now += 3
    assert waiters.good_replicas(4) == 1
    clock.now += 2
    assert waiters.good_replicas(4) == 0
    info = {i.replica_id: i for i in registry.replicas()}
    assert info["r0"].lag == 5 and info["r1"].lag == 10


def test_wait_over_real_links_with_zero_one_and_two_replicas() -> None:
    async def body() -> None:
        async with nodes(3) as (p, r1, r2):
            port = await p.serve()
            assert p.primary is not None
            waits = p.primary.waits
            end = p.write_many(5)
            assert await waits.wait_for(end, 0, 0) == 0
            assert await waits.wait_for(end, 1, 100) == 0  # nobody to ack: times out with 0
            proxy = LinkProxy(port)
            try:
                r1.follow(port)
                await r1.caught_up(end)
                end = p.write_many(5)
                assert await asyncio.wait_for(waits.wait_for(end, 1, 0), 5) == 1
                r2.follow(await proxy.start())
                await r2.caught_up(end)
                end = p.write_many(5)
                assert await asyncio.wait_for(waits.wait_for(end, 2, 0), 5) == 2
                assert await waits.wait_for(end, 3, 200) == 2
                # One replica freezes (a SIGSTOP-like stall): only the other acks new writes, and
                # once its last ack is older than the max lag it no longer counts as good.
                proxy.pause(both_ways=True)
                end = p.write_many(5)
                assert await waits.wait_for(end, 2, 300) == 1
                assert p.primary.waits.good_replicas(10) == 2
                # The frozen replica's acks age past 0.5 s; the other one keeps acking.
                await eventually(lambda: p.primary.waits.good_replicas(0.5) == 1)
                proxy.resume()
                assert await asyncio.wait_for(waits.wait_for(end, 2, 0), 10) == 2
            finally:
                await proxy.stop()

    run(body())


def test_waitaof_over_a_real_link_follows_the_replica_fsync() -> None:
    async def body() -> None:
        async with nodes(2, persistent=True) as (p, r):
            port = await p.serve()
            assert p.primary is not None
            link = r.follow(port)
            await eventually(lambda: link.status().link_up)  # synced (and fsynced) the empty state
            end = p.write_many(5)
            await r.caught_up(end)
            assert await p.primary.waits.wait_for(end, 1, 0) == 1
            assert await p.primary.waits.wait_for_fsync(end, 1, 100) == 0
            task = asyncio.create_task(p.primary.waits.wait_for_fsync(end, 1, 0))
            await asyncio.sleep(0.05)
            r.machine.fsync()  # the replica's AOF catches up; its next ack says so
            assert await asyncio.wait_for(task, 5) == 1

    run(body())


class _TurnWriter(ToyMachine):
    """A persistent machine that writes what it applied in a callback of the loop turn of
    the apply, as a node's AOF does (one group commit per event-loop turn)."""

    def __init__(self) -> None:
        super().__init__(persistent=True)
        self.written = 0

    def apply(self, data: bytes, end_offset: int) -> None:
        super().apply(data, end_offset)
        asyncio.get_running_loop().call_soon(self._write, end_offset)

    def _write(self, offset: int) -> None:
        self.written = max(self.written, offset)

    def load_snapshot(self, chunks: Sequence[bytes], offset: int) -> None:
        super().load_snapshot(chunks, offset)
        self.written = offset

    def written_offset(self) -> int:
        return self.written


def test_the_ack_of_a_batch_reports_what_the_apply_s_loop_turn_wrote() -> None:
    """Replicas ack a batch at once, after the loop turn of its apply: that ack reports it
    written too (fenced mode's WAIT and lease count written offsets), so the primary counts
    the write as written sooner than the replica's periodic ack (every 1.8 s here) would."""

    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            assert p.primary is not None
            r.machine = _TurnWriter()
            registry = p.primary.registry
            link = r.follow(port, replace(FAST_REPLICA, ack_period=1.8))
            await eventually(lambda: link.status().link_up)
            for _ in range(20):
                end = p.write_many(3)
                await eventually(lambda: registry.count_written(end) == 1, timeout=0.9)  # noqa: B023

    run(body())
