"""What both ends of the replication link agree on: the protocol version, message size caps,
identifier formats and the gRPC channel/server options that follow from them.
"""

from __future__ import annotations

import os
import re
import secrets

PROTOCOL_VERSION = 1

# The primary only ever receives a hello and acks, all tiny: anything bigger is garbage.
PRIMARY_MAX_RECEIVE_BYTES = 64 * 1024
# A replica receives batches of whole units, and one unit (a big MULTI/EXEC) may be large.
REPLICA_MAX_RECEIVE_BYTES = -1

_RUN_ID = re.compile(r"[0-9a-f]{40}\Z")
MAX_ANNOUNCE_HOST = 255

# grpc defaults SO_REUSEPORT on, which would let a second node silently share the port.
SERVER_OPTIONS: list[tuple[str, int]] = [
    ("grpc.so_reuseport", 0),
    ("grpc.max_receive_message_length", PRIMARY_MAX_RECEIVE_BYTES),
]
CHANNEL_OPTIONS: list[tuple[str, int]] = [
    ("grpc.max_receive_message_length", REPLICA_MAX_RECEIVE_BYTES),
    # One channel per link attempt: never share a subchannel with an earlier, broken attempt.
    ("grpc.use_local_subchannel_pool", 1),
]


# gRPC's I/O stack. With its EventEngine (the default since grpcio 1.6x) a received message
# crosses three threads before the event loop sees it: an epoll thread wakes a worker, which
# reads the socket and wakes the asyncio poller thread, which wakes the loop. With the poller
# I/O ("legacy" iomgr) the poller thread reads the socket itself. On loopback here a message
# and its ack took 185-200 us instead of 240-330 (the standalone pair), and a client's XADD +
# WAIT 1 with one replica 0.60-0.73 ms instead of 1.0-1.16 (docs/replication.md).
GRPC_IO_EXPERIMENTS = "-event_engine_client,-event_engine_listener"


def prefer_poller_io() -> None:
    """Selects the poller I/O for this process's gRPC channels and servers, unless
    GRPC_EXPERIMENTS is already set (an empty value keeps gRPC's default). gRPC reads it when
    it starts, so call this before the first channel or server exists: the node does it at
    startup."""
    os.environ.setdefault("GRPC_EXPERIMENTS", GRPC_IO_EXPERIMENTS)


def new_run_id() -> str:
    """A node's run id, used as its replica id: 40 random hex characters like Redis's."""
    return secrets.token_hex(20)


def is_run_id(value: str) -> bool:
    return _RUN_ID.match(value) is not None
