"""A Rill node as a replica of a redis-server: `REPLICAOF host port` naming a Redis primary
(its INFO has no `repl_grpc_port`, node/replication/discovery.py) starts this link instead of
the gRPC one. It speaks Redis's replication protocol (node/replication/redis_wire.py):
PSYNC, the RDB transfer (disk-based or diskless), then the command stream, acknowledging
the offset it processed with REPLCONF ACK every second and when asked (GETACK), so the
primary's WAIT counts this node as it counts a Redis replica.

What it applies, and what it logs:
* The RDB replaces the data set (node/rdb/ reads it; a key of a type Rill lacks stops the
  sync naming it, or is skipped with rdb-skip-unsupported), as a full sync does: the AOF
  starts again from a base of the new data, and the node's own log starts a new history
  (a new replication id), so its own replicas resync fully.
* Each command of the stream runs as the primary's client would (a session flagged
  "master" and "replay": writes on a read-only replica, the log-only forms Redis propagates
  such as XCLAIM ... LASTID). Redis's propagation is effect-like already (XADD with its ID,
  `~` trims made exact, XREADGROUP as XCLAIM + XGROUP SETID, relative TTLs as PEXPIREAT, an
  expired key as DEL); what a command changes is logged in the node's own effect log, in
  Rill's forms, like any write: the AOF and the node's gRPC replicas follow it as they follow
  a primary's. A MULTI/EXEC of the stream is one transaction and one unit. PING and
  REPLCONF GETACK count in the offset and change nothing.
* A command Rill does not know stops the link with an error naming it. With
  rdb-skip-unsupported on, the writes of the types Rill lacks (a list, hash, set or sorted-set
  write, scripts and functions) are skipped and counted instead, as their keys were at the
  full sync (and a RENAME of such a key); a write to a string Rill lacks (SETRANGE, SETBIT,
  BITFIELD, PFADD, ...) never is: skipping it would change the data silently. Any other
  failure means the two data sets differ: the link drops and the next sync is a full one
  (as a gRPC replica does on divergence).

The offset it reports (INFO's slave_repl_offset, ROLE, REPLCONF ACK) is the Redis primary's
replication offset, processed up to the last whole command outside a MULTI; the node's own
log has its own offsets (INFO's master_repl_offset). A reconnection asks for a partial
resync from that offset (PSYNC replid offset+1); a restarted node starts with a full sync.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Final, Protocol

from node.commands.context import Block, Session
from node.commands.reply import ReplyError
from node.commands.table import lookup
from node.engine.groups import INVALID_ENTRIES_READ
from node.engine.ids import format_id, parse_id
from node.engine.keyspace import Keyspace
from node.engine.stream_ops import estimate_distance, range_has_tombstones
from node.engine.stream_value import StreamValue
from node.log.encode import encode_command
from node.persistence.redis_rdb import RdbLoadError, load_rdb_bytes
from node.replication.redis_wire import (
    EOF_MARK_LEN,
    CommandFramer,
    WireError,
    ack_command,
    is_getack,
    parse_bulk_header,
    parse_psync_reply,
)
from replication import LinkStatus, ReplicaSettings
from replication.backlog import new_replid

if TYPE_CHECKING:
    from node.persistence.service import Persistence
    from node.server.server import Server
    from replication import Backlog

log = logging.getLogger("rill.replication")

_READ_CHUNK: Final = 1 << 16
# Reconnection delays: doubling from the first to the cap (Redis retries every second).
_BACKOFF_FIRST: Final = 0.1
_BACKOFF_MAX: Final = 5.0
# Unknown commands skipped under rdb-skip-unsupported, logged by name before only counting.
_SKIPPED_LOGGED: Final = 10
# Commands named with their subcommand in messages.
_CONTAINERS: Final = frozenset((b"function", b"script", b"object", b"xgroup", b"config", b"client", b"memory"))
# The writes a Redis primary propagates for the types Rill does not hold (lists, hashes, sets,
# sorted sets and geo indexes, which are sorted sets) and for its scripts and functions: with
# rdb-skip-unsupported they are skipped, as their keys were at the full sync. Writes to
# strings that Rill lacks (SETRANGE, SETBIT, BITFIELD, BITOP, PFADD, PFMERGE: HyperLogLogs and
# bitmaps are strings, which Rill loads) are never skipped: the link stops there.
_SKIPPABLE: Final = frozenset(name.encode() for name in (
    "lpush", "rpush", "lpushx", "rpushx", "lpop", "rpop", "linsert", "lset", "lrem", "ltrim", "lmove",
    "rpoplpush", "lmpop", "blpop", "brpop", "blmove", "brpoplpush", "blmpop",
    "hset", "hsetnx", "hmset", "hdel", "hincrby", "hincrbyfloat",
    "sadd", "srem", "smove", "spop", "sinterstore", "sunionstore", "sdiffstore",
    "zadd", "zincrby", "zrem", "zremrangebyscore", "zremrangebyrank", "zremrangebylex", "zpopmin", "zpopmax",
    "bzpopmin", "bzpopmax", "zmpop", "bzmpop", "zunionstore", "zinterstore", "zdiffstore", "zrangestore",
    "geoadd", "georadius", "georadiusbymember", "geosearchstore", "sort",
    "function", "script", "eval", "evalsha", "fcall",
))


class LinkDown(Exception):
    """The link cannot go on (the text says why); it reconnects."""


class Unsupported(LinkDown):
    """The primary sent a command Rill does not have."""


class ReadCounters:
    """Consumer groups' entries-read as the primary has them. Redis 7.0 and 7.2 propagate an
    XREADGROUP as one `XCLAIM ... LASTID id` per delivered entry and no read counter (its
    XGROUP SETID ... ENTRIESREAD goes only with NOACK; 7.4 fixed that), so a Redis replica's
    entries-read stays where the last full sync left it. This replays the primary's rule
    (streamReplyWithRange) for each XCLAIM whose LASTID moves the group forward: the counter
    goes up by one, or is estimated again when unknown or when a deletion lies at or after
    the ID. At the end of each unit the groups whose counter differs are corrected with an
    `XGROUP SETID key group last-id ENTRIESREAD n` run in the link's session, which also logs
    it for this node's replicas and AOF."""

    __slots__ = ("_explicit", "_seen")

    def __init__(self) -> None:
        # (db, key, group) -> (last_id, entries_read) before the unit, then the XCLAIMs' IDs.
        self._seen: dict[tuple[int, bytes, bytes], tuple[int, int, list[int]]] = {}
        # Groups the unit set with XGROUP SETID: left as the primary set them.
        self._explicit: set[tuple[int, bytes, bytes]] = set()

    def note(self, session: Session, argv: list[bytes]) -> None:
        """Before `argv` runs (or is queued): records an XCLAIM that carries LASTID, and an
        XGROUP SETID (a primary that propagates the counter itself, as 7.4 does: the unit's
        counter is then that one)."""
        name = argv[0].lower()
        if name == b"xgroup" and len(argv) >= 4 and argv[1].lower() == b"setid":
            self._explicit.add((session.db_index, argv[2], argv[3]))
            return
        if len(argv) < 8 or name != b"xclaim":
            return
        options = [a.lower() for a in argv[5:]]
        if b"lastid" not in options:
            return
        at = 5 + options.index(b"lastid") + 1
        last = parse_id(argv[at], 0) if at < len(argv) else None
        value = session.db.get(argv[1])
        if last is None or not isinstance(value, StreamValue):
            return
        group = value.group(argv[2])
        if group is None:
            return
        ref = (session.db_index, argv[1], argv[2])
        if ref not in self._seen:
            self._seen[ref] = (group.last_id, group.entries_read, [])
        self._seen[ref][2].append(last)

    def correct(self, session: Session, run: Callable[[list[bytes]], None]) -> None:
        """After a unit: sets each group noted to the primary's counter, through `run`."""
        seen, self._seen = self._seen, {}
        explicit, self._explicit = self._explicit, set()
        for (db, key, name), (last_id, entries_read, claims) in seen.items():
            if (db, key, name) in explicit:
                continue
            value = session.node.keyspace.dbs[db].get(key)
            group = value.group(name) if isinstance(value, StreamValue) else None
            if group is None or not isinstance(value, StreamValue):
                continue
            first = value.first_id()
            for entry_id in claims:
                if entry_id <= last_id:
                    continue
                if entries_read != INVALID_ENTRIES_READ and not range_has_tombstones(value, entry_id):
                    entries_read += 1
                elif value.entries_added:
                    entries_read = estimate_distance(value, entry_id, first)
                last_id = entry_id
            if entries_read != group.entries_read and last_id == group.last_id:
                selected = session.db_index
                session.select(db)
                run([b"XGROUP", b"SETID", key, name, format_id(last_id), b"ENTRIESREAD", b"%d" % entries_read])
                session.select(selected)


class Replication(Protocol):
    """What a link to a Redis primary uses of the node's replication side
    (node/replication/role.py's `ReplicationNode`, which builds it)."""

    apply_errors: int  # counted here too: INFO's rill_apply_errors

    @property
    def server(self) -> Server: ...
    @property
    def persistence(self) -> Persistence: ...
    @property
    def backlog(self) -> Backlog | None: ...
    def flush(self) -> None: ...


class RedisReplicaLink:
    """Replicates from the redis-server at host:port (its RESP port) into this node."""

    def __init__(self, repl: Replication, host: str, port: int, settings: ReplicaSettings,
                 announce_host: str = "", announce_port: int = 0) -> None:
        self.repl = repl
        self.server = repl.server
        self.host = host
        self.port = port
        self.settings = settings
        self.announce_host = announce_host
        self.announce_port = announce_port
        # The primary's history as this node follows it: its replid and the offset processed.
        self.replid = ""
        self.offset = -1
        self.skipped = 0  # commands skipped under rdb-skip-unsupported
        self._task: asyncio.Task[None] | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._link_up = False
        self._syncing = False
        self._sync_total = -1
        self._sync_read = 0
        self._last_io: float | None = None
        self._down_since: float | None = time.monotonic()
        self._full_syncs = 0
        self._partial_syncs = 0
        self._last_error: str | None = None
        self._kill: asyncio.Event | None = None
        self._multi_bytes = 0  # bytes of a MULTI block received so far (queued, not run)
        self._counters = ReadCounters()
        self.session = self._new_session()

    def _new_session(self) -> Session:
        # The primary's client (MONITOR shows its address), as the gRPC link's session.
        session = Session(self.server.node, 0, addr=f"{self.host}:{self.port}")
        session.authenticated = True
        session.flags.update(("replay", "master"))
        return session

    # -- the replication package's link interface (role.py drives either) -----------------

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    def stop(self) -> Coroutine[Any, Any, None]:
        task = self._task
        self._task = None
        if task is not None:
            task.cancel()

        async def wait() -> None:
            if task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

        return wait()

    def status(self) -> LinkStatus:
        now = time.monotonic()
        return LinkStatus(
            primary_host=self.host,
            primary_port=self.port,
            link_up=self._link_up,
            last_io_seconds_ago=-1 if self._last_io is None else int(now - self._last_io),
            sync_in_progress=self._syncing,
            sync_total_bytes=self._sync_total if self._syncing else -1,
            sync_read_bytes=self._sync_read if self._syncing else 0,
            link_down_since_seconds=-1 if self._down_since is None else int(now - self._down_since),
            offset=max(self.offset, 0),
            primary_offset=self.offset,
            full_syncs=self._full_syncs,
            partial_syncs=self._partial_syncs,
            sliced_batches=0,
            last_error=self._last_error,
        )

    def disconnect(self) -> bool:
        """CLIENT KILL TYPE master: drop the connection; the link reconnects and continues."""
        if not self._link_up or self._kill is None:
            return False
        self._kill.set()
        return True

    def request_ack(self) -> None:
        """The fsync offset changed: Redis 7.0's replicas ack once a second (no FACK)."""

    # -- the link --------------------------------------------------------------------------

    async def _run(self) -> None:
        delay = _BACKOFF_FIRST
        while True:
            try:
                await self._connect_once()
            except asyncio.CancelledError:
                raise
            except (OSError, EOFError, TimeoutError, LinkDown, WireError, RdbLoadError) as exc:
                reason = str(exc) or type(exc).__name__
                if reason != self._last_error:
                    log.warning("Replication link to MASTER %s:%d (Redis): %s", self.host, self.port, reason)
                self._last_error = reason
                if isinstance(exc, Unsupported):
                    delay = _BACKOFF_MAX
            except Exception:
                log.exception("Replication link to MASTER %s:%d (Redis) failed", self.host, self.port)
                self._last_error = "internal error (see the log)"
            finally:
                self._went_down()
            await asyncio.sleep(delay)
            delay = min(delay * 2, _BACKOFF_MAX)

    def _went_down(self) -> None:
        if self._link_up:
            log.info("Connection with MASTER %s:%d (Redis) lost at offset %d", self.host, self.port, self.offset)
        self._link_up = False
        self._syncing = False
        if self._down_since is None:
            self._down_since = time.monotonic()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()
        # A transaction the primary did not finish sending is never run: a partial resync
        # sends it again from its MULTI.
        self.session.multi = None
        self.session.multi_error = False
        self._multi_bytes = 0
        self._counters = ReadCounters()

    async def _connect_once(self) -> None:
        timeout = self.settings.timeout
        log.info("Connecting to MASTER %s:%d (Redis replication protocol)", self.host, self.port)
        # tls-replication: the primary's TLS port, as for a Rill primary (node/server/tls.py).
        tls = self.server.tls.client_context()
        reader, writer = await asyncio.wait_for(asyncio.open_connection(self.host, self.port, ssl=tls), timeout)
        self._writer = writer
        self._kill = asyncio.Event()
        await self._handshake(reader, writer, timeout)
        psync = [b"PSYNC", self.replid.encode() or b"?", b"%d" % (self.offset + 1 if self.replid else -1)]
        writer.write(encode_command(psync))
        reply = parse_psync_reply(await self._line(reader, timeout))
        if reply.kind == "error":
            raise LinkDown(f"the primary refused PSYNC: {reply.error}")
        if reply.kind == "continue":
            if reply.replid and reply.replid != self.replid:
                self.replid = reply.replid
            self._partial_syncs += 1
            log.info("Successful partial resynchronization with MASTER %s:%d (Redis) at offset %d",
                     self.host, self.port, self.offset)
        else:
            log.info("Full resync from MASTER %s:%d (Redis): %s:%d", self.host, self.port, reply.replid, reply.offset)
            await self._full_sync(reader, reply.replid, reply.offset, timeout)
        self._link_up = True
        self._down_since = None
        self._send_ack()
        ticker = asyncio.ensure_future(self._ack_every_second())
        try:
            await self._stream(reader, timeout)
        finally:
            ticker.cancel()

    async def _handshake(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, timeout: float) -> None:
        """PING, AUTH, REPLCONF listening-port / ip-address / capa (syncWithMaster)."""
        writer.write(encode_command([b"PING"]))
        pong = await self._line(reader, timeout)
        if not pong.startswith(b"+") and not pong.startswith((b"-NOAUTH", b"-NOPERM", b"-ERR operation not permitted")):
            raise LinkDown(f"error reply to PING from the primary: {pong.decode('utf-8', 'replace')}")
        commands: list[list[bytes]] = []
        if self.settings.masterauth:
            user = [self.settings.masteruser.encode()] if self.settings.masteruser else []
            commands.append([b"AUTH", *user, self.settings.masterauth.encode()])
        commands.append([b"REPLCONF", b"listening-port", b"%d" % (self.announce_port or self.server.port)])
        if self.announce_host:
            commands.append([b"REPLCONF", b"ip-address", self.announce_host.encode()])
        commands.append([b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        writer.write(b"".join(encode_command(c) for c in commands))
        for command in commands:
            answer = await self._line(reader, timeout)
            if answer.startswith(b"-"):
                text = answer[1:].decode("utf-8", "replace")
                if command[0] == b"AUTH":
                    raise LinkDown(f"unable to AUTH to MASTER: {text}")
                # Redis ignores an unknown REPLCONF option's error (an older primary).
                log.info("The primary answered %s with: %s", command[1].decode(), text)

    async def _line(self, reader: asyncio.StreamReader, timeout: float) -> bytes:
        """The next reply line, skipping the lone newlines a primary sends to keep the link
        alive while it prepares an RDB."""
        while True:
            line = await asyncio.wait_for(reader.readline(), timeout)
            if not line:
                raise LinkDown("the primary closed the connection")
            self._last_io = time.monotonic()
            line = line.rstrip(b"\r\n")
            if line:
                return line

    async def _full_sync(self, reader: asyncio.StreamReader, replid: str, offset: int, timeout: float) -> None:
        self._syncing = True
        self._sync_read = 0
        started = time.monotonic()
        header = parse_bulk_header(await self._line(reader, timeout))
        data = bytearray()
        if header.size >= 0:
            self._sync_total = header.size
            while len(data) < header.size:
                chunk = await asyncio.wait_for(reader.read(min(_READ_CHUNK * 16, header.size - len(data))), timeout)
                if not chunk:
                    raise LinkDown("the primary closed the connection during the RDB transfer")
                data += chunk
                self._sync_read = len(data)
                self._last_io = time.monotonic()
        else:
            self._sync_total = 0  # unknown for a diskless transfer
            mark = header.mark
            while True:
                chunk = await asyncio.wait_for(reader.read(_READ_CHUNK * 16), timeout)
                if not chunk:
                    raise LinkDown("the primary closed the connection during the RDB transfer")
                data += chunk
                self._sync_read = len(data)
                self._last_io = time.monotonic()
                if len(data) >= EOF_MARK_LEN and data[-EOF_MARK_LEN:] == mark:
                    del data[-EOF_MARK_LEN:]
                    break
        received = time.monotonic()
        log.info("MASTER <-> REPLICA sync (Redis): received %d bytes of RDB in %.3f seconds", len(data), received - started)
        self._load(bytes(data), replid, offset)
        self._syncing = False
        self._full_syncs += 1
        log.info("MASTER <-> REPLICA sync (Redis): loaded %d keys in %.3f seconds (offset %d of %s)",
                 self.server.keyspace.key_count(), time.monotonic() - received, offset, replid)

    def _load(self, data: bytes, replid: str, offset: int) -> None:
        """The RDB replaces the data set; the node's own log starts a new history."""
        server = self.server
        fresh = Keyspace(len(server.keyspace.dbs))
        skip = server.config.get("rdb-skip-unsupported") == "yes"
        # As at start-up: objects in bulk, none of them garbage; collections would only cost.
        collecting = gc.isenabled()
        gc.disable()
        try:
            load_rdb_bytes(data, fresh, skip, f"the RDB of {self.host}:{self.port}")
        finally:
            if collecting:
                gc.enable()
        repl = self.repl
        backlog = repl.backlog
        assert backlog is not None
        repl.flush()
        own = new_replid()
        with repl.persistence.replacing_data_set():
            server.touch_all(None)
            server.keyspace.replace_with(fresh)
            server.effects.restart(own, server.effects.offset)
        backlog.reset(own, server.effects.offset)
        self.session = self._new_session()
        self.replid = replid
        self.offset = offset
        server.after_batch()

    async def _ack_every_second(self) -> None:
        while True:
            await asyncio.sleep(self.settings.ack_period)
            self._send_ack()

    def _send_ack(self) -> None:
        writer = self._writer
        if writer is not None and not writer.is_closing():
            writer.write(ack_command(self.offset))

    async def _stream(self, reader: asyncio.StreamReader, timeout: float) -> None:
        framer = CommandFramer()
        kill = self._kill
        assert kill is not None
        killed = asyncio.ensure_future(kill.wait())
        try:
            while True:
                read = asyncio.ensure_future(reader.read(_READ_CHUNK))
                done, _ = await asyncio.wait({read, killed}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
                if killed in done:
                    read.cancel()
                    raise LinkDown("connection killed by CLIENT KILL")
                if read not in done:
                    read.cancel()
                    raise LinkDown(f"no data from the primary for {timeout:.0f}s (repl-timeout)")
                chunk = read.result()
                if not chunk:
                    raise LinkDown("the primary closed the connection")
                self._last_io = time.monotonic()
                framer.feed(chunk)
                self._apply(framer)
        finally:
            killed.cancel()

    def _apply(self, framer: CommandFramer) -> None:
        """Runs every whole command the framer holds. The offset moves past each one run
        outside a MULTI; a transaction's bytes count once its EXEC ran (a primary writes a
        MULTI block whole, but it may arrive over several reads)."""
        server = self.server
        dispatcher = server.dispatcher
        dispatcher.batch_started()
        try:
            while (item := framer.next()) is not None:
                argv, size = item
                if is_getack(argv):
                    # The offset before the GETACK itself, as Redis's master client acks.
                    self._send_ack()
                    self.offset += size
                    continue
                self._counters.note(self.session, argv)
                self._run_command(argv)
                if self.session.multi is not None:
                    self._multi_bytes += size
                else:
                    self._counters.correct(self.session, self._run_command)
                    self.offset += self._multi_bytes + size
                    self._multi_bytes = 0
        finally:
            dispatcher.batch_ended()
            server.after_batch()

    def _run_command(self, argv: list[bytes]) -> None:
        spec = lookup(argv, self.server.commands)
        if spec is None or spec.handler is None:
            self._unsupported(argv)
            return
        reply = self.server.execute(self.session, argv)
        self.session.select(self.session.db_index)  # SWAPDB re-points registered clients only
        if type(reply) is ReplyError:
            if reply.message == "ERR no such key" and self._skipping() and argv[0].lower() in (b"rename", b"renamenx"):
                # A key of a type Rill lacks, skipped at the full sync: its rename goes too.
                self._skipped(argv[0].decode("utf-8", "replace"))
                return
            self._failed(argv, reply.message)
        elif type(reply) is Block:
            self._failed(argv, "it would block")
        elif type(reply) is list and argv[0].lower() == b"exec":
            for item in reply:
                if type(item) is ReplyError:
                    self._failed(argv, f"a command of the transaction failed: {item.message}")

    def _unsupported(self, argv: list[bytes]) -> None:
        """A command Rill does not have: skipped under rdb-skip-unsupported, else the link
        stops (every later sync would meet the same writes)."""
        name = b" ".join(argv[:2] if len(argv) > 1 and argv[0].lower() in _CONTAINERS else argv[:1])
        shown = name.decode("utf-8", "replace")
        if argv[0].lower() not in _SKIPPABLE:
            raise Unsupported(
                f"the primary sent '{shown}', which Rill does not have: it would change a string Rill holds, "
                "so it cannot be skipped either; stop sending it to the source before migrating"
            )
        if self._skipping():
            self._skipped(shown)
            return
        raise Unsupported(
            f"the primary sent '{shown}', which Rill does not have (it keeps strings and streams): "
            "stop writing other types to the source, or set rdb-skip-unsupported yes"
        )

    def _skipping(self) -> bool:
        return self.server.config.get("rdb-skip-unsupported") == "yes"

    def _skipped(self, shown: str) -> None:
        self.skipped += 1
        if self.skipped <= _SKIPPED_LOGGED:
            log.warning("Skipped '%s' from the Redis primary: Rill does not have it (rdb-skip-unsupported)", shown)

    def _failed(self, argv: list[bytes], why: str) -> None:
        name = argv[0].decode("utf-8", "replace")
        self.repl.apply_errors += 1
        log.error("== CRITICAL == this replica could not apply '%s' from its Redis primary (%s): it diverged; "
                  "asking for a full sync", name, why)
        self.replid = ""  # the next PSYNC asks for a full resync
        raise LinkDown(f"'{name}' from the primary failed here: {why}")
