"""grpc.aio has to share the node's event loop, which is uvloop: the primary and replicas run
here on a uvloop loop, through a full sync, a dropped link and partial resync, and WAIT."""

from __future__ import annotations

import asyncio

import uvloop

from tests.replication.inprocess_cluster import nodes
from tests.replication.proxy import LinkProxy


def test_primary_and_replicas_work_on_uvloop() -> None:
    observed: list[str] = []

    async def body() -> None:
        observed.append(type(asyncio.get_running_loop()).__module__)
        async with nodes(3) as (p, r1, r2):
            port = await p.serve()
            proxy = LinkProxy(port)
            try:
                r1.follow(port)
                link = r2.follow(await proxy.start())
                end = p.write_many(300)
                await r1.caught_up(end)
                await r2.caught_up(end)
                proxy.cut()
                end = p.write_many(300)
                await r2.caught_up(end)
                assert p.primary is not None
                assert await asyncio.wait_for(p.primary.waits.wait_for(end, 2, 0), 5) == 2
                assert r1.machine.digest() == r2.machine.digest() == p.machine.digest()
                assert link.status().partial_syncs >= 1 and link.status().full_syncs == 1
            finally:
                await proxy.stop()

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(asyncio.wait_for(body(), 30))
    assert observed == ["uvloop"]
