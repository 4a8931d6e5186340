"""Stream-agnostic log shipping over gRPC: a primary serves its ordered log of units (with
Redis-style byte offsets under a replication id) to replicas, which apply it through a
StateMachine. It knows nothing about streams and never imports `node`; see
docs/replication.md for the protocol and how a node wires it.
"""

# ruff: noqa: E402
# First, before the modules below import grpc, which reads its I/O choice once at import.
from replication.grpc_io import prefer_poller_io

prefer_poller_io()

from replication.backlog import Backlog, BacklogInfo, PsyncDecision, new_replid
from replication.commit import CommitPoint, majority_offset
from replication.epochs import NO_TENURE, EpochHistory, EpochStart, Fence
from replication.errors import (
    ApplyFailed,
    LinkLost,
    NotAcknowledging,
    ProtocolViolation,
    Refused,
    ReplicationClosed,
    ReplicationError,
)
from replication.lease import Lease, lease_clock_ns
from replication.primary import Primary
from replication.registry import OnlineAcks, ReplicaInfo, ReplicaRegistry
from replication.replica import LinkStatus, ReplicaLink
from replication.replids import NO_REPLID, History
from replication.settings import OutputBufferLimit, PrimarySettings, ReplicaSettings
from replication.state_machine import StateMachine
from replication.tls import ClientTls, ServerTls
from replication.wait import AckWaiters
from replication.wire import PROTOCOL_VERSION, new_run_id

__all__ = [
    "NO_REPLID",
    "NO_TENURE",
    "PROTOCOL_VERSION",
    "AckWaiters",
    "ApplyFailed",
    "Backlog",
    "BacklogInfo",
    "EpochHistory",
    "EpochStart",
    "Fence",
    "Lease",
    "History",
    "ClientTls",
    "CommitPoint",
    "LinkLost",
    "LinkStatus",
    "NotAcknowledging",
    "OnlineAcks",
    "OutputBufferLimit",
    "Primary",
    "PrimarySettings",
    "ProtocolViolation",
    "PsyncDecision",
    "Refused",
    "ReplicaInfo",
    "ReplicaLink",
    "ReplicaRegistry",
    "ReplicaSettings",
    "ReplicationClosed",
    "ReplicationError",
    "ServerTls",
    "StateMachine",
    "lease_clock_ns",
    "majority_offset",
    "new_replid",
    "new_run_id",
]
