"""Replication errors, each saying whether retrying the same operation can succeed.

A link that fails with a retriable error reconnects with exponential backoff; a non-retriable
one (wrong secret, incompatible peer) needs an operator, so the link retries only at the
slowest pace and logs the cause once. gRPC statuses from the peer are classified here, at one
boundary, so the rest of the package never inspects status codes.
"""

from __future__ import annotations

import grpc

# Statuses a primary uses to refuse a replica for a reason that reconnecting cannot fix.
_PERMANENT_CODES = frozenset(
    {
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.UNIMPLEMENTED,
    }
)


class ReplicationError(Exception):
    """Base class; `retriable` tells whether the same attempt may succeed later."""

    retriable: bool = True

    def __init__(self, message: str, *, retriable: bool | None = None) -> None:
        super().__init__(message)
        if retriable is not None:
            self.retriable = retriable


class LinkLost(ReplicationError):
    """The connection broke, timed out or was closed by the peer."""


class ProtocolViolation(ReplicationError):
    """The peer sent a message that breaks the protocol (wrong order, offsets, sizes)."""


class Refused(ReplicationError):
    """The primary refused the replica with a gRPC status (auth, version, bad handshake)."""


class ApplyFailed(ReplicationError):
    """The state machine rejected a batch or a snapshot; the next sync must be a full one."""


class NotAcknowledging(ReplicationError):
    """Fenced mode: the primary holds no lease (or was fenced), so it answers no WAIT."""

    retriable = False


class ReplicationClosed(ReplicationError):
    """The primary stopped or changed role while a WAIT was pending."""

    retriable = False


def from_rpc_error(error: grpc.aio.AioRpcError) -> ReplicationError:
    """Maps a gRPC failure seen by the replica to a classified error."""
    code = error.code()
    details = error.details() or ""
    message = f"{code.name}: {details}" if details else code.name
    if code in _PERMANENT_CODES:
        return Refused(message, retriable=False)
    return LinkLost(message)
