"""The replica side: a background link that keeps this node's log a copy of its primary's.

It connects over gRPC, handshakes with the node's (replid, offset), takes a partial resync
(CONTINUE) or a full one (snapshot, loaded atomically once complete), then applies batches
through the StateMachine and appends them verbatim to the node's backlog, so the replica's
offsets and unit boundaries are the primary's (a promoted replica can serve its siblings a
partial resync). It acks after batches and at least every `ack_period`, declares the primary
dead after `timeout` without a message, and reconnects with exponential backoff.

Errors carry whether they are retriable (replication.errors); a non-retriable refusal (wrong
secret) is retried only at the slowest pace and logged once per streak. If the background
task itself dies, every `wait_for_offset` caller gets the error.

Fenced mode (a `Fence` given): the hello carries the node's fence epoch and log epoch; a
primary whose epoch is below the fence epoch is refused (STALEEPOCH) before anything it sent
is used; otherwise the node adopts the primary's epoch and history (saved durably) before it
takes the primary's id or data. Acks echo the newest lease stamp whose data the node's log
file holds (its written offset had reached what the link had received when the stamp came: a
replica counts for the lease only with what its AOF holds); once the node is fenced by a newer
epoch than its primary's (FENCE), the link applies and acknowledges nothing more from it and
drops the connection.

`failover` sends the first hellos as Redis's PSYNC ... FAILOVER (the FAILOVER command);
`on_handshake` learns how each handshake ended (None: the primary answered with a resync).

Committed reads (a `CommitPoint` given, replication/commit.py): the committed offset each batch
and heartbeat carries, bounded by what this node holds, advances the node's; a full sync, which
replaces the log, resets it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import time
from bisect import bisect_right
from collections import deque
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import grpc

from replication.backlog import Backlog
from replication.commit import CommitPoint
from replication.epochs import EpochHistory, EpochStart, Fence
from replication.errors import ApplyFailed, LinkLost, ProtocolViolation, Refused, ReplicationError, from_rpc_error
from replication.pb import replication_pb2 as pb
from replication.pb import replication_pb2_grpc as pb_grpc
from replication.settings import ReplicaSettings
from replication.state_machine import StateMachine
from replication.tls import ClientTls
from replication.wire import CHANNEL_OPTIONS, PROTOCOL_VERSION, is_run_id

log = logging.getLogger("replication.replica")

# The first slice of a link that has not timed an apply yet: about 25 XADDs.
_FIRST_SLICE_BYTES = 2048
# Lease stamps waiting for the log file to hold their data; past this, newer ones are merged.
_MAX_PENDING_STAMPS = 64

Call = grpc.aio.StreamStreamCall[pb.ReplicaMessage, pb.PrimaryMessage]


@dataclass(frozen=True)
class LinkStatus:
    """The replica half of INFO replication (Redis's field names in comments)."""

    primary_host: str  # master_host
    primary_port: int  # master_port (the replication port here)
    link_up: bool  # master_link_status: up / down
    last_io_seconds_ago: int  # master_last_io_seconds_ago; -1 before any message
    sync_in_progress: bool  # master_sync_in_progress
    sync_total_bytes: int  # master_sync_total_bytes (snapshot size); -1 when not syncing
    sync_read_bytes: int  # master_sync_read_bytes
    link_down_since_seconds: int  # master_link_down_since_seconds; -1 while up
    offset: int  # slave_repl_offset: end of the local log
    primary_offset: int  # latest offset the primary announced in a heartbeat
    full_syncs: int  # completed full syncs on this link
    partial_syncs: int  # accepted partial resyncs on this link
    sliced_batches: int  # batches applied in slices (under CPU contention) on this link
    last_error: str | None  # why the link last went down (or could not come up)


class ReplicaLink:
    """Replicates from host:port (the primary's replication gRPC port) into backlog + machine."""

    def __init__(
        self,
        host: str,
        port: int,
        backlog: Backlog,
        machine: StateMachine,
        settings: ReplicaSettings | None = None,
        *,
        replica_id: str,
        announce_host: str = "",
        announce_port: int = 0,
        tls: ClientTls | None = None,
        clock: Callable[[], float] = time.monotonic,
        contended: Callable[[], bool] | None = None,
        cpu_clock: Callable[[], float] = time.thread_time,
        fence: Fence | None = None,
        failover: bool = False,
        on_handshake: Callable[[ReplicationError | None], None] | None = None,
        commit: CommitPoint | None = None,
    ) -> None:
        if not is_run_id(replica_id):
            raise ValueError("replica_id must be 40 lowercase hex characters")
        self.host = host
        self.port = port
        self.backlog = backlog
        self.machine = machine
        self.settings = settings if settings is not None else ReplicaSettings()
        self.replica_id = replica_id
        self.announce_host = announce_host
        self.announce_port = announce_port
        self._tls = tls
        self._clock = clock
        # Whether other processes want this thread's CPU (large batches are then applied in
        # slices, see _apply); None: always.
        self._contended = contended
        self._sliced_batches = 0
        # Bytes of log applied per second of this thread's CPU in the latest apply: sizes the
        # slices (0: not measured yet). CPU time, not wall time: under contention the thread
        # is often preempted in the middle of an apply.
        self._cpu_clock = cpu_clock
        self._apply_rate = 0.0
        self._task: asyncio.Task[None] | None = None
        self._link_up = False
        self._last_io: float | None = None
        self._down_since: float | None = clock()
        self._syncing = False
        self._sync_total = -1
        self._sync_read = 0
        self._primary_offset = 0
        self._full_syncs = 0
        self._partial_syncs = 0
        self._last_error: ReplicationError | None = None
        self._logged_error: str | None = None
        self._force_full_sync = False
        self._ack_needed = asyncio.Event()
        # Set to drop the current connection (disconnect()); exists while the link is up.
        self._kill: asyncio.Event | None = None
        self._progress = asyncio.Condition()
        self._failure: BaseException | None = None
        self.fence = fence
        self.failover = failover
        self._on_handshake = on_handshake
        self._answered = False  # the current connection's handshake got its resync answer
        self._primary_epoch = 0  # the epoch of the primary of the current connection
        self._lease_stamp = 0  # the newest lease stamp to echo: its data is in the log file
        # Stamps received but not echoed yet, with the offset the log file must reach first.
        self._stamps: deque[tuple[int, int]] = deque()
        self.commit = commit

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Starts the background link (call from the event loop)."""
        if self._task is not None:
            raise RuntimeError("link already started")
        self._task = asyncio.create_task(self._run(), name=f"replica-link {self.host}:{self.port}")
        self._task.add_done_callback(self._task_done)

    def stop(self) -> Coroutine[Any, Any, None]:
        """Closes the link (REPLICAOF NO ONE / another primary / shutdown). The link task is
        cancelled before this returns, so nothing it receives afterwards is applied (a node
        changing role synchronously relies on that); await the result for the task's end."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
        self._set_down(None)
        return self._stopped(task)

    @staticmethod
    async def _stopped(task: asyncio.Task[None] | None) -> None:
        if task is not None:
            try:
                await task
            except asyncio.CancelledError:
                pass

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def _task_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        failure = task.exception()
        if failure is not None:
            log.error("replication link task died", exc_info=failure)
            self._failure = failure
            self._set_down(ReplicationError(f"link task died: {failure}", retriable=False))
            asyncio.ensure_future(self._notify_progress())

    def status(self) -> LinkStatus:
        now = self._clock()
        return LinkStatus(
            primary_host=self.host,
            primary_port=self.port,
            link_up=self._link_up,
            last_io_seconds_ago=-1 if self._last_io is None else int(now - self._last_io),
            sync_in_progress=self._syncing,
            sync_total_bytes=self._sync_total if self._syncing else -1,
            sync_read_bytes=self._sync_read if self._syncing else 0,
            link_down_since_seconds=-1 if self._down_since is None else int(now - self._down_since),
            offset=self.backlog.end,
            primary_offset=self._primary_offset,
            full_syncs=self._full_syncs,
            partial_syncs=self._partial_syncs,
            sliced_batches=self._sliced_batches,
            last_error=None if self._last_error is None else str(self._last_error),
        )

    def disconnect(self) -> bool:
        """Drops the connection if the link is up (Redis's CLIENT KILL TYPE master); the link
        then reconnects as after any loss, continuing from its offset. False if it was not
        up (connecting or syncing: Redis has no master client then either)."""
        if not self._link_up or self._kill is None:
            return False
        self._kill.set()
        return True

    def request_ack(self) -> None:
        """Acks at once (the state machine's fsynced offset advanced: a primary's WAITAOF may
        be waiting for it) rather than after the next batch or `ack_period`."""
        self._ack_needed.set()

    async def wait_for_offset(self, offset: int, timeout: float | None = None) -> None:
        """Returns once the local log reached `offset` (raises TimeoutError, or the link task's
        death)."""

        async def reached() -> None:
            async with self._progress:
                await self._progress.wait_for(lambda: self.backlog.end >= offset or self._failure is not None)
            if self._failure is not None:
                raise ReplicationError(f"link task died: {self._failure}", retriable=False)

        async with asyncio.timeout(timeout):
            await reached()

    async def _notify_progress(self) -> None:
        async with self._progress:
            self._progress.notify_all()

    # ------------------------------------------------------------------ the reconnect loop

    async def _run(self) -> None:
        backoff = self.settings.backoff_initial
        while True:
            synced_before = self._full_syncs + self._partial_syncs
            self._answered = False
            try:
                await self._session()
                error: ReplicationError = LinkLost("the primary closed the stream")
            except ReplicationError as exc:
                error = exc
            except grpc.aio.AioRpcError as exc:
                error = from_rpc_error(exc)
            except (asyncio.InvalidStateError, grpc.aio.UsageError) as exc:
                # grpc's way of saying the RPC already ended under a write.
                error = LinkLost(f"the stream ended: {exc}")
            self._set_down(error)
            if not self._answered and self._on_handshake is not None:
                self._on_handshake(error)
            if self._full_syncs + self._partial_syncs > synced_before:
                backoff = self.settings.backoff_initial
            delay = backoff if error.retriable else self.settings.backoff_max
            self._log_error(error, delay)
            # Jitter spreads the replicas of a restarted primary over time.
            await asyncio.sleep(delay * random.uniform(0.8, 1.2))
            backoff = min(backoff * 2, self.settings.backoff_max)

    def _log_error(self, error: ReplicationError, delay: float) -> None:
        message = str(error)
        if message == self._logged_error:
            return
        self._logged_error = message
        level = logging.WARNING if error.retriable else logging.ERROR
        log.log(
            level,
            "link to primary %s:%d down at offset %d: %s (%s; next attempt in %.1fs)",
            self.host,
            self.port,
            self.backlog.end,
            message,
            "retriable" if error.retriable else "needs an operator",
            delay,
        )

    def _set_down(self, error: ReplicationError | None) -> None:
        if self._link_up:
            self._down_since = self._clock()
        self._link_up = False
        self._syncing = False
        if error is not None:
            self._last_error = error

    def _channel(self) -> grpc.aio.Channel:
        target = f"{self.host}:{self.port}"
        if self._tls is None:
            return grpc.aio.insecure_channel(target, options=CHANNEL_OPTIONS)
        options: list[tuple[str, str | int]] = [*CHANNEL_OPTIONS, *self._tls.channel_options()]
        return grpc.aio.secure_channel(target, self._tls.credentials(), options=options)

    # ------------------------------------------------------------------ one connection

    async def _session(self) -> None:
        async with self._channel() as channel:
            call: Call = pb_grpc.ReplicationStub(channel).Sync()
            try:
                await self._handshake(call)
                reader = asyncio.create_task(self._stream(call))
                acker = asyncio.create_task(self._ack_loop(call))
                kill = self._kill = asyncio.Event()
                killer = asyncio.create_task(kill.wait())
                try:
                    # Whichever ends first (error, the primary closing, disconnect()) ends the
                    # connection.
                    done, _ = await asyncio.wait([reader, acker, killer], return_when=asyncio.FIRST_COMPLETED)
                    if killer in done:
                        raise LinkLost("connection closed by this replica (CLIENT KILL TYPE master)")
                    if reader in done:
                        reader.result()
                        return
                    failure = acker.exception()
                    if failure is not None and not isinstance(failure, asyncio.InvalidStateError):
                        raise failure
                    # The RPC ended under an ack: the reader is about to learn the status, which
                    # says why (e.g. the primary's refusal).
                    await reader
                finally:
                    self._kill = None
                    reader.cancel()
                    acker.cancel()
                    killer.cancel()
                    await asyncio.gather(reader, acker, killer, return_exceptions=True)
            finally:
                call.cancel()

    async def _read(self, call: Call) -> pb.PrimaryMessage | None:
        """The next message, None at the end of the stream; repl-timeout silence = dead primary."""
        try:
            async with asyncio.timeout(self.settings.timeout):
                message: object = await call.read()
        except TimeoutError:
            raise LinkLost(f"no data from the primary for {self.settings.timeout}s (repl-timeout)") from None
        if message is grpc.aio.EOF:
            return None
        if not isinstance(message, pb.PrimaryMessage):
            raise ProtocolViolation(f"unexpected message type {type(message).__name__}")
        self._last_io = self._clock()
        return message

    async def _handshake(self, call: Call) -> None:
        backlog = self.backlog
        replid = "" if self._force_full_sync else backlog.replid
        fence = self.fence
        hello = pb.Hello(
            protocol_version=PROTOCOL_VERSION,
            replica_id=self.replica_id,
            replid=replid,
            offset=backlog.end,
            announce_host=self.announce_host,
            announce_port=self.announce_port,
            auth=self.settings.masterauth or "",
            user=self.settings.masteruser or "",
            fence_epoch=fence.fence_epoch if fence is not None else 0,
            log_epoch=fence.log_epoch(backlog.end) if fence is not None else 0,
            failover=self.failover,
        )
        await call.write(pb.ReplicaMessage(hello=hello))
        reply = await self._read(call)
        kind = None if reply is None else reply.WhichOneof("kind")
        if reply is not None and kind in ("continue_sync", "full_sync"):
            self._check_epoch(reply.continue_sync.epoch if kind == "continue_sync" else reply.full_sync.epoch)
            self._answered = True
            self.failover = False
            if self._on_handshake is not None:
                self._on_handshake(None)
        if reply is not None and kind == "continue_sync":
            await self._continue(reply.continue_sync)
        elif reply is not None and kind == "full_sync":
            await self._full_sync(call, reply.full_sync)
        elif reply is None:
            raise LinkLost("the primary closed the stream during the handshake")
        else:
            raise ProtocolViolation(f"expected continue_sync or full_sync, got {kind}")
        self._link_up = True
        self._down_since = None
        self._logged_error = None
        self._ack_needed.set()

    def _check_epoch(self, epoch: int) -> None:
        """Fenced mode: a primary older than our promise is refused before anything it sent
        is used (a replica fenced for a failover must not follow the old primary again)."""
        fence = self.fence
        if fence is not None and epoch < fence.fence_epoch:
            raise Refused(
                f"STALEEPOCH the primary's epoch {epoch} is older than this replica's fence epoch {fence.fence_epoch}",
                retriable=False,
            )
        self._primary_epoch = epoch
        self._lease_stamp = 0
        self._stamps.clear()

    def _adopt_epochs(self, replid: str, history: Sequence[pb.EpochStart]) -> None:
        """Fenced mode: the primary's epoch and history become ours, durably, before its id
        or data do (a restart must know which epochs the log it loads holds)."""
        fence = self.fence
        if fence is None:
            return
        try:
            epochs = EpochHistory(EpochStart(e.epoch, e.start_offset) for e in history)
        except ValueError as exc:
            raise ProtocolViolation(f"bad epoch history from the primary: {exc}") from None
        if epochs.last_epoch != self._primary_epoch:
            raise ProtocolViolation(
                f"the primary's epoch {self._primary_epoch} is not its history's last {epochs.last_epoch}"
            )
        try:
            fence.follow(self._primary_epoch, replid, epochs)
        except OSError as exc:  # nothing adopted: try again later
            raise LinkLost(f"cannot save the fence state before following this primary: {exc.strerror or exc}") from None

    def _check_fenced(self) -> None:
        """Raises once this node was fenced by an epoch newer than its primary's."""
        fence = self.fence
        if fence is not None and fence.fence_epoch > self._primary_epoch:
            raise Refused(
                f"STALEEPOCH fenced at epoch {fence.fence_epoch}, newer than the primary's {self._primary_epoch}",
                retriable=False,
            )

    async def _continue(self, cont: pb.ContinueSync) -> None:
        backlog = self.backlog
        if cont.offset != backlog.end:
            raise ProtocolViolation(f"primary continues from {cont.offset} but this replica is at {backlog.end}")
        self._adopt_epochs(cont.replid, cont.epoch_history)
        if cont.replid != backlog.replid:
            # PSYNC2: the primary's history continues ours under a new id; keep ours as replid2.
            backlog.shift_replid(cont.replid)
        self._partial_syncs += 1
        log.info(
            "partial resync with %s:%d accepted at offset %d (replid %s)",
            self.host,
            self.port,
            backlog.end,
            cont.replid,
        )

    async def _full_sync(self, call: Call, full: pb.FullSync) -> None:
        started = self._clock()
        log.info(
            "full sync from %s:%d: snapshot %d bytes at offset %d (%s)",
            self.host,
            self.port,
            full.snapshot_size,
            full.offset,
            full.reason or "no reason given",
        )
        if full.snapshot_size < 0 or full.offset < 0:
            raise ProtocolViolation("negative snapshot size or offset")
        self._syncing = True
        self._sync_total = full.snapshot_size
        self._sync_read = 0
        chunks: list[bytes] = []
        while self._sync_read < full.snapshot_size:
            message = await self._read(call)
            if message is None:
                raise LinkLost(f"stream ended after {self._sync_read} of {full.snapshot_size} snapshot bytes")
            if message.WhichOneof("kind") != "snapshot_chunk":
                raise ProtocolViolation(f"expected a snapshot chunk, got {message.WhichOneof('kind')}")
            data = message.snapshot_chunk.data
            self._sync_read += len(data)
            if self._sync_read > full.snapshot_size:
                raise ProtocolViolation(f"snapshot longer than the announced {full.snapshot_size} bytes")
            chunks.append(data)
        self._check_fenced()
        self._adopt_epochs(full.replid, full.epoch_history)
        try:
            self.machine.load_snapshot(chunks, full.offset)
        except Exception as exc:
            self._force_full_sync = True
            raise ApplyFailed(f"loading the snapshot failed: {exc}") from exc
        self.backlog.reset(full.replid, full.offset)
        if self.commit is not None:
            self.commit.reset()
        self._force_full_sync = False
        self._syncing = False
        self._full_syncs += 1
        log.info(
            "full sync done: %d bytes loaded at offset %d in %.3fs",
            full.snapshot_size,
            full.offset,
            self._clock() - started,
        )
        await self._notify_progress()

    async def _stream(self, call: Call) -> None:
        while True:
            message = await self._read(call)
            if message is None:
                return
            kind = message.WhichOneof("kind")
            self._check_fenced()
            if kind == "batch":
                await self._apply(message.batch)
                self._take_stamp(message.batch.lease_stamp)
                self._take_commit(message.batch.committed_offset)
                self._ack_needed.set()
                await self._notify_progress()
            elif kind == "heartbeat":
                heartbeat = message.heartbeat
                if heartbeat.epoch != self._primary_epoch and self.fence is not None:
                    raise ProtocolViolation(
                        f"heartbeat of epoch {heartbeat.epoch} on a link of epoch {self._primary_epoch}"
                    )
                self._primary_offset = heartbeat.primary_offset
                self._take_stamp(heartbeat.lease_stamp)
                self._take_commit(heartbeat.committed_offset)
                if heartbeat.ack_requested or (heartbeat.lease_stamp and self.fence is not None):
                    self._ack_needed.set()
            else:
                raise ProtocolViolation(f"unexpected {kind} after the sync")

    async def _apply(self, batch: pb.Batch) -> None:
        """Applies a batch and stores it in the backlog.

        While other processes want this thread's CPU (`contended`), a batch that would take
        longer than `apply_slice_seconds` of CPU goes in slices of whole units of about that
        long each (sized from the speed of the latest apply; a slice's first unit may be
        larger). Between slices the link yields the CPU (sched_yield), so a process sharing
        this core (the primary or its clients, on one host) runs at once instead of after the
        whole batch, and the event loop, so the node's own clients are served meanwhile: a
        busy primary ships ~20 ms of writes at a time, and on a shared core the client that
        feeds the primary waited as long as the replica took to apply it. Slices are timed,
        not counted in bytes, because each yield costs the replica colder caches: at 2 KB
        slices that was about as much CPU as the apply itself. On an uncontended core slicing
        would only cost CPU. Each slice is stored as soon as it is applied: whatever runs in
        between (a snapshot for a sub-replica, a promotion, INFO) finds the backlog ending
        exactly where the node's data does."""
        backlog = self.backlog
        start = batch.start_offset
        if start != backlog.end:
            raise ProtocolViolation(f"batch starts at {start} but this replica is at {backlog.end}")
        sizes = list(batch.unit_sizes)
        data = batch.data
        if not sizes or sum(sizes) != len(data) or 0 in sizes:
            raise ProtocolViolation("batch unit sizes do not describe its data")
        if (not self.settings.apply_slice_seconds or len(sizes) == 1 or len(data) <= self._slice_bytes()
                or (self._contended is not None and not self._contended())):
            self._apply_slice(start, data, sizes)
            return
        self._sliced_batches += 1
        ends = list(accumulate(sizes))
        first = begin = 0
        while True:
            last = max(bisect_right(ends, begin + self._slice_bytes()), first + 1)
            end = ends[last - 1]
            self._apply_slice(start + begin, data[begin:end], sizes[first:last])
            if last == len(sizes):
                return
            first, begin = last, end
            os.sched_yield()
            await asyncio.sleep(0)
            # A FENCE may have come meanwhile: nothing more of an older primary is applied.
            self._check_fenced()

    def _slice_bytes(self) -> int:
        """How much of the log takes about `apply_slice_seconds` of CPU to apply."""
        if not self._apply_rate:
            return _FIRST_SLICE_BYTES
        return int(self._apply_rate * self.settings.apply_slice_seconds)

    def _apply_slice(self, start: int, data: bytes, sizes: list[int]) -> None:
        began = self._cpu_clock()
        try:
            self.machine.apply(data, start + len(data))
        except Exception as exc:
            # The state machine kept its state (apply is all-or-nothing) but cannot follow this
            # log any more: only a snapshot can bring it back.
            self._force_full_sync = True
            raise ApplyFailed(f"applying the batch at offset {start} failed: {exc}") from exc
        end = self.backlog.extend(data, sizes)
        self._primary_offset = max(self._primary_offset, end)
        spent = self._cpu_clock() - began
        if spent > 0:
            self._apply_rate = len(data) / spent

    def _take_stamp(self, stamp: int) -> None:
        """A stamp received with the log up to the backlog's end: echoed once the node's log
        file holds that much (`_written_stamp`)."""
        if not stamp:
            return
        stamps = self._stamps
        end = self.backlog.end
        if stamps and (stamps[-1][0] == end or len(stamps) >= _MAX_PENDING_STAMPS):
            # The same data (an idle link's heartbeats), or too many waiting: the newer stamp
            # replaces the last one, echoed when the log file reaches the larger offset.
            stamps[-1] = (end, max(stamp, stamps[-1][1]))
        else:
            stamps.append((end, stamp))

    def _written_stamp(self, written: int) -> int:
        """The newest stamp whose data the log file holds (`written` is its offset, -1 when it
        does not hold the current data)."""
        stamps = self._stamps
        while stamps and stamps[0][0] <= written:
            self._lease_stamp = max(self._lease_stamp, stamps.popleft()[1])
        return self._lease_stamp

    def _take_commit(self, offset: int) -> None:
        # Committed on the primary, and held here: a replica never vouches for bytes it lacks.
        if self.commit is not None:
            self.commit.advance(min(offset, self.backlog.end))

    async def _ack_loop(self, call: Call) -> None:
        while True:
            if not self._ack_needed.is_set():  # (a batch applied meanwhile: no timer to arm)
                try:
                    async with asyncio.timeout(self.settings.ack_period):
                        await self._ack_needed.wait()
                except TimeoutError:
                    pass
            self._ack_needed.clear()
            # Checked at the moment the ack is written: once fenced by a newer epoch, no ack
            # (and no echo of a stamp) reaches the old primary, whatever was received before.
            self._check_fenced()
            written = self.machine.written_offset()
            ack = pb.Ack(
                applied_offset=self.backlog.end,
                fsynced_offset=self.machine.fsynced_offset(),
                lease_stamp=self._written_stamp(written) if self.fence is not None else 0,
                written_offset=written,
            )
            await call.write(pb.ReplicaMessage(ack=ack))
