"""The contract between the log shipper and whatever it replicates (the node's engine, or a
toy in tests): apply whole units of the log, replace state from a snapshot, produce one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class StateMachine(Protocol):
    def apply(self, data: bytes, end_offset: int) -> None:
        """Applies whole log units (never a split one) ending at end_offset: a batch from the
        primary, or a slice of one (ReplicaLink applies a large batch in several calls).

        Must be all-or-nothing: if it raises, the state must be as before the call. The link
        then drops the connection and asks for a full sync on the next attempt.
        """
        ...

    def load_snapshot(self, chunks: Sequence[bytes], offset: int) -> None:
        """Replaces the whole state with the snapshot (its chunks concatenated), which is the
        primary's state at `offset`. Called once every chunk arrived, so the old state keeps
        serving reads during the transfer. All-or-nothing like apply."""
        ...

    def snapshot(self) -> bytes:
        """The full state, as load_snapshot reads it. Called synchronously on the event loop
        so it reflects exactly the log up to the backlog's current end."""
        ...

    def fsynced_offset(self) -> int:
        """Offset of the log durably on disk here; -1 when nothing is persisted."""
        ...
