"""Redis replicas of a Rill node: a redis-server told `REPLICAOF <this node's RESP address>`
syncs over Redis's own protocol on the RESP port (node/replication/redis_wire.py), so leaving
Rill, or running Redis replicas beside Rill ones during a migration, needs no other tool.

* REPLCONF records what a replica says of itself (listening-port, ip-address, capa,
  rdb-only) on its connection; ACK comes later, on the replication connection.
* PSYNC <replid> <offset>: a partial resync when the backlog holds that offset of this
  node's history (the same rule as for Rill replicas: replid or replid2, unit boundary),
  `+CONTINUE <replid>`; otherwise `+FULLRESYNC <replid> <offset>` and the data set as an RDB
  file (RDB 10, which every Redis 7 loads; built on the event loop at the backlog's end, as
  the gRPC full sync builds its snapshot), sent as `$<length>`. SYNC is the same full sync
  without the FULLRESYNC line (redis-cli --rdb and `rill rdb export` use it, with
  `REPLCONF rdb-only 1`: the connection closes after the RDB).
* Then the connection is a replica's: it gets this node's log from the backlog, verbatim
  but for what Redis 7 cannot apply (below), and its `REPLCONF ACK <offset>` feed the same
  registry the gRPC replicas' acks do: INFO's slaveN lines, ROLE, WAIT and
  min-replicas-to-write count Redis replicas like Rill ones. Offsets are this node's log
  offsets, byte for byte, so a Redis replica that reconnects continues partially.
* What Redis 7 cannot apply is rewritten within the same number of bytes, the difference
  made up with newlines before the unit (a primary's stream may hold lone newlines: the
  replica skips them and counts them in its offset once it processes the next command):
  `XADD ... IDMP pid iid ...` loses its IDMP arguments, XCFGSET, XIDMPRECORD and
  RILL.XDEADLETTER become a PING (Rill's and Redis 8.6's settings and records have no Redis 7
  counterpart), and a RESTORE payload of RDB 11 is written as RDB 10. A unit with a Redis 8
  write Redis 7 has no command for (XDELEX, XACKDEL, XNACK, a KEEPREF/DELREF/ACKED trim)
  closes the replica's connection after what came before it, with a logged reason, and the
  replica's next PSYNC gets a full sync, whose RDB holds the result.
* While Redis replicas are attached to a primary, a PING goes into the log every
  repl-ping-replica-period (a replication-only unit: never in an AOF), as Redis's primary
  does, so an idle link does not look dead to them.
* The replica's output is bounded by `client-output-buffer-limit replica` (hard limit); a
  replica over it is disconnected, as Redis does.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol

import hiredis

from node import REDIS_VERSION
from node.commands.context import Session
from node.commands.reply import OK, CommandError, Raw
from node.log.encode import encode_command
from node.log.scan import command_end
from node.persistence.redis_rdb import rdb_aux_fields
from node.rdb.dump import BadPayload, create_payload, load_payload, payload_version
from node.rdb.encoding import RdbError
from node.rdb.file import write_rdb
from node.rdb.values import UnsupportedType
from replication.registry import STATE_ONLINE, STATE_SEND_BULK

if TYPE_CHECKING:
    from node.replication.backlog_feed import BacklogFeed
    from node.replication.planned_failover import Failover
    from node.replication.redis_link import RedisReplicaLink
    from node.server.connection import ClientConnection
    from node.server.server import Server
    from replication import Backlog, Primary, ReplicaLink

log = logging.getLogger("rill.replication")

# The RDB version of full syncs and SYNC: Redis 7.0's, which 7.0 and 7.2 both load.
FULL_SYNC_RDB_VERSION: Final = 10
# The backlog is read in pieces of about this size when streaming to a replica.
_READ_BYTES: Final = 256 * 1024
# REPLCONF settings kept for connections that have not sent PSYNC yet (a bound, not a need).
_PENDING_CONFS: Final = 1024
NO_REPLY: Final = Raw(b"")
_SYNTAX_ERROR: Final = "ERR syntax error"
# A replica sends short commands (REPLCONF ACK): anything longer is not one.
_MAX_REPLICA_COMMAND: Final = 4096
_INT_ERROR: Final = "ERR value is not an integer or out of range"


@dataclass(slots=True)
class ReplicaConf:
    """What a connection said of itself with REPLCONF before PSYNC (replconfCommand)."""

    listening_port: int = 0
    ip_address: str = ""
    capa_eof: bool = False
    capa_psync2: bool = False
    rdb_only: bool = False


class Replication(Protocol):
    """What serving Redis replicas uses of the node's replication side (node/replication/role.py's
    `ReplicationNode`, which builds it)."""

    @property
    def server(self) -> Server: ...
    @property
    def backlog(self) -> Backlog | None: ...
    @property
    def feed(self) -> BacklogFeed: ...
    @property
    def primary(self) -> Primary | None: ...
    @property
    def link(self) -> ReplicaLink | RedisReplicaLink | None: ...
    @property
    def failover(self) -> Failover: ...
    def flush(self) -> None: ...


class RedisReplicas:
    """The node's Redis replicas (`ReplicationNode.redis_replicas`)."""

    def __init__(self, repl: Replication) -> None:
        self.repl = repl
        self.server = repl.server
        self._confs: OrderedDict[int, ReplicaConf] = OrderedDict()
        self.sessions: dict[str, RedisReplicaSession] = {}
        self._listening = False
        self._pinger: asyncio.TimerHandle | None = None
        # A log offset before which no Redis replica may continue partially: a unit there
        # had no Redis 7 form (`for_redis`).
        self.full_sync_before = 0

    # -- REPLCONF, PSYNC, SYNC ------------------------------------------------------------

    def replconf(self, session: Session, argv: list[bytes]) -> Any:
        """REPLCONF <option> <value> ... (replconfCommand)."""
        if len(argv) % 2 == 0:
            raise CommandError(_SYNTAX_ERROR)
        conf = self._confs.get(session.id)
        if conf is None:
            conf = self._confs[session.id] = ReplicaConf()
            while len(self._confs) > _PENDING_CONFS:
                self._confs.popitem(last=False)
        for j in range(1, len(argv), 2):
            option = argv[j].lower()
            value = argv[j + 1]
            if option == b"listening-port":
                port = _to_int(value)
                if port is None:
                    raise CommandError(_INT_ERROR)
                conf.listening_port = port
            elif option == b"ip-address":
                conf.ip_address = value.decode("utf-8", "replace")
            elif option == b"capa":
                if value.lower() == b"eof":
                    conf.capa_eof = True
                elif value.lower() == b"psync2":
                    conf.capa_psync2 = True
            elif option in (b"ack", b"fack"):
                # Only a replica's replication connection acks; on a client's, Redis ignores it.
                return NO_REPLY
            elif option == b"getack":
                return NO_REPLY
            elif option == b"rdb-only":
                flag = _to_int(value)
                if flag not in (0, 1):
                    raise CommandError(_INT_ERROR)
                conf.rdb_only = flag == 1
            elif option == b"rdb-filter-only":
                pass  # 7.2's filter of functions: Rill has none to send
            else:
                raise CommandError(f"ERR Unrecognized REPLCONF option: {argv[j].decode('utf-8', 'replace')}")
        return OK

    def sync(self, session: Session, argv: list[bytes], psync: bool) -> Any:
        """PSYNC replid offset, or SYNC (syncCommand)."""
        if "replica" in session.flags:
            return NO_REPLY  # already one: ignored, as Redis does
        repl = self.repl
        if self.server.role == "slave":
            status = repl.link.status() if repl.link is not None else None
            if status is None or not status.link_up:
                raise CommandError("NOMASTERLINK Can't SYNC while not connected with my master")
        if repl.failover.running:
            raise CommandError("NOMASTERLINK Can't SYNC while failing over")
        conn = self.server.connections.get(session.id)
        if conn is None or conn.transport is None:
            return NO_REPLY
        conf = self._confs.pop(session.id, None) or ReplicaConf()
        backlog = repl.backlog
        assert backlog is not None
        repl.feed.record()  # the backlog keeps the log from now on, as at a gRPC replica's resync
        repl.flush()
        start: int | None = None
        if psync:
            replid = argv[1].decode("utf-8", "replace")
            offset = _to_int(argv[2])
            # Redis counts the offset of the next byte from 1; Rill's log offsets from 0.
            if (offset is not None and offset > 0 and replid != "?" and offset - 1 >= self.full_sync_before
                    and backlog.psync(replid, offset - 1).ok):
                start = offset - 1
        session.flags.add("replica")
        self._listen()
        replica_id = f"redis-{session.id}"
        host = conf.ip_address or session.addr.rsplit(":", 1)[0]
        primary = repl.primary
        assert primary is not None
        if start is not None:
            header = b"+CONTINUE %s\r\n" % backlog.replid.encode() if conf.capa_psync2 else b"+CONTINUE\r\n"
            primary.partial_syncs += 1
            log.info("Partial resynchronization request from Redis replica %s accepted, sending %d bytes of backlog",
                     session.addr, backlog.end - start)
            rdb = b""
        else:
            start = backlog.end
            if psync:
                primary.full_syncs += 1
                if argv[1] != b"?":
                    primary.partial_sync_errors += 1
            header = b"+FULLRESYNC %s %d\r\n" % (backlog.replid.encode(), start) if psync else b""
            started = time.monotonic()
            rdb = self._rdb(start)
            log.info("Full resync requested by Redis replica %s: RDB of %d bytes built in %.3f seconds at offset %d",
                     session.addr, len(rdb), time.monotonic() - started, start)
        replica = RedisReplicaSession(self, conn, replica_id, start, conf.rdb_only,
                                      session.user.name.decode("utf-8", "surrogateescape"))
        primary.registry.add(replica_id, host, conf.listening_port, STATE_SEND_BULK if rdb else STATE_ONLINE, start)
        self.sessions[replica_id] = replica
        # The connection becomes the replica's once the replies already produced went out.
        asyncio.get_running_loop().call_soon(replica.take_over, header, rdb)
        return NO_REPLY

    def _rdb(self, offset: int) -> bytes:
        """The data set as an RDB file at `offset` of this node's log (rdbSaveRio's AUX
        fields with the replication ones a replica reads)."""
        config = self.server.config
        aux = rdb_aux_fields(REDIS_VERSION, int(time.time()), 0)
        backlog = self.repl.backlog
        assert backlog is not None
        aux += [(b"repl-stream-db", b"0"), (b"repl-id", backlog.replid.encode()), (b"repl-offset", b"%d" % offset)]
        return b"".join(write_rdb(self.server.keyspace, FULL_SYNC_RDB_VERSION, aux,
                                  config.get("rdbcompression") == "yes", config.get("rdbchecksum") == "yes"))

    # -- the backlog's listener and the keepalive ----------------------------------------------

    def _listen(self) -> None:
        if not self._listening:
            backlog = self.repl.backlog
            assert backlog is not None
            backlog.add_listener(self)
            self._listening = True
        if self._pinger is None:
            self._schedule_ping()

    def _schedule_ping(self) -> None:
        period = max(1, self.server.config.get_int("repl-ping-replica-period"))
        self._pinger = asyncio.get_running_loop().call_later(period, self._ping)

    def _ping(self) -> None:
        """replicationCron's PING to the replicas, into the log (replication-only)."""
        self._pinger = None
        if not self.sessions:
            return
        if self.server.role == "master":
            self.server.effects.append_for_replicas([b"PING"])
            self.repl.flush()
        self._schedule_ping()

    def log_appended(self, end: int) -> None:
        for replica in list(self.sessions.values()):
            replica.pump()

    def history_changed(self) -> None:
        """A new replication id: the replicas reconnect to learn it (they continue partially
        through replid2 when they can)."""
        self.disconnect_all("the replication id changed")

    def disconnect_all(self, reason: str, user: str | None = None) -> int:
        """Closes every Redis replica's stream, or those authenticated as `user`."""
        replicas = [replica for replica in self.sessions.values() if user in (None, replica.user)]
        for replica in replicas:
            replica.close(reason)
        return len(replicas)

    def removed(self, replica: RedisReplicaSession) -> None:
        if self.sessions.get(replica.replica_id) is replica:
            del self.sessions[replica.replica_id]
            primary = self.repl.primary
            if primary is not None:
                primary.registry.remove(replica.replica_id)


class RedisReplicaSession(asyncio.Protocol):
    """One Redis replica's connection once it sent PSYNC or SYNC."""

    def __init__(self, owner: RedisReplicas, conn: ClientConnection, replica_id: str, start: int, rdb_only: bool,
                 user: str) -> None:
        self.owner = owner
        self.user = user  # the ACL user it authenticated as (CLIENT KILL USER)
        self.conn = conn
        self.replica_id = replica_id
        self.position = start  # the next log offset to send
        self.rdb_only = rdb_only
        self.transport: asyncio.Transport | None = None
        self._input = bytearray()  # what the replica sent that is not a whole command yet
        self._streaming = False
        self._closed = False

    def take_over(self, header: bytes, rdb: bytes) -> None:
        """Takes the connection from the client protocol, once its pending replies are out."""
        if self._closed:
            return
        conn = self.conn
        gate = conn.server.reply_gate
        conn.write_unsent()
        if conn in gate.held:
            asyncio.get_running_loop().call_later(0.001, self.take_over, header, rdb)
            return
        transport = conn.transport
        if transport is None or transport.is_closing():
            self._closed = True
            self.owner.removed(self)
            return
        self.transport = transport
        transport.set_protocol(self)
        addr = conn.session.addr if conn.session is not None else "?"
        if header:
            transport.write(header)
        if rdb or not header:
            # SYNC always sends the RDB (an empty data set is a valid RDB too).
            transport.write(b"$%d\r\n" % len(rdb))
            transport.write(rdb)
            if self.rdb_only:
                log.info("RDB of %d bytes sent to %s (rdb-only): closing", len(rdb), addr)
                self.close("rdb-only transfer done")
                return
        self._streaming = True
        registry = self.owner.repl.primary.registry if self.owner.repl.primary is not None else None
        if registry is not None:
            registry.set_state(self.replica_id, STATE_ONLINE)
        log.info("Synchronization with Redis replica %s succeeded", addr)
        self.pump()

    def pump(self) -> None:
        """Sends what the backlog holds past `position`, written for Redis 7."""
        transport = self.transport
        if not self._streaming or transport is None or self._closed:
            return
        backlog = self.owner.repl.backlog
        assert backlog is not None
        hard = self.owner.server.config.output_limits.get("slave", (0, 0, 0))[0]
        while self.position < backlog.end:
            try:
                data, sizes = backlog.read(self.position, _READ_BYTES)
            except ValueError:
                self.close(f"offset {self.position} left the backlog")
                return
            out: list[bytes] = []
            at = 0
            for size in sizes:
                unit = data[at : at + size]
                try:
                    rewritten = for_redis(unit)
                except NoRedisForm as exc:
                    # Sent what came before it; from there only a full sync can go on (its RDB
                    # holds the result, as far as Redis 7 can hold it).
                    if out:
                        transport.write(b"".join(out))
                    unit_end = self.position + at + size
                    self.owner.full_sync_before = max(self.owner.full_sync_before, unit_end)
                    self.close(f"the unit at offset {self.position + at} holds {exc}: it resyncs fully")
                    return
                out.append(rewritten)
                at += size
            transport.write(b"".join(out))
            self.position += len(data)
            if hard and transport.get_write_buffer_size() > hard:
                self.close(f"over client-output-buffer-limit replica ({transport.get_write_buffer_size()} bytes pending)")
                return

    def data_received(self, data: bytes) -> None:
        """The replica's REPLCONF ACK <offset> [FACK <offset>], and the lone newlines a Redis
        replica sends while it loads the RDB (so that its primary does not time it out)."""
        buf = self._input
        buf += data
        registry = self.owner.repl.primary.registry if self.owner.repl.primary is not None else None
        while True:
            pos = 0
            while pos < len(buf) and buf[pos] in (0x0A, 0x0D):
                pos += 1
            if pos:
                del buf[:pos]
            if not buf:
                return
            if buf[0] != 0x2A:  # '*'
                self.close("bad protocol from the replica")
                return
            end = command_end(bytes(buf[:_MAX_REPLICA_COMMAND]), 0)
            if end < 0:
                if len(buf) > _MAX_REPLICA_COMMAND:
                    self.close("bad protocol from the replica")
                return
            reader = hiredis.Reader()
            reader.feed(bytes(buf[:end]))
            argv = reader.gets()
            del buf[:end]
            if (isinstance(argv, list) and len(argv) >= 3 and argv[0].lower() == b"replconf"
                    and argv[1].lower() == b"ack"):
                offset = _to_int(argv[2])
                if offset is not None and registry is not None and 0 <= offset <= self.position:
                    registry.ack(self.replica_id, offset, -1)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.owner.removed(self)
        log.info("Connection with Redis replica %s lost", self.replica_id)
        self.conn.connection_lost(exc)

    def pause_writing(self) -> None:
        pass  # bounded by the output limit in pump()

    def resume_writing(self) -> None:
        pass

    def close(self, reason: str) -> None:
        if self._closed:
            return
        self._closed = True
        log.warning("Closing Redis replica %s: %s", self.replica_id, reason)
        self.owner.removed(self)
        if self.transport is not None:
            self.transport.close()
        else:
            self.conn.close()


def _to_int(raw: bytes) -> int | None:
    text = raw.decode("ascii", "replace")
    if not text or not text.lstrip("-").isdigit() or len(text) > 20:
        return None
    return int(text)


# -- writing the log for Redis 7 -----------------------------------------------------------


# Redis 8 stream effects Rill logs (docs/compatibility.md) that change data Redis 7 has no
# command for: a unit holding one cannot be sent to a Redis 7 replica.
_REDIS8_WRITES: Final = frozenset((b"xdelex", b"xackdel", b"xnack"))
_TRIM_POLICIES: Final = frozenset((b"keepref", b"delref", b"acked"))


class NoRedisForm(Exception):
    """A unit of the log has no Redis 7 form (its text says what it holds)."""


def for_redis(unit: bytes) -> bytes:
    """The unit as a Redis 7 replica can apply it, in exactly as many bytes (newlines before
    it make up for what a rewrite saved); NoRedisForm when that cannot be done."""
    if not _needs_rewrite(unit):
        return unit
    reader = hiredis.Reader()
    reader.feed(unit)
    commands: list[list[bytes]] = []
    while (argv := reader.gets()) is not False:
        commands.append(argv)
    rewritten = b"".join(encode_command(c) for c in (_rewrite(argv) for argv in commands) if c)
    if not rewritten:
        rewritten = encode_command([b"PING"])
    if len(rewritten) > len(unit):
        raise NoRedisForm("its rewrite for Redis 7 is longer than it")
    return b"\n" * (len(unit) - len(rewritten)) + rewritten


def _needs_rewrite(unit: bytes) -> bool:
    # A cheap test on the bytes: only these commands and options are ever rewritten (a value
    # that contains one of the words costs a parse). XADD/XTRIM keep the client's spelling.
    upper = unit.upper()
    return (b"IDMP" in upper or b"RESTORE" in upper or b"XCFGSET" in upper or b"XDELEX" in upper
            or b"XACKDEL" in upper or b"XNACK" in upper or b"RILL." in upper or b"REF" in upper or b"ACKED" in upper)


def _rewrite(argv: list[bytes]) -> list[bytes] | None:
    name = argv[0].lower()
    if name in (b"xcfgset", b"xidmprecord") or name.startswith(b"rill."):
        return None  # Rill's own settings and records: nothing in Redis 7's data
    if name in _REDIS8_WRITES:
        raise NoRedisForm(f"{argv[0].decode('utf-8', 'replace')}, a Redis 8 stream command Redis 7 has no form for")
    if name in (b"xadd", b"xtrim") and any(a.lower() in _TRIM_POLICIES for a in argv[2:]):
        # The trimming policies of Redis 8.2 (before the ID or the threshold, a position the
        # fields cannot have: XADD's fields come after the ID).
        raise NoRedisForm(f"{argv[0].decode('utf-8', 'replace')} with a Redis 8.2 trimming policy")
    if name == b"xadd" and len(argv) > 4 and argv[2].lower() == b"idmp":
        return [argv[0], argv[1], *argv[5:]]
    if name == b"restore" and len(argv) >= 4:
        try:
            if payload_version(argv[3]) > FULL_SYNC_RDB_VERSION:
                value = load_payload(argv[3])
                return [*argv[:3], create_payload(value, FULL_SYNC_RDB_VERSION), *argv[4:]]
        except (BadPayload, RdbError, UnsupportedType):
            return argv
    return argv


__all__ = ["NO_REPLY", "NoRedisForm", "RedisReplicas", "RedisReplicaSession", "for_redis"]
