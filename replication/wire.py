"""What both ends of the replication link agree on: the protocol version, message size caps,
identifier formats and the gRPC channel/server options that follow from them.
"""

from __future__ import annotations

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


def new_run_id() -> str:
    """A node's run id, used as its replica id: 40 random hex characters like Redis's."""
    return secrets.token_hex(20)


def is_run_id(value: str) -> bool:
    return _RUN_ID.match(value) is not None
