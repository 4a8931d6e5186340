"""The primary side of replication: a gRPC service that handshakes replicas (auth, PSYNC
decision), streams a snapshot when needed, then ships the log from the backlog in batches with
heartbeats, reads acks into the ReplicaRegistry, and drops replicas that fall too far behind
or go silent.

Flow control: a replica's session holds only a position in the shared backlog, never a copy
of the log. The backlog keeps what the slowest session still has to send (the retention
floor), and `client-output-buffer-limit replica` bounds how far a session may trail: past the
hard limit, or past the soft limit for too long, it is disconnected and resyncs later. A
replica that stops reading blocks its stream's writes (gRPC/HTTP2 flow control), so its
position stops and it hits the limit; a write stuck for repl-timeout drops it too. So memory
is at most about max(backlog size, hard limit) whatever the replicas do.

Fenced mode (a `Fence` and a `Lease` given): the handshake refuses a replica fenced at a
newer epoch than this primary's, carries the primary's epoch and epoch history, and resyncs
fully a replica whose (log epoch, offset) left that history; every batch and heartbeat
carries a lease stamp (heartbeats at least every third of the lease), and the stamps the
replicas echo feed the lease (docs/safety.md, *Fenced mode*).

A hello with `failover` set is Redis's PSYNC ... FAILOVER: the node's `failover_handler`
decides, and promotes this node, before the handshake goes on as any other.

Committed reads (a `CommitPoint` given, replication/commit.py): every batch and heartbeat
carries the committed offset, and a replica told less than the current one gets a heartbeat as
soon as its link has nothing else to send.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import grpc
from google.protobuf.message import DecodeError

from replication.backlog import Backlog, PsyncDecision
from replication.commit import CommitPoint
from replication.epochs import Fence
from replication.lease import Lease
from replication.pb import replication_pb2 as pb
from replication.pb import replication_pb2_grpc as pb_grpc
from replication.registry import STATE_ONLINE, STATE_SEND_BULK, ReplicaRegistry
from replication.replids import is_replid
from replication.settings import PrimarySettings
from replication.tls import ServerTls
from replication.wait import AckWaiters
from replication.wire import MAX_ANNOUNCE_HOST, PROTOCOL_VERSION, SERVER_OPTIONS, is_run_id

log = logging.getLogger("replication.primary")

Snapshot = Callable[[], bytes]
Context = grpc.aio.ServicerContext[pb.ReplicaMessage, pb.PrimaryMessage]


@dataclass(frozen=True)
class _Refusal:
    """Why a session ends with an error status (sent to the replica and logged once)."""

    code: grpc.StatusCode
    message: str


class _Session:
    """One connected replica's stream: where it is in the log and how it is doing."""

    def __init__(self, replica_id: str, peer: str, host: str, port: int, start: int, user: str = "default") -> None:
        self.replica_id = replica_id
        self.user = user  # the user the replica authenticated as (CLIENT KILL USER)
        self.peer = peer
        self.host = host
        self.port = port
        self.streaming = False  # position is meaningful (set once the resync is decided)
        self.position = start  # next offset to hand to the stream (its writes completed)
        self.sent = start  # end of what was handed to gRPC, maybe still being written
        self.acked = start  # highest applied offset it acknowledged
        self.online = False
        self.last_ack = 0.0
        self.soft_since: float | None = None  # when pending bytes first went over the soft limit
        self.ack_requested = False
        self.wake = asyncio.Event()
        self.closed = False
        self.refusal: _Refusal | None = None
        self.body: asyncio.Task[None] | None = None
        self.connected_at = time.monotonic()
        self.epoch = 0  # this primary's epoch when the session's handshake was answered
        self.commit_sent = 0  # the committed offset this replica was last told

    def close(self, refusal: _Refusal | None) -> None:
        """Ends the session (idempotent); the first reason given wins."""
        if self.closed:
            return
        self.closed = True
        self.refusal = refusal
        if self.body is not None and self.body is not asyncio.current_task():
            self.body.cancel()


class Primary:
    """Serves the node's log to replicas.

    The node calls `append(data, end_offset)` for every committed unit of its effect log,
    passes `snapshot` (its state at the backlog's current end, as bytes), and reads
    `registry` (INFO/ROLE), `waits` (WAIT, WAITAOF, min-replicas-to-write) and `backlog`.
    """

    def __init__(
        self,
        backlog: Backlog,
        snapshot: Snapshot,
        settings: PrimarySettings | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        before_resync: Callable[[], None] | None = None,
        fence: Fence | None = None,
        lease: Lease | None = None,
        failover_handler: Callable[[str], str | None] | None = None,
        commit: CommitPoint | None = None,
    ) -> None:
        """`before_resync` runs when a replica's resync begins, before the backlog is
        consulted: a node that does not record its log until a replica needs it starts now.
        `fence` and `lease` turn fenced mode on (both or neither). `failover_handler(replid)`
        answers a replica's PSYNC FAILOVER: the refusal's text, or None once this node was
        promoted."""
        if (fence is None) != (lease is None):
            raise ValueError("fenced mode needs both a fence and a lease")
        self.backlog = backlog
        self._before_resync = before_resync
        self.settings = settings if settings is not None else PrimarySettings()
        self.registry = ReplicaRegistry(clock)
        self.fence = fence
        self.lease = lease
        self.waits = AckWaiters(
            self.registry, request_acks=self.request_acks, acknowledging=self.acknowledging if lease else None
        )
        self._snapshot = snapshot
        self._clock = clock
        self._sessions: dict[str, _Session] = {}
        self._server: grpc.aio.Server | None = None
        self._servicer = _Servicer(self)
        self.full_syncs = 0  # Redis's sync_full
        self.partial_syncs = 0  # sync_partial_ok
        self.partial_sync_errors = 0  # sync_partial_err
        self._failover_handler = failover_handler
        # Set while handshakes must be refused (this node is failing over): the error text.
        self.refuse_syncs: str | None = None
        self.commit = commit
        if commit is not None:
            commit.add_listener(self._commit_moved)
        backlog.add_listener(self)

    # ------------------------------------------------------------------ node-facing API

    def append(self, data: bytes, end_offset: int) -> None:
        """Adds one committed unit of the node's log. `end_offset` must be where the backlog
        ends after it: the node's effect log and the backlog count the same bytes."""
        expected = self.backlog.end + len(data)
        if end_offset != expected:
            raise ValueError(f"unit ends at {end_offset} but the backlog would end at {expected}")
        self.backlog.append(data)

    def update_settings(self, settings: PrimarySettings) -> None:
        """CONFIG SET of requirepass, repl-timeout, limits...: applies to live sessions."""
        self.settings = settings

    def add_to_server(self, server: grpc.aio.Server) -> None:
        """Registers the service on a server the node already runs (e.g. with other APIs)."""
        pb_grpc.add_ReplicationServicer_to_server(self._servicer, server)

    async def start(self, host: str | Sequence[str] = "127.0.0.1", port: int = 0, tls: ServerTls | None = None) -> int:
        """Starts a gRPC server for this service on one address or several (the same port on
        each); returns the bound port (port 0 picks one, on the first address)."""
        hosts = [host] if isinstance(host, str) else list(host)
        server = grpc.aio.server(options=SERVER_OPTIONS)
        self.add_to_server(server)
        for h in hosts:
            address = f"[{h}]:{port}" if ":" in h else f"{h}:{port}"
            bound = server.add_secure_port(address, tls.credentials()) if tls else server.add_insecure_port(address)
            if bound == 0:
                raise OSError(f"cannot listen for replication on {address}")
            port = bound
        await server.start()
        self._server = server
        log.info("replication listening on %s port %d%s", " ".join(hosts), port, " (TLS)" if tls else "")
        return port

    async def stop(self, grace: float | None = 1.0) -> None:
        """Disconnects every replica, fails pending WAITs, stops the server if we own one."""
        self.disconnect_all("primary is shutting down")
        self.waits.close("primary is shutting down")
        if self._server is not None:
            await self._server.stop(grace)
            self._server = None
        self.backlog.remove_listener(self)
        self.backlog.retain_from(None)

    def disconnect(self, replica_id: str, reason: str = "disconnected by the primary") -> bool:
        """CLIENT KILL TYPE replica for one replica; it reconnects and resyncs."""
        session = self._sessions.get(replica_id)
        if session is None:
            return False
        session.close(_Refusal(grpc.StatusCode.UNAVAILABLE, reason))
        self._update_floor()
        return True

    def disconnect_all(self, reason: str, user: str | None = None) -> int:
        """Closes every replica's stream (CLIENT KILL TYPE replica, shutdown), or those of
        the replicas authenticated as `user`; they reconnect. Returns how many there were."""
        open_sessions = [
            session for session in self._sessions.values() if not session.closed and user in (None, session.user)
        ]
        for session in open_sessions:
            session.close(_Refusal(grpc.StatusCode.UNAVAILABLE, reason))
        self._update_floor()
        return len(open_sessions)

    def request_acks(self) -> None:
        """Asks every online replica for an immediate ack (Redis's REPLCONF GETACK)."""
        for session in self._sessions.values():
            if session.online and not session.closed:
                session.ack_requested = True
                session.wake.set()

    def _commit_moved(self, offset: int) -> None:
        # Waking an idle pump sends a heartbeat with the news; a busy one carries it in its
        # next batch anyway, and one waiting for an ack is woken by it (_take_ack).
        for session in self._sessions.values():
            if not session.closed and self._owes_commit_news(session):
                session.wake.set()

    def _owes_commit_news(self, session: _Session) -> bool:
        """Whether the committed point moved past what `session`'s replica was told and a
        heartbeat may tell it now: only with no batch in flight, whose ack wakes the pump and
        whose successor carries the news anyway. (With 50 clients on XADD + WAIT 2, a heartbeat
        after most acks made a third of the messages to each replica.)"""
        return session.online and session.acked >= session.sent and session.commit_sent < self._committed()

    def _committed(self) -> int:
        return self.commit.offset if self.commit is not None else 0

    def session_count(self) -> int:
        return len(self._sessions)

    def acknowledging(self) -> bool:
        """Whether this primary may acknowledge writes and answer WAIT now: always outside
        fenced mode; in it, while it leads its epoch and holds its lease."""
        if self.fence is None or self.lease is None:
            return True
        return self.fence.leads() and self.lease.holds()

    # ------------------------------------------------------------------ backlog events

    def log_appended(self, end: int) -> None:
        limit = self.settings.output_buffer_limit
        max_batch = self.settings.max_batch_bytes
        now = self._clock()
        dropped = False
        for session in list(self._sessions.values()):
            if session.closed or not session.streaming:
                continue
            pending = end - session.position
            if limit.hard_bytes and pending >= limit.hard_bytes:
                self._drop_for_lag(session, pending, f"hard limit {limit.hard_bytes}")
                dropped = True
                continue
            if limit.soft_bytes and pending >= limit.soft_bytes:
                if session.soft_since is None:
                    session.soft_since = now
                elif now - session.soft_since > limit.soft_seconds:
                    self._drop_for_lag(session, pending, f"soft limit {limit.soft_bytes} for {limit.soft_seconds}s")
                    dropped = True
                    continue
            else:
                session.soft_since = None
            if self._may_send(session, max_batch):
                # Not while a batch waits for its ack: the ack wakes the pump (_take_ack),
                # and a wake per flush would only make it look and go back to sleep.
                session.wake.set()
        if dropped:
            self._update_floor()

    def history_changed(self) -> None:
        # PSYNC2: replicas must handshake again to learn the new replication id (they continue
        # partially through replid2). Redis disconnects its sub-replicas the same way.
        self.disconnect_all("replication id changed, reconnect")

    def _drop_for_lag(self, session: _Session, pending: int, which: str) -> None:
        session.close(
            _Refusal(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"replica output buffer over the {which} bytes: {pending} bytes pending",
            )
        )

    def _update_floor(self) -> None:
        positions = [s.position for s in self._sessions.values() if s.streaming and not s.closed]
        self.backlog.retain_from(min(positions) if positions else None)

    # ------------------------------------------------------------------ one replica's stream

    async def serve(self, context: Context) -> None:
        """The Sync RPC: handshake, resync, then stream until the session ends."""
        peer = context.peer()
        hello, refusal = await self._read_hello(context)
        if refusal is None and hello is not None:
            refusal = self._admit(hello)
        if refusal is not None or hello is None:
            refusal = refusal or _Refusal(grpc.StatusCode.INVALID_ARGUMENT, "no hello")
            log.warning("refused replica %s: %s", peer, refusal.message)
            await context.abort(refusal.code, refusal.message)
        host = hello.announce_host or _peer_host(peer)
        session = _Session(hello.replica_id, peer, host, hello.announce_port, hello.offset, hello.user or "default")
        previous = self._sessions.get(session.replica_id)
        if previous is not None:
            previous.close(_Refusal(grpc.StatusCode.ABORTED, "superseded by a newer link from the same replica"))
        self._sessions[session.replica_id] = session
        body = asyncio.create_task(self._run(session, hello, context))
        session.body = body
        try:
            await asyncio.wait([body])
        finally:
            if not body.done():
                body.cancel()
                session.close(_Refusal(grpc.StatusCode.CANCELLED, "stream cancelled"))
            self._end_session(session, body)
        if session.refusal is not None:
            await context.abort(session.refusal.code, session.refusal.message)

    def _end_session(self, session: _Session, body: asyncio.Task[None]) -> None:
        session.closed = True
        if self._sessions.get(session.replica_id) is session:
            del self._sessions[session.replica_id]
            self.registry.remove(session.replica_id)
        self._update_floor()
        failure = None if not body.done() or body.cancelled() else body.exception()
        if session.refusal is None and failure is not None:
            log.error("replica %s stream failed", session.replica_id, exc_info=failure)
            session.refusal = _Refusal(grpc.StatusCode.INTERNAL, f"primary error: {failure}")
        log.info(
            "replica %s (%s:%d) disconnected at offset %d (primary at %d) after %.1fs: %s",
            session.replica_id[:8],
            session.host,
            session.port,
            session.acked,
            self.backlog.end,
            time.monotonic() - session.connected_at,
            session.refusal.message if session.refusal else "closed by the replica",
        )

    async def _read_hello(self, context: Context) -> tuple[pb.Hello | None, _Refusal | None]:
        try:
            async with asyncio.timeout(self.settings.timeout):
                message: object = await context.read()
        except TimeoutError:
            return None, _Refusal(grpc.StatusCode.DEADLINE_EXCEEDED, f"no hello within {self.settings.timeout}s")
        except DecodeError as exc:
            return None, _Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"the hello is not a valid message: {exc}")
        if not isinstance(message, pb.ReplicaMessage) or message.WhichOneof("kind") != "hello":
            return None, _Refusal(grpc.StatusCode.INVALID_ARGUMENT, "the first message must be a hello")
        return message.hello, self._check_hello(message.hello, context.peer())

    def _check_hello(self, hello: pb.Hello, peer: str) -> _Refusal | None:
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        if hello.protocol_version != PROTOCOL_VERSION:
            return _Refusal(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"protocol version {hello.protocol_version} is not supported (this primary speaks {PROTOCOL_VERSION})",
            )
        authenticate = self.settings.authenticate
        if authenticate is not None:
            refusal = authenticate(hello.user, hello.auth, peer)
            if refusal is not None:
                return _Refusal(grpc.StatusCode.UNAUTHENTICATED if not refusal.startswith("NOPERM")
                                else grpc.StatusCode.PERMISSION_DENIED, refusal)
        secret = self.settings.requirepass
        if secret and authenticate is None:
            if not hello.auth:
                return _Refusal(grpc.StatusCode.UNAUTHENTICATED, "NOAUTH Authentication required.")
            if not hmac.compare_digest(hello.auth.encode(), secret.encode()):
                return _Refusal(
                    grpc.StatusCode.UNAUTHENTICATED, "WRONGPASS invalid username-password pair or user is disabled."
                )
        if not is_run_id(hello.replica_id):
            return _Refusal(invalid, "replica id must be 40 lowercase hex characters")
        if hello.replid and not is_replid(hello.replid):
            return _Refusal(invalid, "replid must be empty or 40 lowercase hex characters")
        if hello.offset < 0:
            return _Refusal(invalid, f"offset {hello.offset} is negative")
        if hello.announce_port > 65535:
            return _Refusal(invalid, f"announce port {hello.announce_port} is out of range")
        if len(hello.announce_host) > MAX_ANNOUNCE_HOST:
            return _Refusal(invalid, "announce host is too long")
        if hello.fence_epoch < 0 or hello.log_epoch < 0 or hello.log_epoch > hello.fence_epoch:
            return _Refusal(invalid, f"epochs out of range (fence {hello.fence_epoch}, log {hello.log_epoch})")
        return None

    def _admit(self, hello: pb.Hello) -> _Refusal | None:
        """After a valid hello: a PSYNC FAILOVER (the node promotes itself first), a node that
        is failing over itself, a replica fenced at a newer epoch than ours."""
        if hello.failover:
            reason = "PSYNC FAILOVER is not supported here" if self._failover_handler is None else (
                self._failover_handler(hello.replid))
            if reason is not None:
                return _Refusal(grpc.StatusCode.FAILED_PRECONDITION, reason)
        if self.refuse_syncs is not None:
            return _Refusal(grpc.StatusCode.UNAVAILABLE, self.refuse_syncs)
        fence = self.fence
        if fence is not None and hello.fence_epoch > fence.epoch:
            return _Refusal(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"STALEEPOCH this primary's epoch {fence.epoch} is older than the replica's fence epoch "
                f"{hello.fence_epoch}",
            )
        return None

    def _epoch_fields(self) -> tuple[int, list[pb.EpochStart]]:
        fence = self.fence
        if fence is None:
            return 0, []
        return fence.epoch, [pb.EpochStart(epoch=e.epoch, start_offset=e.start) for e in fence.history.entries]

    async def _run(self, session: _Session, hello: pb.Hello, context: Context) -> None:
        await self._resync(session, hello, context)
        reader = asyncio.create_task(self._read_acks(session, context))
        try:
            await self._pump(session, context)
        finally:
            reader.cancel()

    async def _resync(self, session: _Session, hello: pb.Hello, context: Context) -> None:
        if self._before_resync is not None:
            self._before_resync()
        backlog = self.backlog
        decision = backlog.psync(hello.replid, hello.offset)
        fence = self.fence
        if fence is not None:
            session.epoch = fence.epoch
            if decision.ok and not fence.history.can_continue(hello.log_epoch, hello.offset, backlog.end):
                decision = PsyncDecision(
                    False,
                    f"the replica's log (epoch {hello.log_epoch}, offset {hello.offset}) left this primary's "
                    f"epoch history {fence.history!r}",
                )
        epoch, history = self._epoch_fields()
        if decision.ok:
            self.partial_syncs += 1
            session.streaming = True
            self.registry.add(session.replica_id, session.host, session.port, STATE_ONLINE, hello.offset)
            self._update_floor()
            log.info(
                "replica %s (%s:%d): partial resync from offset %d, %d bytes of backlog to send",
                session.replica_id[:8],
                session.host,
                session.port,
                hello.offset,
                backlog.end - hello.offset,
            )
            await self._write(
                session,
                context,
                pb.PrimaryMessage(
                    continue_sync=pb.ContinueSync(
                        replid=backlog.replid, offset=hello.offset, epoch=epoch, epoch_history=history
                    )
                ),
            )
            self._go_online(session)
            return
        if hello.replid:
            self.partial_sync_errors += 1
        self.full_syncs += 1
        started = time.monotonic()
        # No await between taking the snapshot and pinning its offset: the snapshot is exactly
        # the log up to backlog.end, and every later unit stays in the backlog for this session.
        snapshot = self._snapshot()
        offset = backlog.end
        session.position = session.sent = session.acked = offset
        session.streaming = True
        self.registry.add(session.replica_id, session.host, session.port, STATE_SEND_BULK, 0)
        self._update_floor()
        log.info(
            "replica %s (%s:%d): full sync at offset %d, snapshot %d bytes (%s)",
            session.replica_id[:8],
            session.host,
            session.port,
            offset,
            len(snapshot),
            decision.reason,
        )
        await self._write(
            session,
            context,
            pb.PrimaryMessage(
                full_sync=pb.FullSync(
                    replid=backlog.replid,
                    offset=offset,
                    snapshot_size=len(snapshot),
                    reason=decision.reason,
                    epoch=epoch,
                    epoch_history=history,
                )
            ),
        )
        step = self.settings.snapshot_chunk_bytes
        view = memoryview(snapshot)
        for begin in range(0, len(snapshot), step):
            chunk = pb.SnapshotChunk(data=bytes(view[begin : begin + step]))
            await self._write(session, context, pb.PrimaryMessage(snapshot_chunk=chunk))
        log.info(
            "replica %s: snapshot sent in %.3fs, streaming from offset %d",
            session.replica_id[:8],
            time.monotonic() - started,
            offset,
        )
        self._go_online(session)

    def _go_online(self, session: _Session) -> None:
        session.online = True
        session.last_ack = self._clock()
        self.registry.set_state(session.replica_id, STATE_ONLINE)
        if self.lease is not None:
            session.ack_requested = True  # a stamped heartbeat at once: the lease needs its echo

    async def _write(self, session: _Session, context: Context, message: pb.PrimaryMessage) -> None:
        try:
            async with asyncio.timeout(self.settings.timeout):
                await context.write(message)
        except TimeoutError:
            session.close(
                _Refusal(
                    grpc.StatusCode.DEADLINE_EXCEEDED,
                    f"replica did not read for {self.settings.timeout}s (repl-timeout)",
                )
            )
            raise asyncio.CancelledError from None

    async def _pump(self, session: _Session, context: Context) -> None:
        """Ships the log from the session's position, heartbeats when idle."""
        backlog = self.backlog
        last_sent = self._clock()
        while not session.closed:
            session.wake.clear()
            settings = self.settings
            ack_due = self._enforce_ack_timeout(session)
            if ack_due <= 0:
                return
            if session.position < backlog.end and self._may_send(session, settings.max_batch_bytes):
                data, sizes = backlog.read(session.position, settings.max_batch_bytes)
                batch = pb.Batch(start_offset=session.position, data=data, unit_sizes=sizes, lease_stamp=self._stamp(),
                                 committed_offset=self._committed())
                session.commit_sent = batch.committed_offset
                # The replica may apply and ack this before the write's completion is seen here.
                session.sent = session.position + len(data)
                await self._write(session, context, pb.PrimaryMessage(batch=batch))
                session.position += len(data)
                self._update_floor()
                last_sent = self._clock()
                continue
            idle = self._clock() - last_sent
            ping_period = self._ping_period()
            if session.ack_requested or idle >= ping_period or self._owes_commit_news(session):
                heartbeat = pb.Heartbeat(
                    primary_offset=backlog.end,
                    ack_requested=session.ack_requested,
                    epoch=session.epoch,
                    lease_stamp=self._stamp(),
                    committed_offset=self._committed(),
                )
                session.commit_sent = heartbeat.committed_offset
                session.ack_requested = False
                await self._write(session, context, pb.PrimaryMessage(heartbeat=heartbeat))
                last_sent = self._clock()
                continue
            try:
                async with asyncio.timeout(min(ping_period - idle, ack_due)):
                    await session.wake.wait()
            except TimeoutError:
                pass

    def _stamp(self) -> int:
        return self.lease.stamp() if self.lease is not None else 0

    def _ping_period(self) -> float:
        """Heartbeats when idle: every repl-ping-replica-period, and in fenced mode at least
        every third of the lease (a lease renewed by echoes of older stamps would lapse)."""
        period = self.settings.ping_period
        if self.lease is not None:
            period = min(period, self.lease.duration_ns / 3e9)
        return period

    def _enforce_ack_timeout(self, session: _Session) -> float:
        """Closes the session once an online replica has been silent for repl-timeout;
        returns the seconds left until then (inf while it syncs). Called by the pump, which
        wakes at least every ping period, so the ack reader can simply await each message."""
        if not session.online:
            return math.inf
        timeout = self.settings.timeout
        remaining = session.last_ack + timeout - self._clock()
        if remaining <= 0:
            session.close(
                _Refusal(grpc.StatusCode.DEADLINE_EXCEEDED, f"no ack from the replica for {timeout}s (repl-timeout)")
            )
        return remaining

    def _may_send(self, session: _Session, max_batch_bytes: int) -> bool:
        """Whether the pump ships what waits now. One batch in flight at a time unless a
        full batch waits: while the replica applies and acks a batch, the units that keep
        arriving coalesce into the next one. Under load the batches grow with the replica's
        round trip instead of becoming one gRPC message (and one ack) per event-loop turn,
        which cost the primary more than the commands themselves; an idle link still sends
        a lone unit at once. A bulk catch-up (full batches) streams without waiting."""
        return session.acked >= session.sent or self.backlog.end - session.position >= max_batch_bytes

    async def _read_acks(self, session: _Session, context: Context) -> None:
        """Reads acks until the replica closes; drops it on nonsense or repl-timeout silence."""
        try:
            await self._read_acks_until_closed(session, context)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the reader's death must end the session, not go unnoticed
            refusal = _Refusal(grpc.StatusCode.INVALID_ARGUMENT, f"unreadable message from the replica: {exc}")
            log.warning("replica %s (%s) sent nonsense: %s", session.replica_id[:8], session.peer, refusal.message)
            session.close(refusal)

    async def _read_acks_until_closed(self, session: _Session, context: Context) -> None:
        while not session.closed:
            message: object = await context.read()
            if message is grpc.aio.EOF:
                session.close(None)
                return
            refusal = self._take_ack(session, message)
            if refusal is not None:
                log.warning("replica %s (%s) sent nonsense: %s", session.replica_id[:8], session.peer, refusal.message)
                session.close(refusal)
                return

    def _take_ack(self, session: _Session, message: object) -> _Refusal | None:
        if session.closed:
            return None  # read as the session ended: its replica may follow someone else now
        invalid = grpc.StatusCode.INVALID_ARGUMENT
        if not isinstance(message, pb.ReplicaMessage) or message.WhichOneof("kind") != "ack":
            return _Refusal(invalid, "expected an ack")
        ack = message.ack
        applied, fsynced = ack.applied_offset, ack.fsynced_offset
        if applied < session.acked:
            return _Refusal(invalid, f"ack offset {applied} went backwards (was {session.acked})")
        if applied > session.sent:
            return _Refusal(invalid, f"ack offset {applied} is beyond what was sent ({session.sent})")
        if fsynced < -1 or fsynced > applied:
            return _Refusal(invalid, f"fsynced offset {fsynced} is not in -1..{applied}")
        written = ack.written_offset
        if written < -1 or written > applied:
            return _Refusal(invalid, f"written offset {written} is not in -1..{applied}")
        if self.lease is not None and not self.lease.echo(session.replica_id, ack.lease_stamp, session.epoch):
            return _Refusal(invalid, f"lease stamp {ack.lease_stamp} was never sent")
        session.acked = applied
        session.last_ack = self._clock()
        self.registry.ack(session.replica_id, applied, fsynced, written)
        if (applied >= session.sent and session.position < self.backlog.end) or self._owes_commit_news(session):
            session.wake.set()  # the batch that was held back goes now, or the commit's news
        return None


class _Servicer(pb_grpc.ReplicationServicer):
    def __init__(self, primary: Primary) -> None:
        self._primary = primary

    async def Sync(self, request_iterator: object, context: Context) -> None:  # type: ignore[override]
        await self._primary.serve(context)


def _peer_host(peer: str) -> str:
    """The host part of a gRPC peer string ("ipv4:127.0.0.1:5000", "ipv6:[::1]:5000")."""
    _, _, rest = peer.partition(":")
    host, _, _ = rest.rpartition(":")
    return host.strip("[]") or peer
