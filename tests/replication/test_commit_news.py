"""The committed point on the link: every replica hears where it is, in a batch or a heartbeat,
once writes stop, without waiting for the ping period."""

from __future__ import annotations

import dataclasses

from tests.replication.inprocess_cluster import FAST_PRIMARY, FAST_REPLICA, eventually, nodes, run

# No idle heartbeat during the test, and no replica giving up on a silent primary (and learning
# the committed point in a new handshake): only news of the committed point may carry it.
QUIET_PRIMARY = dataclasses.replace(FAST_PRIMARY, ping_period=60.0, timeout=120.0)
PATIENT_REPLICA = dataclasses.replace(FAST_REPLICA, timeout=120.0)


def test_the_committed_offset_reaches_a_replica_whose_batch_was_in_flight_when_it_moved() -> None:
    # With two replicas the first ack commits a write (the primary and one replica are a
    # majority of three); the other replica's batch is still in flight then, and no heartbeat
    # goes to it while it is. Its own ack must send the news (here there is no later batch to
    # carry it, and the next idle heartbeat is a minute away).
    async def body() -> None:
        async with nodes(3, committed=True) as (p, r1, r2):
            port = await p.serve(QUIET_PRIMARY)
            r1.follow(port, PATIENT_REPLICA)
            r2.follow(port, PATIENT_REPLICA)
            for round_no in range(5):
                end = p.write_many(3, prefix=b"w%d" % round_no)
                await eventually(lambda: p.commit is not None and p.commit.offset == end, timeout=5)  # noqa: B023
                await eventually(lambda: all(r.commit is not None and r.commit.offset == end  # noqa: B023
                                             for r in (r1, r2)), timeout=5)

    run(body())
