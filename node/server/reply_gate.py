"""Replies held back until the AOF holds the effects they depend on (node/persistence/aof.py
explains the policy: with `appendfsync always` no client sees an acknowledgement, nor data,
that is not fsynced). The connections hold and the persistence service releases.
"""

from __future__ import annotations

from collections import deque
from typing import Protocol


class HeldConnection(Protocol):
    """A client connection whose output can be held back and released later."""

    def release_output(self, data: bytes) -> None: ...


class ReplyGate:
    """Replies waiting for the AOF. A reply produced while the effect log is ahead of what is
    durable (`required > durable`) waits until `durable` reaches the log offset it was
    produced at: it may acknowledge, or show, any effect up to there. A connection with held
    output keeps holding, so its replies stay in order. `stalled` (a write error) lets new
    replies of other connections go out while the held ones wait for the retry."""

    __slots__ = ("durable", "held", "required", "stalled")

    def __init__(self) -> None:
        self.required = 0  # effect-log offset of the last effect appended
        self.durable = 0  # offset up to which effects are on disk (per the policy)
        self.stalled = False
        self.held: dict[HeldConnection, deque[tuple[int, bytes]]] = {}

    def reset(self, offset: int) -> None:
        self.required = self.durable = offset

    def must_hold(self, conn: HeldConnection) -> bool:
        return conn in self.held or (self.required > self.durable and not self.stalled)

    def hold(self, conn: HeldConnection, data: bytes) -> None:
        chunks = self.held.get(conn)
        if chunks is None:
            self.held[conn] = deque([(self.required, data)])
        else:
            chunks.append((self.required, data))

    def release(self, durable: int) -> None:
        """`durable` is now on disk: send every held reply that waited for no more."""
        self.durable = max(self.durable, durable)
        held = self.held
        if not held:
            return
        durable = self.durable
        for conn in list(held):
            chunks = held[conn]
            out: list[bytes] = []
            while chunks and chunks[0][0] <= durable:
                out.append(chunks.popleft()[1])
            if not chunks:
                del held[conn]
            if out:
                conn.release_output(out[0] if len(out) == 1 else b"".join(out))
