"""The node's replication role: it plugs the node into the stream-agnostic `replication`
package and owns everything that changes with the role.

* Always: one `Backlog` (sharing the effect log's history: replid, replid2) and one `Primary`
  serving it on the replication gRPC port (node/replication/discovery.py), so a replica can
  serve sub-replicas and a promoted replica serves its siblings at once.
* As a primary: the effect log's units feed the backlog (node/replication/backlog_feed.py);
  min-replicas-to-write gates writes; WAIT and WAITAOF park clients (node/replication/waits.py).
* As a replica: a `ReplicaLink` to the primary, with a `NodeStateMachine`
  (node/replication/state_machine.py) that applies each batch and logs the primary's bytes.
* Role changes (REPLICAOF host port, REPLICAOF NO ONE) and the replica's fsynced offset.
ROLE and INFO's replication figures are rendered by node/replication/info.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import logging
import time
from typing import TYPE_CHECKING, Any, Final

from node.commands.context import Session
from node.commands.reply import OK, ReplyError
from node.persistence.service import AOF_ON, Persistence
from node.persistence.snapshot import SnapshotMeta, dump
from node.replication.backlog_feed import BacklogFeed
from node.replication.discovery import DiscoveryError, discover_repl_port, listen_port
from node.replication.info import role_reply
from node.replication.loop_load import CpuContention
from node.replication.settings import client_tls, primary_settings, replica_settings, server_tls
from node.replication.state_machine import NodeStateMachine
from node.replication.waits import Waits
from replication import Backlog, Primary, ReplicaLink

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

# Retry delays while asking a primary for its replication port: doubling from first to max.
_DISCOVERY_FIRST_DELAY: Final = 0.1
_DISCOVERY_MAX_DELAY: Final = 5.0


def _log_connect_failure(task: asyncio.Future[None]) -> None:
    # The connect task only ends by cancellation or by starting the link; anything else is a
    # bug that would otherwise leave the link silently down.
    if not task.cancelled() and task.exception() is not None:
        log.error("Replication link setup failed", exc_info=task.exception())


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
        # Role changes since start (the metrics' rill_role_changes_total): to master, to replica.
        self.promotions = 0
        self.demotions = 0
        self.link_error = ""  # why the primary's replication port is not known yet
        self.feed = BacklogFeed(server)
        self._cpu_contention = CpuContention()
        self._connecting: asyncio.Task[None] | None = None
        self._stopping: asyncio.Future[None] | None = None
        self.waits = Waits(server, persistence, self.flush)
        # A replica acks at once when its AOF's fsync advances (a primary's WAITAOF waits).
        persistence.add_durability_listener(self._durability_changed)
        self.config.on_change(self._on_config_change)

    # -- lifecycle -----------------------------------------------------------------------

    def attach(self) -> None:
        """After the data set is loaded, before clients connect: the backlog continues the
        loaded log, and a node configured with `replicaof` is read-only from the start."""
        effects = self.server.effects
        # The backlog records the effect log's history: the same object, never a copy.
        self.backlog = Backlog(self.config.get_int("repl-backlog-size"), offset=effects.offset, history=effects.history)
        self.backlog.add_listener(self)
        self.feed.attach(self.backlog)
        self.primary = Primary(self.backlog, self.snapshot, primary_settings(self.config), before_resync=self.feed.record)
        self.waits.attach(self.primary)
        if self.config.get("replicaof"):
            self.server.role = "slave"
            self.feed.record()
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
        self.repl_port = await self.primary.start(host, listen_port(self.config, self.server.port), tls=server_tls(self.config))
        target = self.config.get("replicaof").split()
        if len(target) == 2:
            self._become_replica(target[0], int(target[1]), "the configuration")

    async def stop(self) -> None:
        """Shutdown: the link stops before anything else, so nothing is applied afterwards."""
        self.flush()
        stopping = self._drop_link()
        if stopping is not None:
            with contextlib.suppress(Exception):
                await stopping
        if self.primary is not None:
            await self.primary.stop(grace=0.5)

    # -- the primary side ------------------------------------------------------------------

    def flush(self) -> None:
        """Moves the units committed so far into the backlog (`BacklogFeed.flush`): at once
        when a client waits for replicas (WAIT, WAITAOF), and before anything reads the
        backlog's end (snapshot, INFO, ROLE, a role change)."""
        self.feed.flush()

    def snapshot(self) -> bytes:
        """The keyspace at the backlog's end, in the persistence snapshot format."""
        self.flush()
        backlog = self.backlog
        assert backlog is not None
        meta = SnapshotMeta(backlog.replid, backlog.replid2, backlog.second_offset, backlog.end, int(time.time()))
        out = io.BytesIO()
        dump(out, self.server.keyspace, meta)
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
        self.feed.record()
        was_master = self.server.role == "master"
        self.demotions += int(was_master)
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
        self.promotions += 1
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
            host, repl_port, self.backlog, machine, replica_settings(self.config),
            replica_id=self.server.run_id, announce_port=self.server.port, tls=client_tls(self.config),
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
        for conn in list(server.connections.values()):
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
        if writer.end_offset != self.server.effects.offset:
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

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "repl-backlog-size" and self.backlog is not None:
            self.backlog.resize(int(value))
        elif name in ("repl-timeout", "repl-ping-replica-period", "requirepass", "client-output-buffer-limit", "masterauth",
                      "repl-apply-slice-time"):
            if self.primary is not None:
                self.primary.update_settings(primary_settings(self.config))
            if self.link is not None:
                self.link.settings = replica_settings(self.config)
        elif name in ("min-replicas-to-write", "min-replicas-max-lag"):
            self._update_write_gate()

    # -- ROLE ------------------------------------------------------------------------------

    def role_reply(self) -> list[Any]:
        return role_reply(self)
