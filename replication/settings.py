"""Tunables of the primary and replica sides, as frozen values the node builds from its config.

Durations are float seconds (the node converts repl-timeout etc. from Redis's integer seconds)
so tests can use sub-second values.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

MiB = 1024 * 1024


@dataclass(frozen=True)
class OutputBufferLimit:
    """Redis's `client-output-buffer-limit replica <hard> <soft> <soft_seconds>`.

    The pending bytes of a replica (log written on the primary but not yet handed to the
    replica's stream) may exceed `soft_bytes` for at most `soft_seconds`, and never exceed
    `hard_bytes`; a replica over either is disconnected and resyncs later. 0 disables a limit
    (as in Redis); with both disabled a stalled replica can pin the backlog without bound.
    """

    hard_bytes: int = 256 * MiB
    soft_bytes: int = 64 * MiB
    soft_seconds: float = 60.0


@dataclass(frozen=True)
class PrimarySettings:
    """The primary side: auth, heartbeats, timeouts, flow control and message sizes."""

    requirepass: str | None = None  # shared secret replicas must present; None = open
    # Who may replicate, when the owner decides (a node asks its ACL users): (user, password,
    # peer) as the replica's hello gives them ("" user: the default one) -> None to admit it,
    # or the refusal's text. Replaces the requirepass check when set.
    authenticate: Callable[[str, str, str], str | None] | None = None
    ping_period: float = 10.0  # repl-ping-replica-period: heartbeat when idle this long
    timeout: float = 60.0  # repl-timeout: drop a replica silent (no ack / stuck write) this long
    output_buffer_limit: OutputBufferLimit = OutputBufferLimit()
    max_batch_bytes: int = 256 * 1024  # batches coalesce whole units up to this size
    snapshot_chunk_bytes: int = 1 * MiB  # well under gRPC's default 4 MiB message cap

    def __post_init__(self) -> None:
        if self.ping_period <= 0 or self.timeout <= 0:
            raise ValueError("ping_period and timeout must be positive")
        if self.max_batch_bytes <= 0 or self.snapshot_chunk_bytes <= 0:
            raise ValueError("max_batch_bytes and snapshot_chunk_bytes must be positive")


@dataclass(frozen=True)
class ReplicaSettings:
    """The replica side: auth, liveness, acks and reconnection backoff."""

    masterauth: str | None = None  # secret sent in the handshake
    masteruser: str | None = None  # the user that secret belongs to (None: the default user)
    timeout: float = 60.0  # repl-timeout: the primary is dead after this long without a message
    ack_period: float = 1.0  # acks go after every batch and at least this often
    backoff_initial: float = 0.1  # first reconnect delay; doubles per failed attempt
    backoff_max: float = 5.0  # cap, also the pace for non-retriable errors
    # While contended, a batch is applied in slices of whole units taking about this much CPU
    # time each, the CPU yielded between them (see ReplicaLink._apply); 0 (the default)
    # applies each batch in one go: a replica that yields its CPU falls behind its primary.
    apply_slice_seconds: float = 0.0

    def __post_init__(self) -> None:
        if self.timeout <= 0 or self.ack_period <= 0:
            raise ValueError("timeout and ack_period must be positive")
        if self.apply_slice_seconds < 0:
            raise ValueError("apply_slice_seconds must not be negative")
        if not 0 < self.backoff_initial <= self.backoff_max:
            raise ValueError("need 0 < backoff_initial <= backoff_max")
