"""The node's replication role: it plugs the node into the stream-agnostic `replication`
package and owns everything that changes with the role.

* Always: one `Backlog` (sharing the effect log's history: replid, replid2) and one `Primary`
  serving it on the replication gRPC port (node/replication/discovery.py), so a replica can
  serve sub-replicas and a promoted replica serves its siblings at once.
* As a primary: the effect log's units feed the backlog (node/replication/backlog_feed.py);
  min-replicas-to-write gates writes; WAIT and WAITAOF park clients (node/replication/waits.py).
* As a replica: a `ReplicaLink` to the primary, with a `NodeStateMachine`
  (node/replication/node_state_machine.py) that applies each batch and logs the primary's bytes.
* Role changes (REPLICAOF host port, REPLICAOF NO ONE [EPOCH e]) and the replica's fsynced
  and written offsets.
* The FAILOVER command (node/replication/planned_failover.py) and, with `fenced-mode yes`, fenced
  mode (node/replication/fencing.py): epochs on the link, FENCE, the primary's lease.
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
from node.replication.access import replica_access
from node.replication.backlog_feed import BacklogFeed
from node.replication.discovery import DiscoveryError, RedisPrimary, discover_repl_port, listen_port
from node.replication.fencing import NOT_FENCED, Fencing
from node.replication.info import role_reply
from node.replication.link_settings import client_tls, primary_settings, replica_settings, server_tls
from node.replication.loop_load import CpuContention
from node.replication.node_state_machine import NodeStateMachine
from node.replication.planned_failover import Failover
from node.replication.redis_link import RedisReplicaLink
from node.replication.redis_primary import RedisReplicas
from node.replication.waits import Waits
from node.server.role_view import RoleView
from replication import Backlog, CommitPoint, Primary, ReplicaLink, ReplicationError, new_replid

if TYPE_CHECKING:
    from node.server.server import Server
    from node.server.write_gates import WriteGates

log = logging.getLogger("rill.replication")

# disconnectAllBlockedClients (replication.c): what clients blocked on a node that becomes a
# replica are told.
UNBLOCKED: Final = (
    "UNBLOCKED force unblock from blocking operation, instance state changed (master -> replica?)"
)
NOREPLICAS: Final = "NOREPLICAS Not enough good replicas to write."
ALREADY_CONNECTED: Final = "OK Already connected to specified master"
FAILING_OVER: Final = "ERR REPLICAOF not allowed while failing over."

# Retry delays while asking a primary for its replication port: doubling from first to max.
_DISCOVERY_FIRST_DELAY: Final = 0.1
_DISCOVERY_MAX_DELAY: Final = 5.0


def _log_connect_failure(task: asyncio.Future[None]) -> None:
    # The connect task only ends by cancellation or by starting the link; anything else is a
    # bug that would otherwise leave the link silently down.
    if not task.cancelled() and task.exception() is not None:
        log.error("Replication link setup failed", exc_info=task.exception())


class Role(RoleView):
    """The node's replication role, which `ReplicationNode` owns and alone changes (the
    server and the commands read it through node/server/role_view.py's `RoleView`)."""

    def become_primary(self) -> None:
        self._name = "master"

    def become_replica(self) -> None:
        self._name = "slave"


class ReplicationNode:
    """The replication side of one node (`ctx.node.replication`). It is given the node's
    `Role` and the write gates it sets (node/server/write_gates.py: the quorum and the
    lease) when it is built."""

    def __init__(self, server: Server, persistence: Persistence, role: Role, write_gates: WriteGates) -> None:
        self.server = server
        self.persistence = persistence
        self.role = role
        self.write_gates = write_gates
        self.config = server.config
        # Who may replicate from this node: ACL users allowed PSYNC and REPLCONF.
        self._access = replica_access(server.acl, server.now_ms)
        self.backlog: Backlog | None = None
        self.primary: Primary | None = None
        self.link: ReplicaLink | RedisReplicaLink | None = None
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
        self._min_replicas = False
        self._stopping: asyncio.Future[None] | None = None
        self.fencing = Fencing(self.config)
        self.failover = Failover(self)
        # The committed point of this node's log (committed reads: node/replication/committed.py).
        self.commit = CommitPoint()
        # Redis replicas of this node (PSYNC/SYNC on the RESP port).
        self.redis_replicas = RedisReplicas(self)
        self.waits = Waits(server, persistence, self.feed, self.fencing)
        if self.fencing.enabled:
            # Without its lease a primary adds nothing to its log on its own either: no
            # expired key is deleted, no PUBLISH propagated (node/commands/expiry.py, pubsub.py).
            write_gates.require_lease(self._lease_refusal)
        # A replica acks at once when its AOF's fsync advances (a primary's WAITAOF waits).
        persistence.add_durability_listener(self._durability_changed)
        self.config.on_change(self._on_config_change)

    # -- lifecycle -----------------------------------------------------------------------

    def attach(self) -> None:
        """After the data set is loaded, before clients connect: the backlog continues the
        loaded log, and a node configured with `replicaof` is read-only from the start."""
        effects = self.server.effects
        self.fencing.load(effects.replid, effects.offset)
        # The backlog records the effect log's history: the same object, never a copy.
        self.backlog = Backlog(self.config.get_int("repl-backlog-size"), offset=effects.offset, history=effects.history)
        self.backlog.add_listener(self)
        self.feed.attach(self.backlog)
        self.primary = Primary(
            self.backlog, self.snapshot, primary_settings(self.config, self._access), before_resync=self.feed.record,
            fence=self.fencing.fence, lease=self.fencing.lease, failover_handler=self._psync_failover,
            commit=self.commit,
        )
        self.waits.attach(self.primary)
        self.primary.registry.add_ack_listener(self.failover.check)
        if self.config.get("replicaof"):
            self.role.become_replica()
            self.feed.record()
            self.fencing.stepped_down()
        elif effects.offset > 0:
            # A primary restarted from disk may have lost a tail its replicas received (a
            # snapshot older than the log, an everysec power loss): continuing under the
            # loaded id could let a replica "continue" across different bytes. As Redis
            # does on loading, a new history starts; the loaded id stays valid as replid2 up
            # to the loaded offset, so replicas that are not ahead still resync partially.
            self.backlog.shift_replid()
            self.history_changed()
        if self.server.role == "master":
            self.fencing.start_as_primary()
        self._update_write_gate()

    async def start(self) -> None:
        """Listens for replicas, and connects to the configured primary."""
        assert self.primary is not None
        # On every bind address, as RESP: a replica dials the host it was given for the RESP
        # port (REPLICAOF host port), whichever of them that is.
        hosts = self.config.get("bind").split() or ["127.0.0.1"]
        self.repl_port = await self.primary.start(hosts, listen_port(self.config, self.server.port or self.server.tls_port),
                                                 tls=server_tls(self.config))
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

    def end_offset(self) -> int:
        """The node's replication position (master_repl_offset): the effect log's offset,
        which owns it (node/log/effect_log.py), once the units committed so far are in the
        backlog; a backlog that then ends elsewhere is a bug (PositionMismatch)."""
        self.flush()
        effects = self.server.effects
        if self.backlog is not None:
            effects.check_follower("the backlog", self.backlog.end)
        return effects.offset

    def snapshot(self) -> bytes:
        """The keyspace at the log's end, in the persistence snapshot format."""
        end = self.end_offset()
        effects = self.server.effects
        meta = SnapshotMeta(effects.replid, effects.replid2, effects.second_offset, end, int(time.time()))
        out = io.BytesIO()
        dump(out, self.server.keyspace, meta)
        return out.getvalue()

    # -- BacklogListener ------------------------------------------------------------------

    def log_appended(self, end: int) -> None:
        return None

    def history_changed(self) -> None:
        """A new replid (promotion, a replica adopting its primary's) or a reset backlog (a
        full sync): the history is the effect log's already (shared), and so is the offset
        (whoever reset the backlog moved the log there first). The AOF records it at once."""
        backlog = self.backlog
        assert backlog is not None
        self.server.effects.check_follower("the backlog", backlog.end)
        # The same log under a new id (a restart, a reset): its epochs are recorded under it
        # before the AOF records the id. A replica's and a promotion's change recorded them.
        self.fencing.rename(backlog.replid)
        self.persistence.log_identity_changed()

    # -- role changes ---------------------------------------------------------------------

    def replicaof(self, session: Session, host: str, port: int) -> Any:
        """REPLICAOF host port."""
        if self.failover.running:
            return ReplyError(FAILING_OVER)
        if self.master is not None and self.master[0].lower() == host.lower() and self.master[1] == port:
            log.info("REPLICAOF would result into synchronization with the master we are already "
                     "connected with. No operation performed.")
            return ALREADY_CONNECTED
        self._become_replica(host, port, f"id={session.id} addr={session.addr}")
        return OK

    def become_replica_for_failover(self, host: str, port: int) -> None:
        """FAILOVER hands over: a replica of the target, whose first handshake asks it to
        take over (replicationSetMaster while failing over)."""
        self._become_replica(host, port, "FAILOVER", failover=True)

    def _become_replica(self, host: str, port: int, who: str, *, failover: bool = False) -> None:
        assert self.primary is not None
        self.feed.record()
        was_master = self.server.role == "master"
        self.demotions += int(was_master)
        self.fencing.stepped_down()
        self.role.become_replica()
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
        self._connecting = asyncio.ensure_future(self._connect(host, port, previous, failover))
        self._connecting.add_done_callback(_log_connect_failure)

    def promote(self, session: Session | None, epoch: int | None = None, why: str = "user request",
                position: tuple[int, int] | None = None) -> Any:
        """REPLICAOF NO ONE [EPOCH epoch [POSITION log-epoch offset]]: a new history starts
        here; the old id stays valid as replid2 up to this offset, so the old primary's other
        replicas continue partially from this node. In fenced mode only with an epoch this
        node may be promoted in (a primary promoted in a newer epoch starts that tenure) and
        the position of its log the sentinels relied on; the refusal is returned."""
        if self.failover.running:
            return ReplyError(FAILING_OVER)
        assert self.backlog is not None and self.primary is not None
        at = self.end_offset()
        refusal = self.fencing.check_promotion(epoch, at, position)
        if refusal is not None:
            return ReplyError(refusal)
        if self.server.role == "master" and epoch is None:
            return OK
        replid = new_replid()
        # Fenced mode: the tenure is on disk before the node acts on it; a failed save
        # refuses the promotion and leaves the node as it was.
        refusal = self.fencing.promoted(epoch, at, replid)
        if refusal is not None:
            return ReplyError(refusal)
        self._drop_link()
        self.master = None
        self.config.set("replicaof", "", startup=True)
        self.role.become_primary()
        self.promotions += 1
        self.backlog.shift_replid(replid)
        self.primary.waits.reopen()
        who = f"id={session.id} addr={session.addr}" if session is not None else "the node"
        log.info("MASTER MODE enabled (%s from '%s'): new replid %s, replid2 %s valid up to offset %d%s",
                 why, who, self.backlog.replid, self.backlog.replid2, self.backlog.second_offset,
                 f", epoch {epoch}" if epoch is not None else "")
        return OK

    def _psync_failover(self, replid: str) -> str | None:
        """A primary's PSYNC FAILOVER (its FAILOVER command) reached this node: take over if
        this node follows that primary's history (syncCommand)."""
        log.info("Failover request received for replid %s.", replid)
        assert self.backlog is not None
        if self.server.role == "master":
            return "PSYNC FAILOVER can't be sent to a master."
        if self.fencing.enabled:
            return "PSYNC FAILOVER is not available in fenced mode"
        if replid != self.backlog.replid:
            return "PSYNC FAILOVER replid must match my replid."
        self.promote(None, why="failover request")
        return None

    def fence(self, epoch: int) -> Any:
        """FENCE epoch (fenced mode): promise to follow and lead nothing older than `epoch`;
        a replica stops acknowledging an older primary at once, a primary older than it
        stops acknowledging writes and WAITs. Replies [fence epoch, log epoch, offset, node id],
        or an error when the promise could not be saved (then nothing changed)."""
        if not self.fencing.enabled:
            return ReplyError(NOT_FENCED)
        reply = self.fencing.fence_to(epoch, self.end_offset())
        if isinstance(reply, ReplyError):
            return reply
        if self.link is not None:
            self.link.request_ack()  # its next ack finds the fence and drops the link instead
        self.waits.changed()  # WAITs of a primary fenced now get their error
        return reply

    def _drop_link(self) -> asyncio.Future[None] | None:
        """Detaches and cancels the current link at once; returns its end to await."""
        if self.machine is not None:
            self.machine.active = False
            self.machine = None
        if self._connecting is not None:
            self._connecting.cancel()
            self._connecting = None
        link, self.link = self.link, None
        self.feed.own_log = False
        if link is not None:
            self._stopping = asyncio.ensure_future(link.stop())
        return self._stopping

    async def _connect(self, host: str, port: int, previous: asyncio.Future[None] | None, failover: bool) -> None:
        if previous is not None:
            with contextlib.suppress(Exception):
                await previous
        assert self.backlog is not None
        delay = _DISCOVERY_FIRST_DELAY
        while True:
            try:
                repl_port = await discover_repl_port(
                    host, port, self.config.get("masterauth"), float(self.config.get_int("repl-timeout")),
                    user=self.config.get("masteruser"), tls=self.server.tls.client_context(),
                )
                break
            except RedisPrimary:
                self._follow_redis(host, port)
                return
            except (OSError, TimeoutError, DiscoveryError) as exc:
                reason = str(exc) or type(exc).__name__
                if reason != self.link_error:
                    log.warning("Error asking MASTER %s:%d for its replication port: %s (retrying)", host, port, reason)
                self.link_error = reason
                await asyncio.sleep(delay)
                delay = min(delay * 2, _DISCOVERY_MAX_DELAY)
        self.link_error = ""
        machine = NodeStateMachine(self, f"{host}:{port}")
        announce_host, announce_port = self._announced()
        link = ReplicaLink(
            host, repl_port, self.backlog, machine, replica_settings(self.config),
            replica_id=self.fencing.node_id or self.server.run_id, announce_host=announce_host, announce_port=announce_port,
            tls=client_tls(self.config), contended=self._contended, fence=self.fencing.fence, failover=failover,
            on_handshake=self._handshake_done if failover else None, commit=self.commit,
        )
        self.machine, self.link = machine, link
        self._connecting = None
        log.info("Connecting to MASTER %s:%d (replication port %d) at offset %d of %s",
                 host, port, repl_port, self.end_offset(), self.server.effects.replid)
        link.start()

    def _follow_redis(self, host: str, port: int) -> None:
        """The primary is a redis-server: its own replication protocol, this node logging
        its own effects for its replicas and AOF (node/replication/redis_link.py)."""
        self.link_error = ""
        announce_host, announce_port = self._announced()
        link = RedisReplicaLink(self, host, port, replica_settings(self.config), announce_host, announce_port)
        self.link = link
        self._connecting = None
        self.feed.own_log = True
        log.info("MASTER %s:%d is a redis-server: replicating over Redis's protocol", host, port)
        link.start()

    def _announced(self) -> tuple[str, int]:
        """The address this replica gives its primary (Redis's REPLCONF ip-address and
        listening-port): replica-announce-ip (empty: the primary uses the connection's source
        address) and replica-announce-port, else the RESP port (the TLS one with
        tls-replication, as Redis's listening-port)."""
        server = self.server
        port = server.tls_port if self.config.get("tls-replication") == "yes" and server.tls_port else server.port
        return self.config.get("replica-announce-ip"), self.config.get_int("replica-announce-port") or port

    def _handshake_done(self, error: ReplicationError | None) -> None:
        self.failover.handshake_done(error)

    def _contended(self) -> bool:
        """Whether other processes want the event loop's CPU (the link slices batches then)."""
        return self._cpu_contention.contended(time.monotonic())

    def unblock_all(self, message: str) -> None:
        """Every blocked client (XREAD, XREADGROUP, WAIT, WAITAOF...) gets `message` as error."""
        server = self.server
        for conn in list(server.connections.values()):
            # A client postponed by a pause is not: its command runs again from the start
            # when the pause ends (disconnectAllBlockedClients).
            if conn.waiter is not None and conn.waiter.block.postponed is None:
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

    def written_offset(self) -> int:
        """What this replica reports as in its AOF (write(2) done, which a crash of the
        process keeps; fenced mode's WAIT and lease count it): -1 when its AOF does not hold
        its current data — no AOF, or after a full sync or a new history until the base of
        the new data is written (a restart would load the old AOF)."""
        persistence = self.persistence
        writer = persistence.writer
        backlog = self.backlog
        if writer is None or backlog is None or persistence.aof_state != AOF_ON or persistence.rewrite_scheduled:
            return -1
        if writer.written_offset + len(writer.buf) != self.server.effects.offset:
            return -1
        return max(-1, min(writer.written_offset, backlog.end))

    def _update_write_gate(self) -> None:
        needed = self.config.get_int("min-replicas-to-write")
        max_lag = self.config.get_int("min-replicas-max-lag")
        # Redis checks good replicas only when both settings are non-zero.
        self._min_replicas = bool(needed and max_lag)
        gated = self._min_replicas or self.fencing.enabled
        self.write_gates.require_quorum(self._check_writes if gated else None)

    def _check_writes(self) -> str | None:
        """Why a write is refused before it runs: min-replicas-to-write (checkGoodReplicasStatus),
        then in fenced mode a primary that holds no lease."""
        primary = self.primary
        if primary is None:
            return None
        if self._min_replicas:
            needed = self.config.get_int("min-replicas-to-write")
            good = primary.waits.good_replicas(float(self.config.get_int("min-replicas-max-lag")))
            if good < needed:
                return NOREPLICAS
        return self.fencing.refusal(primary)

    def _lease_refusal(self) -> str | None:
        return self.fencing.refusal(self.primary)

    def _on_config_change(self, name: str, value: str) -> None:
        if name == "repl-backlog-size" and self.backlog is not None:
            self.backlog.resize(int(value))
        elif name in ("repl-timeout", "repl-ping-replica-period", "requirepass", "client-output-buffer-limit", "masterauth",
                      "masteruser", "repl-apply-slice-time"):
            if self.primary is not None:
                self.primary.update_settings(primary_settings(self.config, self._access))
            if self.link is not None:
                self.link.settings = replica_settings(self.config)
        elif name in ("min-replicas-to-write", "min-replicas-max-lag"):
            self._update_write_gate()
        elif name in ("replica-announce-ip", "replica-announce-port") and self.link is not None:
            # Told at the next (re)connection, as Redis sends REPLCONF at each handshake.
            self.link.announce_host, self.link.announce_port = self._announced()

    # -- CLIENT KILL -------------------------------------------------------------------------

    def kill_links(self, kind: str, user: bytes | None = None) -> int:
        """CLIENT KILL of the replication links, which Redis lists as clients: "master" drops
        this replica's link to its primary, "slave" every replica's stream from this node
        (those authenticated as `user`, when given). They reconnect at once and continue
        from their offsets. Returns how many closed."""
        if kind == "master":
            return 1 if self.link is not None and self.link.disconnect() else 0
        name = None if user is None else user.decode("utf-8", "surrogateescape")
        reason = "connection killed by CLIENT KILL"
        killed = self.redis_replicas.disconnect_all(reason, name)
        return killed + (self.primary.disconnect_all(reason, name) if self.primary is not None else 0)

    # -- Redis replicas: REPLCONF, PSYNC, SYNC on the RESP port -------------------------------

    def replconf(self, session: Session, argv: list[bytes]) -> Any:
        return self.redis_replicas.replconf(session, argv)

    def sync(self, session: Session, argv: list[bytes], psync: bool) -> Any:
        return self.redis_replicas.sync(session, argv, psync)

    # -- ROLE ------------------------------------------------------------------------------

    def role_reply(self) -> list[Any]:
        return role_reply(self)
