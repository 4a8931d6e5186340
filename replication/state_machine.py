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

        All-or-nothing as far as the data can be checked without applying it: a batch that is
        not a valid piece of the log (malformed, not whole units, a command the machine does
        not know) must be refused, raising, with the state as before the call. Once applying
        began, a command can only fail when the state had already diverged from the
        primary's (the log is deterministic): the machine may then raise with the commands
        before it applied, since the state before the call was wrong as well. Either way the
        link drops the connection and asks for a full sync on the next attempt, which
        replaces the whole state.
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

    def written_offset(self) -> int:
        """Offset of the log handed to the OS here (write(2) done: a crash of the process
        keeps it, a power loss may not); -1 when the log file does not hold the current log
        (nothing persisted, or a new log whose base is not written yet). Fenced mode's WAIT
        and lease count only what it covers."""
        ...
