"""A replica's `StateMachine` (the `replication` package's contract): the primary's batches
applied to this node through the one log applier (node/log/applier.py) and logged as the
primary's bytes, verbatim (`EffectLog.replicated`), never re-encoded: offsets and unit
boundaries stay the primary's, in the backlog (the link stores batches as received) and in
the AOF alike. A full sync's snapshot replaces the data set, through a temporary file in the
data directory (the persistence format reads files).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Final, Protocol

from node.commands.context import Session
from node.engine.keyspace import Keyspace
from node.log.applier import ApplyError, LogApplier, replica_failure
from node.persistence.snapshot import SnapshotError, SnapshotMeta, load_snapshot

if TYPE_CHECKING:
    from node.persistence.service import Persistence
    from node.server.server import Server

log = logging.getLogger("rill.replication")

# Errors applying the primary's log are logged at most this often (a diverged replica would
# otherwise log every batch until its full sync).
_APPLY_ERROR_LOG_PERIOD: Final = 10.0


class Replication(Protocol):
    """What the state machine uses of the node's replication side (node/replication/role.py's
    `ReplicationNode`, which builds it)."""

    apply_errors: int  # counted here: INFO's rill_apply_errors

    @property
    def server(self) -> Server: ...
    @property
    def persistence(self) -> Persistence: ...
    def snapshot(self) -> bytes: ...
    def fsynced_offset(self) -> int: ...
    def written_offset(self) -> int: ...


class NodeStateMachine:
    """The `StateMachine` of one replica link: applies the primary's units to this node
    (`node.log.applier`) and logs the primary's bytes verbatim.

    One per link: when the node changes role the machine is detached, and anything a link
    that is being cancelled still hands it is refused."""

    def __init__(self, repl: Replication, primary_addr: str) -> None:
        self.repl = repl
        self.server = repl.server
        self.active = True
        self.primary_addr = primary_addr
        self.applier = LogApplier(self.server, self._new_session(), replica_failure)
        self._last_error_log = 0.0

    @property
    def session(self) -> Session:
        return self.applier.session

    def _new_session(self) -> Session:
        # The replication link's client: replays log-only forms ("replay") and may write on a
        # replica ("master", which EXEC and the server honour). Its address is the primary's
        # host:port, as Redis's master client shows it (MONITOR lines, client tools parse it).
        session = Session(self.server.node, 0, addr=self.primary_addr)
        session.authenticated = True
        session.flags.update(("replay", "master"))
        return session

    def _check_active(self) -> None:
        if not self.active:
            raise ApplyError("the link was detached (the node changed role)")

    def apply(self, data: bytes, end_offset: int) -> None:
        self._check_active()
        effects = self.server.effects
        # The node logs the primary's bytes, not its own re-encoding of them.
        try:
            with effects.applying_primary_units():
                self.applier.apply_batch(data)
        except ApplyError:
            self._log_failure()
            raise
        # The primary's PUBLISHes go on to sub-replicas (the backlog), not to the AOF.
        effects.replicated(data, end_offset, self.applier.replica_only)
        self.server.after_batch()

    def _log_failure(self) -> None:
        self.repl.apply_errors += 1
        now = time.monotonic()
        if now - self._last_error_log >= _APPLY_ERROR_LOG_PERIOD:
            self._last_error_log = now
            log.error(
                "== CRITICAL == this replica could not apply its primary's log (%d time(s) so far): "
                "it diverged; asking for a full sync", self.repl.apply_errors,
            )

    def load_snapshot(self, chunks: Sequence[bytes], offset: int) -> None:
        self._check_active()
        server = self.server
        fresh = Keyspace(len(server.keyspace.dbs))
        meta = _load_snapshot_bytes(chunks, fresh, server.config.get("dir"))
        if meta.offset != offset:
            raise ApplyError(f"the snapshot is at offset {meta.offset}, the primary announced {offset}")
        with self.repl.persistence.replacing_data_set():
            server.touch_all(None)
            server.keyspace.replace_with(fresh)
            server.effects.restart(meta.replid, offset)
        self.applier.session = self._new_session()
        server.after_batch()
        log.info("MASTER <-> REPLICA sync: loaded %d keys at offset %d", server.keyspace.key_count(), offset)

    def snapshot(self) -> bytes:
        return self.repl.snapshot()

    def fsynced_offset(self) -> int:
        return self.repl.fsynced_offset()

    def written_offset(self) -> int:
        return self.repl.written_offset()


def _load_snapshot_bytes(chunks: Sequence[bytes], keyspace: Keyspace, directory: str) -> SnapshotMeta:
    """Loads a snapshot received in chunks (the persistence format reads files: it goes
    through a temporary file in the data directory)."""
    fd, path = tempfile.mkstemp(prefix="temp-replsync-", suffix=".rdb", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        try:
            return load_snapshot(path, keyspace).meta
        except SnapshotError as exc:
            raise ApplyError(f"the primary's snapshot is unusable: {exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
