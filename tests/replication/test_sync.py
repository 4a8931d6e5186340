"""Primary and replicas over real loopback gRPC with toy state machines: convergence, partial
and full resyncs, promotion through replid2, flow control and liveness."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Coroutine
from typing import Any

from replication import ReplicaSettings
from tests.replication.inprocess_cluster import FAST_PRIMARY, FAST_REPLICA, Node, eventually, limit, nodes, run
from tests.replication.proxy import LinkProxy


def assert_same(primary: Node, *replicas: Node) -> None:
    for replica in replicas:
        assert replica.backlog.end == primary.backlog.end
        assert replica.backlog.replid == primary.backlog.replid
        assert replica.machine.digest() == primary.machine.digest()
        assert replica.machine.records == primary.machine.records


def test_two_replicas_converge_on_writes_before_and_after_they_attach() -> None:
    async def body() -> None:
        async with nodes(3) as (p, r1, r2):
            port = await p.serve()
            p.write_many(200, b"before")
            r1.follow(port)
            r2.follow(port)
            end = p.write_many(500, b"after")
            await r1.caught_up(end)
            await r2.caught_up(end)
            assert_same(p, r1, r2)
            # Both replicas joined with a foreign replid: one full sync each, then batches.
            assert r1.link is not None and r1.link.status().full_syncs == 1
            assert r1.link.status().link_up
            assert p.primary is not None and p.primary.full_syncs == 2

    run(body())


def test_units_logged_while_a_batch_is_unacknowledged_coalesce_into_the_next_one() -> None:
    # A unit per event-loop turn, as a busy primary logs them: while a batch is unacknowledged
    # the units that follow wait and go together, not one message each. The link is frozen
    # while they are logged, so the first stays unacknowledged whatever the machine's load (a
    # trickle against a free link coalesced into 14 batches, but into 70 on a loaded machine).
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            proxy = LinkProxy(port)
            try:
                r.follow(await proxy.start())
                await r.caught_up(p.write_many(1))
                before = r.machine.batches_applied
                proxy.pause(both_ways=True)
                end = 0
                for i in range(300):
                    end = p.write(b"trickle%d" % i)
                    await asyncio.sleep(0)
                proxy.resume()
                await r.caught_up(end)
                assert_same(p, r)
                # Measured: 4 batches (every wake-up shipping what it saw would send up to 300).
                assert r.machine.batches_applied - before <= 10
            finally:
                await proxy.stop()

    run(body())


def test_dropped_link_resumes_with_a_partial_resync_and_no_full_sync() -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            proxy = LinkProxy(port)
            try:
                link = r.follow(await proxy.start())
                await r.caught_up(p.write_many(100))
                assert p.primary is not None
                full_before = p.primary.full_syncs
                for round_ in range(3):
                    proxy.cut()
                    p.write_many(50, b"while-down-%d" % round_)
                    end = p.write_many(50, b"after-%d" % round_)
                    await r.caught_up(end)
                assert_same(p, r)
                assert p.primary.full_syncs == full_before  # 0 full syncs for 3 drops
                assert link.status().full_syncs == 1  # the initial one only
                assert link.status().partial_syncs >= 3
                assert proxy.connections >= 4
            finally:
                await proxy.stop()

    run(body())


def test_offset_that_left_the_backlog_falls_back_to_a_full_sync() -> None:
    async def body() -> None:
        async with nodes(2, backlog_size=16 * 1024) as (p, r):
            port = await p.serve()
            link = r.follow(port)
            await r.caught_up(p.write_many(10))
            await r.unfollow()
            # Until the primary notices the link is gone, the session pins the backlog.
            await eventually(lambda: p.primary is not None and p.primary.session_count() == 0)
            p.write_many(2000, size=32)  # ~120 KB: far more than the 16 KB backlog
            assert p.backlog.start > r.backlog.end
            link = r.follow(port)
            end = p.write_many(5)
            await r.caught_up(end)
            assert_same(p, r)
            assert link.status().full_syncs == 1 and link.status().partial_syncs == 0
            assert r.machine.snapshots_loaded == 2

    run(body())


def test_restarted_replica_with_its_log_on_disk_resumes_partially() -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            r.follow(port)
            await r.caught_up(p.write_many(100))
            await r.unfollow()
            p.write_many(30)
            # A restart with AOF: the node reloads its state and (replid, offset), not the backlog.
            from replication import Backlog

            r.backlog = Backlog(1 << 20, replid=r.backlog.replid, offset=r.backlog.end)
            link = r.follow(port)
            await r.caught_up(p.backlog.end)
            assert_same(p, r)
            assert link.status().full_syncs == 0 and link.status().partial_syncs == 1

    run(body())


def test_promoted_replica_serves_its_sibling_a_partial_resync_and_the_old_primary_loses_its_tail() -> None:
    async def body() -> None:
        async with nodes(3) as (p, a, b):
            port = await p.serve()
            a.follow(port)
            b.follow(port)
            end = p.write_many(300)
            await a.caught_up(end)
            await b.caught_up(end)
            old_replid = p.backlog.replid
            # Partition: the replicas stop hearing from p, which still accepts writes.
            await a.unfollow()
            await b.unfollow()
            p.write_many(20, b"divergent")
            assert p.backlog.end > a.backlog.end
            assert p.primary is not None
            await p.primary.stop(grace=0)
            p.primary = None

            a_port = await a.promote()
            assert a.backlog.replid2 == old_replid and a.backlog.second_offset == end
            b_link = b.follow(a_port)
            p_link = p.follow(a_port)
            new_end = a.write_many(50, b"on-a")
            await b.caught_up(new_end)
            await p.caught_up(new_end)
            # b continued partially through replid2; p had gone past the switch point.
            assert b_link.status().full_syncs == 0 and b_link.status().partial_syncs == 1
            assert b.backlog.replid == a.backlog.replid
            assert b.backlog.replid2 == old_replid and b.backlog.second_offset == end
            assert p_link.status().full_syncs == 1
            assert_same(a, b, p)
            assert not any(record.startswith(b"divergent") for record in p.machine.records)

    run(body())


def test_idle_link_stays_up_through_heartbeats_and_acks() -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            link = r.follow(port)
            await r.caught_up(p.write_many(5))
            await asyncio.sleep(2.5)  # longer than repl-timeout (2 s) on both sides
            status = link.status()
            # Heard from within the timeout (2 s), or the link would have dropped.
            assert status.link_up and status.last_io_seconds_ago < 2
            assert status.full_syncs + status.partial_syncs == 1  # never reconnected
            assert status.primary_offset == p.backlog.end
            assert p.primary is not None
            info = p.primary.registry.replicas()
            assert [(i.state, i.offset, i.host, i.port) for i in info] == [("online", p.backlog.end, "127.0.0.1", 7000)]
            assert info[0].lag < FAST_PRIMARY.timeout

    run(body())


def test_replica_detects_a_silent_primary_and_recovers_partially() -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            proxy = LinkProxy(port)
            try:
                link = r.follow(await proxy.start())
                await r.caught_up(p.write_many(10))
                proxy.pause()  # nothing from the primary reaches the replica any more
                await eventually(lambda: not link.status().link_up, timeout=5.0)
                assert "repl-timeout" in (link.status().last_error or "")
                assert link.status().link_down_since_seconds >= 0
                end = p.write_many(10)
                proxy.resume()
                await r.caught_up(end)
                assert_same(p, r)
                assert link.status().full_syncs == 1  # the initial sync only
            finally:
                await proxy.stop()

    run(body())


def test_a_large_batch_is_applied_in_slices_of_whole_units_with_the_loop_served_between() -> None:
    # 2,000 units logged at once travel as one ~80 KB batch. The replica applies it in
    # slices of whole units (the toy machine refuses anything else) taking about
    # apply_slice_seconds of CPU each, sized from the speed of the latest apply, and other
    # tasks of its event loop run between two slices; they find the backlog ending where the
    # applied data does (a snapshot taken then for a sub-replica, or a promotion, relies on
    # it). The link's CPU clock here advances 1 µs per byte applied: 4 ms make 4,000 bytes.
    slice_bytes = 4000
    cpu = 0.0

    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            r.follow(port, dataclasses.replace(FAST_REPLICA, apply_slice_seconds=0.004), cpu_clock=lambda: cpu)
            await r.caught_up(p.write_many(1))
            ticks = 0
            applies: list[tuple[int, int, int]] = []  # (size, end offset, ticks)
            apply = r.machine.apply

            def recording_apply(data: bytes, end_offset: int) -> None:
                nonlocal cpu
                applies.append((len(data), end_offset, ticks))
                apply(data, end_offset)
                cpu += len(data) * 1e-6

            r.machine.apply = recording_apply  # type: ignore[method-assign]

            behind: list[tuple[int, int]] = []

            async def ticker() -> None:
                nonlocal ticks
                while True:
                    ticks += 1
                    if r.backlog.end != r.machine.offset:
                        behind.append((r.backlog.end, r.machine.offset))
                    await asyncio.sleep(0)

            task = asyncio.create_task(ticker())
            try:
                start = p.backlog.end
                end = p.write_many(2000, size=24)
                await r.caught_up(end)
            finally:
                task.cancel()
            assert_same(p, r)
            assert len(applies) >= (end - start) // slice_bytes
            position = start
            for size, slice_end, _ in applies:
                assert slice_end - size == position  # contiguous
                assert 0 < size <= slice_bytes
                position = slice_end
            assert position == end
            # Sized by the time they take, not one unit each: most are within a unit (~40
            # bytes) of 4,000 (the first one before any apply was timed, and the last one of
            # each batch, are smaller).
            assert sum(size > slice_bytes - 64 for size, _, _ in applies) >= len(applies) // 2
            # The event loop ran between every two slices (all of one batch here or not).
            assert all(b[2] > a[2] for a, b in zip(applies, applies[1:]))
            assert behind == []

    run(body())


# Slices of a nanosecond of CPU: one unit each.
ONE_UNIT_SLICES = dataclasses.replace(FAST_REPLICA, apply_slice_seconds=1e-9)


def test_a_link_stopped_between_two_slices_keeps_what_it_applied_and_resumes_after_it() -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            link = r.follow(port, ONE_UNIT_SLICES)
            await r.caught_up(p.write_many(1))
            apply = r.machine.apply
            stopping: list[Coroutine[Any, Any, None]] = []

            def stop_after_the_third_slice(data: bytes, end_offset: int) -> None:
                apply(data, end_offset)
                if r.machine.batches_applied == 4:  # 1 before, then 3 units of the big batch
                    stopping.append(link.stop())  # cancels: raised at the yield after this slice

            r.machine.apply = stop_after_the_third_slice  # type: ignore[method-assign]
            end = p.write_many(500, size=24)
            await eventually(lambda: bool(stopping))
            await stopping[0]
            # Stopped inside the batch: the three slices are applied and in the backlog.
            assert r.machine.offset == r.backlog.end < end
            assert r.machine.records == p.machine.records[: len(r.machine.records)]
            r.machine.apply = apply  # type: ignore[method-assign]
            relinked = r.follow(port, ONE_UNIT_SLICES)
            await r.caught_up(end)
            assert_same(p, r)
            assert relinked.status().partial_syncs == 1 and relinked.status().full_syncs == 0

    run(body())


def test_slices_only_while_contended_and_a_unit_larger_than_the_slice_goes_whole() -> None:
    contended = True

    async def body() -> None:
        nonlocal contended
        async with nodes(4) as (p, r_small, r_off, r_alone):
            port = await p.serve()
            r_small.follow(port, ONE_UNIT_SLICES, contended=lambda: contended)
            r_off.follow(port, dataclasses.replace(FAST_REPLICA, apply_slice_seconds=0))
            r_alone.follow(port, ONE_UNIT_SLICES, contended=lambda: False)
            replicas = (r_small, r_off, r_alone)

            async def applies_for(count: int) -> list[int]:
                before = [r.machine.batches_applied for r in replicas]
                end = p.write_many(count, size=200)
                for r in replicas:
                    await r.caught_up(end)
                assert_same(p, *replicas)
                return [r.machine.batches_applied - b for r, b in zip(replicas, before)]

            # The first write comes with the initial sync, the second is applied and timed (a
            # link sizes its slices from its latest apply; untimed, it takes 2 KB).
            await applies_for(1)
            await applies_for(1)
            # One unit per slice while contended; whole batches with slicing off or a CPU of
            # its own (20 units written at once: one or two batches).
            small, off, alone = await applies_for(20)
            assert small == 20 and off <= 2 and alone <= 2
            contended = False
            small, _, _ = await applies_for(20)
            assert small <= 2

    run(body())


def test_state_machine_rejecting_a_batch_forces_a_full_sync_without_corruption() -> None:
    async def body() -> None:
        async with nodes(2) as (p, r):
            port = await p.serve()
            link = r.follow(port)
            await r.caught_up(p.write_many(10))
            r.machine.reject_next = True
            end = p.write_many(10)
            await r.caught_up(end)
            assert_same(p, r)
            assert "applying the batch" in (link.status().last_error or "")
            assert link.status().full_syncs == 2

    run(body())


def test_stalled_replica_is_disconnected_then_resyncs_when_it_reads_again() -> None:
    async def body() -> None:
        settings = dataclasses.replace(FAST_PRIMARY, output_buffer_limit=limit(hard=256 * 1024), timeout=30.0)
        replica_settings = ReplicaSettings(timeout=30.0, ack_period=0.2, backoff_initial=0.05, backoff_max=0.3)
        async with nodes(2, backlog_size=64 * 1024) as (p, r):
            port = await p.serve(settings)
            proxy = LinkProxy(port)
            try:
                link = r.follow(await proxy.start(), replica_settings)
                await r.caught_up(p.write_many(10))
                assert p.primary is not None
                proxy.pause()
                dropped = False
                peak = 0
                for _ in range(400):  # up to ~26 MB; kernel and HTTP/2 buffers absorb a few MB
                    p.write_many(1, size=64 * 1024)
                    peak = max(peak, p.backlog.memory_bytes())
                    await asyncio.sleep(0)
                    if p.primary.session_count() == 0:
                        dropped = True
                        break
                assert dropped, "the stalled replica was never disconnected"
                # The backlog never held more than its size plus the hard limit and one block.
                assert peak <= 64 * 1024 + 256 * 1024 + 2 * 65 * 1024
                await asyncio.sleep(0.05)
                assert p.backlog.memory_bytes() <= 64 * 1024 + 2 * 65 * 1024
                proxy.resume()
                end = p.write_many(5)
                await r.caught_up(end, timeout=15.0)
                assert_same(p, r)
                assert link.status().full_syncs == 2  # its offset had left the backlog
            finally:
                await proxy.stop()

    run(body())


def rss_bytes() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def test_replica_that_stops_reading_cannot_grow_the_primarys_memory() -> None:
    async def body() -> None:
        import grpc

        from replication import Backlog, Primary, new_run_id
        from replication.pb import replication_pb2 as pb
        from replication.pb import replication_pb2_grpc as pb_grpc

        mib = 1024 * 1024
        backlog = Backlog(1 * mib)
        settings = dataclasses.replace(FAST_PRIMARY, output_buffer_limit=limit(hard=4 * mib), timeout=30.0)
        primary = Primary(backlog, lambda: b"", settings)
        port = await primary.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                call = pb_grpc.ReplicationStub(channel).Sync()
                hello = pb.Hello(protocol_version=1, replica_id=new_run_id(), replid=backlog.replid, offset=0)
                await call.write(pb.ReplicaMessage(hello=hello))
                # ...and never reads again.
                await eventually(lambda: len(primary.registry) == 1)
                unit = b"u" * mib
                baseline = rss_bytes()
                peak = 0
                for _ in range(200):  # 200 MiB through the log
                    primary.append(unit, backlog.end + len(unit))
                    await asyncio.sleep(0)
                    peak = max(peak, rss_bytes() - baseline)
                assert primary.session_count() == 0 and len(primary.registry) == 0
                assert backlog.memory_bytes() <= 2 * mib
                # gRPC's and the kernel's buffers hold a few MiB; nothing near the 200 MiB written.
                assert peak < 48 * mib, f"primary grew by {peak / mib:.0f} MiB"
                call.cancel()
        finally:
            await primary.stop(grace=0)

    run(body())


def test_replica_serves_a_sub_replica_and_drops_it_when_its_own_history_changes() -> None:
    async def body() -> None:
        async with nodes(3) as (p, middle, leaf):
            port = await p.serve()
            middle.follow(port)
            middle_port = await middle.serve()  # a replica that also serves (chained replication)
            leaf_link = leaf.follow(middle_port)
            end = p.write_many(100)
            await middle.caught_up(end)
            await leaf.caught_up(end)
            assert_same(p, middle, leaf)
            # The middle node loses its offset history (forced full sync): its sub-replica is
            # disconnected to learn the new history, and converges again.
            assert p.primary is not None
            await middle.unfollow()
            await eventually(lambda: p.primary is not None and p.primary.session_count() == 0)
            middle.machine.reject_next = True
            middle.follow(port)
            end = p.write_many(10)
            await middle.caught_up(end)
            await leaf.caught_up(end)
            assert_same(p, middle, leaf)
            assert leaf_link.status().full_syncs + leaf_link.status().partial_syncs >= 2

    run(body())
