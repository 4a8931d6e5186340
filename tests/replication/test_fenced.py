"""Fenced mode over real gRPC with toy state machines: epochs on the link (a replica refuses an
older primary, a primary a replica fenced newer), epoch histories carried and used to decide
partial or full resyncs, the lease from echoed stamps (held with a majority, lapsing within
the lease once it is cut off or its replicas are fenced), WAIT refused without it, and the
PSYNC FAILOVER handshake of the FAILOVER command."""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from replication import EpochHistory, NotAcknowledging, Refused
from tests.replication.inprocess_cluster import FAST_REPLICA, Node, eventually, nodes, run
from tests.replication.proxy import LinkProxy

LEASE = 0.6


def test_a_fenced_replica_refuses_a_primary_older_than_its_fence() -> None:
    async def body() -> None:
        async with nodes(1) as [primary], nodes(1, fenced=True) as [replica]:
            await primary.serve()  # default mode: epoch 0 on the link
            primary.write_many(5)
            assert replica.fence is not None
            replica.fence.raise_to(2)
            link = replica.follow(primary.port)
            await eventually(lambda: link.status().last_error is not None)
            await asyncio.sleep(0.3)
            status = link.status()
            assert not status.link_up and "STALEEPOCH" in (status.last_error or "")
            assert replica.backlog.end == 0 and replica.machine.records == []

    run(body())


def test_a_primary_refuses_a_replica_fenced_at_a_newer_epoch() -> None:
    async def body() -> None:
        async with nodes(2, fenced=True) as [primary, replica]:
            await primary.promote(epoch=3)
            primary.write_many(5)
            assert replica.fence is not None
            replica.fence.raise_to(4)
            link = replica.follow(primary.port)
            await eventually(lambda: "STALEEPOCH" in (link.status().last_error or ""))
            assert primary.primary is not None and len(primary.primary.registry) == 0
            assert replica.backlog.end == 0

    run(body())


def test_a_replica_adopts_the_primarys_epoch_and_history_durably() -> None:
    async def body() -> None:
        async with nodes(2, fenced=True) as [primary, replica]:
            await primary.promote(epoch=3)
            end = primary.write_many(10)
            replica.follow(primary.port)
            await replica.caught_up(end)
            assert replica.fence is not None and primary.fence is not None
            assert replica.fence.fence_epoch == 3
            assert replica.fence.history == primary.fence.history == EpochHistory.from_pairs([(3, 0)])
            assert replica.fence.replid == replica.backlog.replid == primary.backlog.replid
            assert replica.saves == [3]  # saved once, before the data was taken

    run(body())


def test_the_lease_holds_with_a_majority_and_lapses_within_the_lease_when_cut_off() -> None:
    async def body() -> None:
        async with nodes(3, fenced=True) as [primary, a, b]:
            await primary.promote(epoch=1)
            assert primary.primary is not None
            assert not primary.primary.acknowledging()  # no replica has echoed yet
            proxies = [LinkProxy(primary.port), LinkProxy(primary.port)]
            ports = [await p.start() for p in proxies]
            a.follow(ports[0])
            b.follow(ports[1])
            await eventually(primary.primary.acknowledging, timeout=5)
            offset = primary.write_many(3)
            assert await primary.primary.waits.wait_for(offset, 2, 2000) == 2
            # A partition: both links go dead (the proxies stall them, nothing is closed).
            for proxy in proxies:
                proxy.pause(both_ways=True)
            loop = asyncio.get_running_loop()
            cut = loop.time()
            await eventually(lambda: not primary.primary.acknowledging(), timeout=LEASE * 3)
            assert loop.time() - cut <= LEASE + 0.2
            offset = primary.write_many(1)
            with pytest.raises(NotAcknowledging):
                await primary.primary.waits.wait_for(offset, 1, 300)
            # Healed: the echoes resume and so does the lease.
            for proxy in proxies:
                proxy.resume()
            await eventually(primary.primary.acknowledging, timeout=5)
            assert await primary.primary.waits.wait_for(offset, 2, 3000) == 2
            for proxy in proxies:
                await proxy.stop()

    run(body())


def test_one_replica_of_three_keeps_the_lease_but_not_of_five() -> None:
    async def body() -> None:
        async with nodes(1, fenced=True, needed=2) as [primary], nodes(2, fenced=True) as [a, b]:
            await primary.promote(epoch=1)
            assert primary.primary is not None
            proxy = LinkProxy(primary.port)
            port = await proxy.start()
            a.follow(primary.port)
            b.follow(port)
            await eventually(primary.primary.acknowledging, timeout=5)
            proxy.pause(both_ways=True)
            await eventually(lambda: not primary.primary.acknowledging(), timeout=LEASE * 3)
            await proxy.stop()

    run(body())


def test_replicas_fenced_by_a_newer_epoch_stop_acknowledging_and_the_lease_lapses() -> None:
    async def body() -> None:
        async with nodes(3, fenced=True) as [primary, a, b]:
            await primary.promote(epoch=1)
            assert primary.primary is not None and a.fence is not None and b.fence is not None
            link_a, link_b = a.follow(primary.port), b.follow(primary.port)
            end = primary.write_many(5)
            await a.caught_up(end)
            await b.caught_up(end)
            await eventually(primary.primary.acknowledging, timeout=5)
            # A sentinel's FENCE 2 reaches both replicas; the links stay open meanwhile.
            a.fence.raise_to(2)
            b.fence.raise_to(2)
            loop = asyncio.get_running_loop()
            fenced = loop.time()
            later = primary.write_many(5)
            await eventually(lambda: not primary.primary.acknowledging(), timeout=LEASE * 3)
            assert loop.time() - fenced <= LEASE + 0.2
            await asyncio.sleep(0.3)
            # Nothing the old primary sent after the fence was applied (or acknowledged).
            assert a.backlog.end == b.backlog.end == end < later
            assert primary.primary.registry.count_acked(later) == 0
            for link in (link_a, link_b):
                assert "STALEEPOCH" in (link.status().last_error or "")
                assert not link.status().link_up

    run(body())


def test_a_replica_fenced_between_two_slices_applies_nothing_more_of_the_batch() -> None:
    """With slicing on (repl-apply-slice-time), a FENCE that arrives
    while a batch is being applied, in a loop turn between two of its slices, stops the rest."""

    async def body() -> None:
        async with nodes(2, fenced=True) as [primary, replica]:
            await primary.promote(epoch=1)
            assert replica.fence is not None
            fence = replica.fence
            link = replica.follow(primary.port, dataclasses.replace(FAST_REPLICA, apply_slice_seconds=1e-9),
                                  contended=lambda: True)
            end = primary.write_many(2)
            await replica.caught_up(end)
            apply = replica.machine.apply
            slices: list[int] = []

            def apply_then_fence(data: bytes, end_offset: int) -> None:
                apply(data, end_offset)
                slices.append(end_offset)
                if len(slices) == 1:  # the FENCE 2 a sentinel sends, run before the next slice
                    asyncio.get_running_loop().call_soon(fence.raise_to, 2)

            replica.machine.apply = apply_then_fence  # type: ignore[method-assign]
            # One batch of 20 units of 200 bytes: sliced (the link has timed no apply yet, the
            # initial sync was a snapshot, so its first slice is 2 KB).
            later = primary.write_many(20, size=200)
            await eventually(lambda: "STALEEPOCH" in (link.status().last_error or ""))
            assert slices == [replica.backlog.end], (slices, end, later)
            assert end < replica.backlog.end < later, (end, replica.backlog.end, later)
            assert replica.machine.offset == replica.backlog.end and 2 < len(replica.machine.records) < 22

    run(body())


def test_a_promoted_replica_serves_its_siblings_and_the_old_primarys_tail_goes() -> None:
    async def body() -> None:
        async with nodes(3, fenced=True) as [old, a, b]:
            await old.promote(epoch=1)
            assert old.primary is not None
            proxy_a = LinkProxy(old.port)
            port_a = await proxy_a.start()
            a.follow(port_a)
            b.follow(old.port)
            shared = old.write_many(10)
            await a.caught_up(shared)
            await b.caught_up(shared)
            # a is cut off; the old primary writes a tail only b gets.
            proxy_a.pause(both_ways=True)
            tail = old.write_many(5, prefix=b"tail")
            await b.caught_up(tail)
            await a.unfollow()
            await proxy_a.stop()
            # A failover in epoch 2 promotes a (say the tail was never majority-acknowledged).
            assert a.fence is not None
            a.fence.raise_to(2)
            await a.promote(epoch=2)
            assert a.fence.history == EpochHistory.from_pairs([(1, 0), (2, shared)])
            a.write_many(3, prefix=b"new")
            await b.unfollow()
            b.follow(a.port)
            await old.unfollow()
            old.follow(a.port)
            # Both went past the switch point: a full sync each (caught_up would not tell,
            # their logs are longer than the new primary's).
            await eventually(lambda: b.machine.digest() == old.machine.digest() == a.machine.digest())
            for node in (b, old):
                assert node.link is not None and node.link.status().full_syncs == 1
                assert not any(r.startswith(b"tail") for r in node.machine.records)
                assert node.fence is not None and node.fence.history == a.fence.history
                assert node.fence.fence_epoch == 2 and node.fence.log_epoch(node.backlog.end) == 2

    run(body())


def test_a_replica_whose_epoch_is_not_in_the_primarys_history_resyncs_fully() -> None:
    async def body() -> None:
        async with nodes(2, fenced=True) as [primary, replica]:
            await primary.promote(epoch=3)
            first = primary.write_many(10)
            primary.promote_now(5)  # a second tenure of the same node, from `first`
            end = primary.write_many(5)
            replica.follow(primary.port)
            await replica.caught_up(end)
            await replica.unfollow()
            # The replica's log claims its part past `first` came from a tenure of epoch 4 the
            # primary never had, under the same id: only the epochs tell the logs apart.
            assert replica.fence is not None and primary.primary is not None
            replica.fence.histories[replica.backlog.replid] = EpochHistory.from_pairs([(3, 0), (4, first)])
            before = primary.primary.full_syncs
            link = replica.follow(primary.port)
            await eventually(lambda: link.status().full_syncs == 1)
            assert primary.primary.full_syncs == before + 1
            assert replica.fence.history == EpochHistory.from_pairs([(3, 0), (5, first)])

    run(body())


def test_psync_failover_promotes_the_target_which_then_serves_the_old_primary() -> None:
    async def body() -> None:
        async with nodes(2) as [primary, target]:
            await primary.serve()
            end = primary.write_many(10)
            target.failover_handler = lambda replid: _promote_if_following(target, replid)
            await target.serve()
            target.follow(primary.port)
            await target.caught_up(end)
            # The primary hands over: it becomes the target's replica with PSYNC FAILOVER.
            old_replid = primary.backlog.replid
            primary.follow(target.port, failover=True)
            await eventually(lambda: primary.handshakes == [None])
            assert target.link is None
            assert target.backlog.replid2 == old_replid and target.backlog.second_offset == end
            assert target.primary is not None and target.primary.partial_syncs == 1
            more = target.write_many(3)
            await primary.caught_up(more)
            assert primary.machine.digest() == target.machine.digest()
            assert primary.link is not None and not primary.link.failover

    run(body())


def test_psync_failover_to_a_primary_is_refused() -> None:
    async def body() -> None:
        async with nodes(2) as [primary, other]:
            other.failover_handler = lambda replid: _promote_if_following(other, replid)
            await other.serve()
            await primary.serve()
            primary.follow(other.port, failover=True)
            await eventually(lambda: len(primary.handshakes) >= 1)
            error = primary.handshakes[0]
            assert isinstance(error, Refused) and "PSYNC FAILOVER can't be sent to a master." in str(error)

    run(body())


def _promote_if_following(node: Node, replid: str) -> str | None:
    """The node's answer to PSYNC FAILOVER, as Redis's syncCommand gives it."""
    if node.link is None:
        return "PSYNC FAILOVER can't be sent to a master."
    if replid != node.backlog.replid:
        return "PSYNC FAILOVER replid must match my replid."
    asyncio.ensure_future(node.link.stop())
    node.link = None
    node.promote_now()
    return None

