"""The node's replication role: it plugs the stream engine into the stream-agnostic
`replication` package and owns everything that changes with the role.

* Always: one `Backlog` (the node's replication identity: replid, replid2, offsets) and one
  `Primary` serving it on the replication gRPC port, so a replica can serve sub-replicas and a
  promoted replica serves its siblings at once. The effect log and the backlog count the same
  bytes; whenever the backlog's history changes (promotion, full sync, adopting a new replid)
  the effect log takes its identity, so the AOF records it.
* As a primary: every committed unit of the effect log goes into the backlog (coalesced per
  event-loop iteration), from the first replica resync on: until then, as Redis keeps no
  backlog before a replica attaches, the backlog only follows the log's offset and nothing is
  encoded for it (see `_record`). WAIT/WAITAOF clients are parked until enough replicas acknowledge;
  min-replicas-to-write gates writes.
* As a replica: a `ReplicaLink` to the primary, with a `NodeStateMachine` that applies each
  batch through `Server.execute` in a replay session (XADDs, most of a replica's work, go
  straight to their stream: grouped by stream and appended in C from the batch's bytes, see
  `logged_xadd_block` and `Stream.append_logged_run`, the others through
  `append_logged_xadd`) and logs the primary's bytes verbatim
  (`EffectLog.replicated`), never its own re-encoding: offsets and unit boundaries stay the
  primary's, in the backlog (the link stores batches as received) and in the AOF alike.

Where the primary's replication port is: a node listens for replication on `repl-port`, or on
its RESP port + 10000 when that is 0 (an OS-chosen port if that exceeds 65535), and reports it
as `repl_grpc_port` in INFO replication. `REPLICAOF host port` names the primary's RESP port;
the replica reads that field from the primary's RESP port (after AUTH with masterauth) and
connects there, so no replica needs to know how its primary was configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import hiredis

from node.commands.context import Session
from node.commands.reply import OK, ReplyError
from node.log.applier import ApplyError, LogApplier, replica_failure
from node.log.encode import encode_command
from node.persistence.service import AOF_ON, Persistence
from node.persistence.snapshot import SnapshotError, SnapshotMeta, dump, load_snapshot
from node.replication.waits import Waits
from node.server.loop_load import CpuContention, LoopLoad
from replication import (
    Backlog,
    ClientTls,
    OutputBufferLimit,
    Primary,
    PrimarySettings,
    ReplicaLink,
    ReplicaSettings,
    ServerTls,
)
from replication.backlog import new_replid

if TYPE_CHECKING:
    from node.server.server import Server

log = logging.getLogger("rill.replication")

# disconnectAllBlockedClients (replication.c): what clients blocked on a node that becomes a
# replica are told.
UNBLOCKED: Final = (
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
)
NOREPLICAS: Final = "NOREPLICAS Not enough good replicas to write."
ALREADY_CONNECTED: Final = "OK Already connected to specified master"

REPL_PORT_OFFSET: Final = 10000  # default replication port = RESP port + this (as Redis Cluster's bus)
INFO_PORT_FIELD: Final = "repl_grpc_port"

# Retry delays while asking a primary for its replication port: doubling from first to max.
_DISCOVERY_FIRST_DELAY: Final = 0.1
_DISCOVERY_MAX_DELAY: Final = 5.0
# Errors applying the primary's log are logged at most this often (a diverged replica would
# otherwise log every batch until its full sync).
_APPLY_ERROR_LOG_PERIOD: Final = 10.0


def _log_connect_failure(task: asyncio.Future[None]) -> None:
    # The connect task only ends by cancellation or by starting the link; anything else is a
    # bug that would otherwise leave the link silently down.
    if not task.cancelled() and task.exception() is not None:
        log.error("Replication link setup failed", exc_info=task.exception())


class NodeStateMachine:
    """The `StateMachine` of one replica link: applies the primary's units to this node
    (`node.log.applier`) and logs the primary's bytes verbatim.

    One per link: when the node changes role the machine is detached, and anything a link
    that is being cancelled still hands it is refused."""

    def __init__(self, repl: ReplicationNode, primary_addr: str) -> None:
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
        assert self.server.node is not None
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
        effects.muted = True
        try:
            self.applier.apply_batch(data)
        except ApplyError:
            self._log_failure()
            raise
        finally:
            effects.muted = False
        effects.replicated(data, end_offset)
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
        fresh: list[dict[bytes, Any]] = [{} for _ in server.keyspace.dbs]
        meta = _load_snapshot_bytes(chunks, fresh, server.config.get("dir"))
        if meta.offset != offset:
            raise ApplyError(f"the snapshot is at offset {meta.offset}, the primary announced {offset}")
        with self.repl.persistence.replacing_data_set():
            server.touch_all(None)
            for db, loaded in zip(server.keyspace.dbs, fresh):
                db.clear()
                db.update(loaded)
            server.effects.restart(meta.replid, offset)
        self.applier.session = self._new_session()
        server.after_batch()
        log.info("MASTER <-> REPLICA sync: loaded %d keys at offset %d", server.keyspace.key_count(), offset)

    def snapshot(self) -> bytes:
        return self.repl.snapshot()

    def fsynced_offset(self) -> int:
        return self.repl.fsynced_offset()


def _load_snapshot_bytes(chunks: Sequence[bytes], dbs: list[dict[bytes, Any]], directory: str) -> SnapshotMeta:
    """Loads a snapshot received in chunks (the persistence format reads files: it goes
    through a temporary file in the data directory)."""
    fd, path = tempfile.mkstemp(prefix="temp-replsync-", suffix=".rdb", dir=directory)
    try:
        with os.fdopen(fd, "wb") as f:
            for chunk in chunks:
                f.write(chunk)
        try:
            return load_snapshot(path, dbs).meta
        except SnapshotError as exc:
            raise ApplyError(f"the primary's snapshot is unusable: {exc}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


class DiscoveryError(Exception):
    """The primary's RESP port did not tell its replication port."""


async def discover_repl_port(host: str, port: int, masterauth: str, timeout: float) -> int:
    """The replication gRPC port of the node whose RESP port is host:port, read from its
    INFO replication (`repl_grpc_port`)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    try:
        commands: list[list[bytes]] = []
        if masterauth:
            commands.append([b"AUTH", masterauth.encode()])
        commands.append([b"INFO", b"replication"])
        writer.write(b"".join(encode_command(c) for c in commands))
        parser = hiredis.Reader()
        replies: list[object] = []
        async with asyncio.timeout(timeout):
            while len(replies) < len(commands):
                reply = parser.gets()
                if reply is not False:
                    replies.append(reply)
                    continue
                data = await reader.read(65536)
                if not data:
                    raise DiscoveryError("the primary closed the connection")
                parser.feed(data)
    finally:
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
    for reply in replies:
        if isinstance(reply, hiredis.ReplyError):
            raise DiscoveryError(f"the primary answered: {reply}")
    info = replies[-1]
    text = info.decode("utf-8", "replace") if isinstance(info, bytes) else ""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == INFO_PORT_FIELD and value.strip().isdigit():
            if int(value) == 0:
                raise DiscoveryError("the primary does not listen for replicas yet")
            return int(value)
    raise DiscoveryError(f"{host}:{port} is not a Rill node (its INFO replication has no {INFO_PORT_FIELD})")


class ReplicationNode:
    """The replication side of one node (`ctx.node.replication`)."""

    def __init__(self, server: Server, persistence: Persistence) -> None:
        self.server = server
        self.persistence = persistence
        self.config = server.config
        self.backlog: Backlog | None = None
        self.primary: Primary | None = None
        self.link: ReplicaLink | None = None
        self.machine: NodeStateMachine | None = None
        self.repl_port = 0
        self.master: tuple[str, int] | None = None  # REPLICAOF host port (the RESP address)
        self.apply_errors = 0
        self.link_error = ""  # why the primary's replication port is not known yet
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pending: list[bytes] = []
        self._pending_end = 0
        self._last_flush = 0.0
        self._batch_interval = self.config.get_int("repl-batch-interval") / 1000
        self._busy_batch_interval = self.config.get_int("repl-busy-batch-interval") / 1000
        self._loop_load = LoopLoad()
        self._cpu_contention = CpuContention()
        self._connecting: asyncio.Task[None] | None = None
        self._stopping: asyncio.Future[None] | None = None
        # The backlog records the log's units once a replica needs them (see _record);
        # the bound method is kept so the effect log can also remove it.
        self._recording = False
        self._unit_listener = self._on_unit
        self.waits = Waits(server, persistence, self.flush)
        # A replica acks at once when its AOF's fsync advances (a primary's WAITAOF waits).
        persistence.add_durability_listener(self._durability_changed)
        self.config.on_change(self._on_config_change)

    # -- lifecycle -----------------------------------------------------------------------

    def attach(self) -> None:
        """After the data set is loaded, before clients connect: the backlog continues the
        loaded log, and a node configured with `replicaof` is read-only from the start."""
        self._loop = asyncio.get_running_loop()
        effects = self.server.effects
        # The backlog records the effect log's history: the same object, never a copy.
        self.backlog = Backlog(self.config.get_int("repl-backlog-size"), offset=effects.offset, history=effects.history)
        self.backlog.add_listener(self)
        self.primary = Primary(self.backlog, self.snapshot, self._primary_settings(), before_resync=self._record)
        self.waits.attach(self.primary)
        if self.config.get("replicaof"):
            self.server.role = "slave"
            self._record()
        elif effects.offset > 0:
            # A primary restarted from disk may have lost a tail its replicas received (a
            # snapshot older than the log, an everysec power loss): continuing under the
            # loaded id could let a replica "continue" across different bytes. As Redis
            # does on loading, a new history starts; the loaded id stays valid as replid2 up
            # to the loaded offset, so replicas that are not ahead still resync partially.
            self.backlog.shift_replid()
            self.history_changed()
        self._update_write_gate()

    async def start(self) -> None:
        """Listens for replicas, and connects to the configured primary."""
        assert self.primary is not None
        host = (self.config.get("bind").split() or ["127.0.0.1"])[0]
        self.repl_port = await self.primary.start(host, self._listen_port(), tls=self._server_tls())
        target = self.config.get("replicaof").split()
        if len(target) == 2:
            self._become_replica(target[0], int(target[1]), "the configuration")

    def _listen_port(self) -> int:
        configured = self.config.get_int("repl-port")
        if configured:
            return configured
        derived = self.server.port + REPL_PORT_OFFSET
        return derived if self.server.port and derived <= 65535 else 0

    async def stop(self) -> None:
        """Shutdown: the link stops before anything else, so nothing is applied afterwards."""
        self.flush()
        stopping = self._drop_link()
        if stopping is not None:
            with contextlib.suppress(Exception):
                await stopping
        if self.primary is not None:
            await self.primary.stop(grace=0.5)

    # -- the primary side: feeding the backlog --------------------------------------------

    def _on_unit(self, data: bytes, end_offset: int) -> None:
        """Effect-log listener. On a replica the units are the primary's, which the link
        already stores in the backlog itself."""
        if self.backlog is None or self.server.role != "master":
            return
        if not self._pending and self._loop is not None:
            # With repl-batch-interval set, flushes under load are at least that far apart
            # (fewer, larger batches: less CPU, at most that much more replication lag,
            # nothing more to WAIT); an idle link flushes at once. With 0, the default, the
            # units of each event-loop turn flush at its end and the replica streams batch
            # them while a batch waits for its ack (replication.primary). While this loop is
            # saturated, repl-busy-batch-interval applies instead when it is longer.
            now = time.monotonic()
            interval = self._batch_interval
            if self._busy_batch_interval > interval and self._loop_load.saturated(now):
                interval = self._busy_batch_interval
            delay = self._last_flush + interval - now
            if delay > 0:
                self._loop.call_later(delay, self.flush)
            else:
                self._loop.call_soon(self.flush)
        self._pending.append(data)
        self._pending_end = end_offset

    def _record(self) -> None:
        """From now on every unit of the effect log goes into the backlog: at a replica's
        first resync, or when this node becomes a replica. Until then the backlog holds no
        history (a replica can only fully sync, as from a Redis primary without a backlog),
        the effect log encodes nothing for it, and `flush` only moves its end along."""
        if self._recording or self.backlog is None:
            return
        self.flush()
        self._recording = True
        self.server.effects.add_listener(self._unit_listener)

    def flush(self) -> None:
        """Moves the units committed so far into the backlog: once per event-loop turn (or
        at most every repl-batch-interval under load, when set, and every
        repl-busy-batch-interval while this loop is saturated), at once when a client waits
        for replicas (WAIT, WAITAOF), and before anything reads the backlog's end (snapshot,
        INFO, ROLE, a role change)."""
        if not self._recording:
            if self.backlog is not None and self.backlog.end != self.server.effects.offset:
                self.backlog.skip_to(self.server.effects.offset)
            return
        pending = self._pending
        if not pending or self.backlog is None:
            return
        self._pending = []
        self._last_flush = time.monotonic()
        backlog = self.backlog
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        if backlog.end + len(data) != self._pending_end:
            # The effect log and the backlog disagree: a bug. The backlog restarts at the
            # log's position, which sends every replica through a full sync.
            log.error("the backlog ends at %d but the effect log at %d: resetting the backlog",
                      backlog.end + len(data), self._pending_end)
            # A new id: a replica at exactly the new end must not continue across the gap.
            backlog.reset(new_replid(), self._pending_end)
            self.history_changed()
            return
        backlog.extend(data, [len(unit) for unit in pending])

    def snapshot(self) -> bytes:
        """The keyspace at the backlog's end, in the persistence snapshot format."""
        self.flush()
        backlog = self.backlog
        assert backlog is not None
        meta = SnapshotMeta(backlog.replid, backlog.replid2, backlog.second_offset, backlog.end, int(time.time()))
        out = io.BytesIO()
        dump(out, self.server.keyspace.dbs, meta)
        return out.getvalue()

    # -- BacklogListener ------------------------------------------------------------------

    def log_appended(self, end: int) -> None:
        return None

    def history_changed(self) -> None:
        """A new replid (promotion, a replica adopting its primary's) or a reset backlog (a
        full sync, a reset after a disagreement): the history is the effect log's already; a
        reset also moves the log to the backlog's offset. The AOF records it at once."""
        backlog = self.backlog
        assert backlog is not None
        effects = self.server.effects
        if effects.offset != backlog.end:
            effects.move_to(backlog.end)
        self.persistence.log_identity_changed()

    # -- role changes ---------------------------------------------------------------------

    def replicaof(self, session: Session, host: str, port: int) -> Any:
        """REPLICAOF host port."""
        if self.master is not None and self.master[0].lower() == host.lower() and self.master[1] == port:
            log.info("REPLICAOF would result into synchronization with the master we are already "
                     "connected with. No operation performed.")
            return ALREADY_CONNECTED
        self._become_replica(host, port, f"id={session.id} addr={session.addr}")
        return OK

    def _become_replica(self, host: str, port: int, who: str) -> None:
        assert self.primary is not None
        self._record()
        was_master = self.server.role == "master"
        self.server.role = "slave"
        self.config.set("replicaof", f"{host} {port}", startup=True)
        self.master = (host, port)
        self.unblock_all(UNBLOCKED)
        self.primary.waits.close("instance state changed")
        previous = self._drop_link()
        if was_master:
            log.info("Before turning into a replica, using my own master parameters to synthesize a "
                     "cached master: I may be able to synchronize with the new master with just a "
                     "partial transfer.")
        log.info("REPLICAOF %s:%d enabled (user request from '%s')", host, port, who)
        self.link_error = ""
        self._connecting = asyncio.ensure_future(self._connect(host, port, previous))
        self._connecting.add_done_callback(_log_connect_failure)

    def promote(self, session: Session | None) -> None:
        """REPLICAOF NO ONE: a new history starts here; the old id stays valid as replid2 up to
        this offset, so the old primary's other replicas continue partially from this node."""
        if self.server.role == "master":
            return
        assert self.backlog is not None and self.primary is not None
        self._drop_link()
        self.master = None
        self.config.set("replicaof", "", startup=True)
        self.server.role = "master"
        self.backlog.shift_replid()
        self.primary.waits.reopen()
        who = f"id={session.id} addr={session.addr}" if session is not None else "the node"
        log.info("MASTER MODE enabled (user request from '%s'): new replid %s, replid2 %s valid up to offset %d",
                 who, self.backlog.replid, self.backlog.replid2, self.backlog.second_offset)

    def _drop_link(self) -> asyncio.Future[None] | None:
        """Detaches and cancels the current link at once; returns its end to await."""
        if self.machine is not None:
            self.machine.active = False
            self.machine = None
        if self._connecting is not None:
            self._connecting.cancel()
            self._connecting = None
        link, self.link = self.link, None
        if link is not None:
            self._stopping = asyncio.ensure_future(link.stop())
        return self._stopping

    async def _connect(self, host: str, port: int, previous: asyncio.Future[None] | None) -> None:
        if previous is not None:
            with contextlib.suppress(Exception):
                await previous
        assert self.backlog is not None
        delay = _DISCOVERY_FIRST_DELAY
        while True:
            try:
                repl_port = await discover_repl_port(
                    host, port, self.config.get("masterauth"), float(self.config.get_int("repl-timeout"))
                )
                break
            except (OSError, TimeoutError, DiscoveryError) as exc:
                reason = str(exc) or type(exc).__name__
                if reason != self.link_error:
                    log.warning("Error asking MASTER %s:%d for its replication port: %s (retrying)", host, port, reason)
                self.link_error = reason
                await asyncio.sleep(delay)
                delay = min(delay * 2, _DISCOVERY_MAX_DELAY)
        self.link_error = ""
        machine = NodeStateMachine(self, f"{host}:{port}")
        link = ReplicaLink(
            host, repl_port, self.backlog, machine, self._replica_settings(),
            replica_id=self.server.run_id, announce_port=self.server.port, tls=self._client_tls(),
            contended=self._contended,
        )
        self.machine, self.link = machine, link
        self._connecting = None
        log.info("Connecting to MASTER %s:%d (replication port %d) at offset %d of %s",
                 host, port, repl_port, self.backlog.end, self.backlog.replid)
        link.start()

    def _contended(self) -> bool:
        """Whether other processes want the event loop's CPU (the link slices batches then)."""
        return self._cpu_contention.contended(time.monotonic())

    def unblock_all(self, message: str) -> None:
        """Every blocked client (XREAD, XREADGROUP, WAIT, WAITAOF...) gets `message` as error."""
        server = self.server
        for conn in list(server.clients.values()):
            if conn.waiter is not None:
                server.blocking.unblock(conn.waiter, ReplyError(message))
        self.waits.forget_all()
        server.after_batch()

    # -- fsync acks, min-replicas ------------------------------------------------------------

    def _durability_changed(self) -> None:
        if self.link is not None:
            self.link.request_ack()

    def fsynced_offset(self) -> int:
        """What this replica reports as durably on disk: the AOF's fsynced offset, once the
        AOF on disk follows the current history (not while a base for a full sync, or for a
        new replid, is still being written); -1 otherwise."""
        persistence = self.persistence
        writer = persistence.writer
        backlog = self.backlog
        if persistence.aof_state != AOF_ON or writer is None or backlog is None or persistence.rewrite_scheduled:
            return -1
        if writer.written_offset + len(writer.buf) != self.server.effects.offset:
            return -1
        return max(-1, min(writer.synced_offset, backlog.end))

    def _update_write_gate(self) -> None:
        needed = self.config.get_int("min-replicas-to-write")
        max_lag = self.config.get_int("min-replicas-max-lag")
        # Redis checks good replicas only when both settings are non-zero.
        self.server.dispatcher.write_quorum = self._check_good_replicas if needed and max_lag else None

    def _check_good_replicas(self) -> str | None:
        primary = self.primary
        if primary is None:
            return None
        needed = self.config.get_int("min-replicas-to-write")
        good = primary.waits.good_replicas(float(self.config.get_int("min-replicas-max-lag")))
        return NOREPLICAS if good < needed else None

    # -- settings -------------------------------------------------------------------------

    def _primary_settings(self) -> PrimarySettings:
        timeout = float(self.config.get_int("repl-timeout"))
        hard, soft, seconds = self.config.output_limits.get("slave", (0, 0, 0))
        return PrimarySettings(
            requirepass=self.config.requirepass or None,
            # A heartbeat at least twice per repl-timeout, so an idle link never looks dead.
            ping_period=min(float(self.config.get_int("repl-ping-replica-period")), timeout / 2),
            timeout=timeout,
            output_buffer_limit=OutputBufferLimit(hard, soft, float(seconds)),
        )

    def _replica_settings(self) -> ReplicaSettings:
        return ReplicaSettings(
            masterauth=self.config.get("masterauth") or None,
            timeout=float(self.config.get_int("repl-timeout")),
            apply_slice_seconds=self.config.get_int("repl-apply-slice-time") / 1e6,
        )

    def _server_tls(self) -> ServerTls | None:
        if self.config.get("repl-tls") != "yes":
            return None
        if not self.config.get("repl-tls-cert-file") or not self.config.get("repl-tls-key-file"):
            raise OSError("repl-tls yes needs repl-tls-cert-file and repl-tls-key-file (the node's certificate)")
        ca = self.config.get("repl-tls-ca-cert-file")
        mutual = self.config.get("repl-tls-auth-clients") == "yes"
        return ServerTls.from_files(
            self.config.get("repl-tls-cert-file"), self.config.get("repl-tls-key-file"),
            ca if mutual and ca else None,
        )

    def _client_tls(self) -> ClientTls | None:
        if self.config.get("repl-tls") != "yes":
            return None
        cert = self.config.get("repl-tls-cert-file")
        key = self.config.get("repl-tls-key-file")
        return ClientTls.from_files(
            self.config.get("repl-tls-ca-cert-file") or None, cert or None, key or None,
        )

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "repl-backlog-size" and self.backlog is not None:
            self.backlog.resize(int(value))
        elif name in ("repl-timeout", "repl-ping-replica-period", "requirepass", "client-output-buffer-limit", "masterauth",
                      "repl-apply-slice-time"):
            if self.primary is not None:
                self.primary.update_settings(self._primary_settings())
            if self.link is not None:
                self.link.settings = self._replica_settings()
        elif name in ("min-replicas-to-write", "min-replicas-max-lag"):
            self._update_write_gate()
        elif name == "repl-batch-interval":
            self._batch_interval = int(value) / 1000
        elif name == "repl-busy-batch-interval":
            self._busy_batch_interval = int(value) / 1000

    # -- ROLE and INFO --------------------------------------------------------------------

    def _link_state(self) -> str:
        """ROLE's replica state (connect, connecting, sync, connected)."""
        link = self.link
        if link is None:
            return "connect"
        status = link.status()
        if status.link_up:
            return "connected"
        return "sync" if status.sync_in_progress else "connecting"

    def role_reply(self) -> list[Any]:
        self.flush()
        backlog = self.backlog
        offset = backlog.end if backlog is not None else self.server.effects.offset
        if self.server.role == "master":
            replicas = self.primary.registry.replicas() if self.primary is not None else []
            return [b"master", offset, [
                [r.host.encode(), str(r.port).encode(), str(r.offset).encode()]
                for r in replicas if r.state == "online"
            ]]
        host, port = self.master if self.master is not None else ("", 0)
        up = self.link is not None and self.link.status().link_up
        return [b"slave", host.encode(), port, self._link_state().encode(), offset if up else -1]

    def info_fields(self) -> list[tuple[str, object]]:
        """INFO replication, Redis 7.2's fields in its order, then Rill's replication port (and
        on a replica how many batches it applied in slices)."""
        self.flush()
        server = self.server
        fields: list[tuple[str, object]] = [("role", server.role)]
        if server.role == "slave":
            fields += self._replica_fields()
        replicas = self.primary.registry.replicas() if self.primary is not None else []
        fields.append(("connected_slaves", len(replicas)))
        if self.config.get_int("min-replicas-to-write") and self.config.get_int("min-replicas-max-lag"):
            good = self.primary.waits.good_replicas(float(self.config.get_int("min-replicas-max-lag"))) if self.primary else 0
            fields.append(("min_slaves_good_slaves", good))
        for i, r in enumerate(replicas):
            fields.append((f"slave{i}", f"ip={r.host},port={r.port},state={r.state},offset={r.offset},lag={int(r.lag)}"))
        fields.append(("master_failover_state", "no-failover"))
        backlog = self.backlog
        if backlog is not None:
            info = backlog.info()
            fields += [
                ("master_replid", info.master_replid),
                ("master_replid2", info.master_replid2),
                ("master_repl_offset", info.master_repl_offset),
                ("second_repl_offset", info.second_repl_offset),
                ("repl_backlog_active", info.repl_backlog_active if self._recording else 0),
                ("repl_backlog_size", info.repl_backlog_size),
                ("repl_backlog_first_byte_offset", info.repl_backlog_first_byte_offset if self._recording else 0),
                ("repl_backlog_histlen", info.repl_backlog_histlen),
            ]
        else:
            effects = server.effects
            fields += [
                ("master_replid", effects.replid),
                ("master_replid2", effects.replid2),
                ("master_repl_offset", effects.offset),
                ("second_repl_offset", effects.second_offset + 1 if effects.second_offset >= 0 else -1),
                ("repl_backlog_active", 0),
                ("repl_backlog_size", self.config.get_int("repl-backlog-size")),
                ("repl_backlog_first_byte_offset", 0),
                ("repl_backlog_histlen", 0),
            ]
        fields.append((INFO_PORT_FIELD, self.repl_port))
        if server.role == "slave":
            # How often this replica's CPU was contended enough to apply in slices.
            status = self.link.status() if self.link is not None else None
            fields.append(("repl_apply_sliced_batches", status.sliced_batches if status is not None else 0))
        return fields

    def _replica_fields(self) -> list[tuple[str, object]]:
        host, port = self.master if self.master is not None else ("", 0)
        offset = self.backlog.end if self.backlog is not None else self.server.effects.offset
        status = self.link.status() if self.link is not None else None
        up = status is not None and status.link_up
        syncing = status is not None and status.sync_in_progress
        fields: list[tuple[str, object]] = [
            ("master_host", host),
            ("master_port", port),
            ("master_link_status", "up" if up else "down"),
            ("master_last_io_seconds_ago", status.last_io_seconds_ago if up and status is not None else -1),
            ("master_sync_in_progress", int(syncing)),
            ("slave_read_repl_offset", offset),
            ("slave_repl_offset", offset),
        ]
        if syncing and status is not None:
            total, read = status.sync_total_bytes, status.sync_read_bytes
            fields += [
                ("master_sync_total_bytes", total),
                ("master_sync_read_bytes", read),
                ("master_sync_left_bytes", total - read),
                ("master_sync_perc", f"{100.0 * read / total if total > 0 else 0.0:.2f}"),
                ("master_sync_last_io_seconds_ago", status.last_io_seconds_ago),
            ]
        if not up:
            down = status.link_down_since_seconds if status is not None else -1
            fields.append(("master_link_down_since_seconds", down))
        fields += [
            ("slave_priority", 100),
            ("slave_read_only", 1 if self.config.get("replica-read-only") == "yes" else 0),
            ("replica_announced", 1),
        ]
        return fields

    def sync_stats(self) -> list[tuple[str, object]]:
        """INFO stats' sync_full, sync_partial_ok, sync_partial_err (this node as a primary)."""
        primary = self.primary
        if primary is None:
            return [("sync_full", 0), ("sync_partial_ok", 0), ("sync_partial_err", 0)]
        return [
            ("sync_full", primary.full_syncs),
            ("sync_partial_ok", primary.partial_syncs),
            ("sync_partial_err", primary.partial_sync_errors),
        ]

    def backlog_memory(self) -> int:
        return self.backlog.memory_bytes() if self.backlog is not None else 0
