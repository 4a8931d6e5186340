"""Which I/O gRPC uses for the link, chosen before gRPC is first imported: gRPC reads the
GRPC_EXPERIMENTS variable once, when its extension module loads, so `replication/__init__.py`
calls `prefer_poller_io` before any of its modules imports grpc.

With gRPC's EventEngine (its default) a received message crosses three threads before the
event loop sees it: an epoll thread wakes a worker, which reads the socket and wakes the
asyncio poller thread, which wakes the loop. With the poller I/O (gRPC's older iomgr) the
poller thread reads the socket itself. On loopback here a message and its ack took 185-201 us
of wall time instead of 237-332 (a standalone pair), and a client's XADD + WAIT 1 with one
replica 0.74-0.93 ms at p50 instead of 1.05-1.14 (alternating runs; docs/replication.md,
*Where the CPU goes*).
"""

from __future__ import annotations

import os

GRPC_IO_EXPERIMENTS = "-event_engine_client,-event_engine_listener"


def prefer_poller_io() -> None:
    """Selects the poller I/O for this process unless GRPC_EXPERIMENTS is already set (an
    empty value keeps gRPC's default). No effect once grpc has been imported."""
    os.environ.setdefault("GRPC_EXPERIMENTS", GRPC_IO_EXPERIMENTS)
