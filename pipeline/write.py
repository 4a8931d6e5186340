"""Writes (``df.write.format("rill")`` and ``writeStream.format("rill")``): each task turns its
Arrow batches into XADDs (pipelined, ``batchSize`` per round trip) on the primary, then makes
them durable as ``writeConcern`` asks before the task reports success (so before Spark commits
the batch): ``majority`` (the default on a replicated Rill) ends the partition with WAIT for
⌊N/2⌋ replicas, ``aof`` with WAITAOF 1 ⌊N/2⌋, ``1`` trusts the primary's replies, ``0`` does not
even check them. A write that cannot be confirmed — the primary went away, was demoted
(READONLY), lost its majority lease (NOREPLICAS) or WAIT counted too few — fails the task
once a primary answers again (looked for with backoff, for at most ``failoverTimeoutMs``):
Spark's retry then sends the whole partition again, which IDMP deduplicates. Resending only
the last round trip would lose what the old primary acknowledged but never replicated.

The target stream comes from option ``stream`` or else from a ``stream`` column (a ``stream``
column is never written as a field). The entry's fields
come from a ``fields`` map column when there is one (then other columns are ignored, which
makes a DataFrame read with the default schema write back as it was read), otherwise from
every column but ``stream``; null values are left out.  Option ``maxlen`` trims each XADD.

With ``idempotence`` auto (the default) the writer uses IDMP when the server has it and the
writes are exactly once (pipeline.idempotence); otherwise it says so and writes at least once.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import redis
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from pipeline import idempotence, ids, servers
from pipeline.endpoints import NODE_ERRORS, Node, NotPrimaryError, Topology, rediscover
from pipeline.options import ConnectionOptions, OptionError, WriteOptions, connection_options, write_options

log = logging.getLogger("pipeline.rill")

_warned: set[Node] = set()  # nodes this process has warned about (the driver plans every batch)
_FALLBACK = ("the server does not support XADD IDMP (Redis 8.6 idempotent production): writes are AT LEAST ONCE; "
             "a retried task or batch may add its entries again")


@dataclass
class RillCommitMessage(WriterCommitMessage):
    partition: int
    entries: int
    idempotent: bool


@dataclass(frozen=True)
class Layout:
    """Which columns give the stream and the fields (decided on the driver from the schema)."""

    stream_column: bool
    fields_map: bool
    field_columns: tuple[str, ...]


def layout(schema: object, opts: WriteOptions) -> Layout:
    from pyspark.sql.types import MapType, StringType, StructType

    assert isinstance(schema, StructType)
    names = [f.name for f in schema.fields]
    has_stream = "stream" in names
    if opts.stream is None and not has_stream:
        raise OptionError("name the target stream: option stream, or a `stream` column")
    if opts.stream is None and not isinstance(schema["stream"].dataType, StringType):
        raise OptionError("column `stream` must be a string")
    if "fields" in names:
        dtype = schema["fields"].dataType
        if not isinstance(dtype, MapType):
            raise OptionError("column `fields` must be a map (field -> value)")
        return Layout(opts.stream is None, True, ())
    columns = tuple(n for n in names if n != "stream")
    if not columns:
        raise OptionError("nothing to write: the DataFrame has no column besides `stream`")
    return Layout(opts.stream is None, False, columns)


def _strings(column: pa.Array) -> list[bytes | None]:
    """A column as the bytes XADD sends (None: leave the field out)."""
    t = column.type
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return column.to_pylist()  # type: ignore[no-any-return]
    if pa.types.is_timestamp(t):
        column = _iso_utc(column)
    elif pa.types.is_nested(t):
        return [None if v is None else json.dumps(v, default=str).encode() for v in column.to_pylist()]
    elif not pa.types.is_string(t):
        column = pc.cast(column, pa.string())
    return [None if v is None else v.encode() for v in column.to_pylist()]


def _iso_utc(column: pa.Array) -> pa.Array:
    """ISO-8601 in UTC (``2024-05-01T10:00:00Z``), with microseconds only when a value has some."""
    utc = column.cast(pa.timestamp("us", tz="UTC"))
    whole = pc.floor_temporal(utc, unit="second")
    if pc.all(pc.equal(utc, whole).fill_null(True)).as_py():
        return pc.strftime(utc.cast(pa.timestamp("s", tz="UTC")), format="%Y-%m-%dT%H:%M:%SZ")
    return pc.strftime(utc, format="%Y-%m-%dT%H:%M:%SZ")


def _rows(batch: pa.RecordBatch, lay: Layout, default_stream: bytes | None) -> Iterator[tuple[bytes, list[bytes]]]:
    n = batch.num_rows
    streams = _strings(batch.column("stream")) if lay.stream_column else [default_stream] * n
    if lay.fields_map:
        maps = batch.column("fields").to_pylist()
        for k in range(n):
            fields: list[bytes] = []
            for key, value in maps[k] or ():
                if value is not None:
                    fields += [str(key).encode(), value.encode() if isinstance(value, str) else str(value).encode()]
            yield _checked(streams[k], fields, k)
        return
    columns = [(name.encode(), _strings(batch.column(name))) for name in lay.field_columns]
    for k in range(n):
        fields = []
        for name, values in columns:
            if values[k] is not None:
                fields += [name, values[k]]  # type: ignore[list-item]
        yield _checked(streams[k], fields, k)


def _checked(stream: bytes | None, fields: list[bytes], k: int) -> tuple[bytes, list[bytes]]:
    if not stream:
        raise ValueError(f"row {k} of the batch has no target stream (null or empty `stream`)")
    if not fields:
        raise ValueError(f"row {k} of the batch for stream {stream.decode(errors='replace')!r} has no field to "
                         "write (every value is null)")
    return stream, fields


class NotConfirmed(RuntimeError):
    """A partition's writes could not be confirmed as the write concern asks: the task fails,
    and Spark's retry sends the whole partition again (deduplicated with IDMP)."""


class _Retriable(Exception):
    """The primary went away, is not the primary any more, or could not confirm in time."""


class _Sink:
    """One task's connection to the primary (found, after a failure, with backoff)."""

    def __init__(self, conn: ConnectionOptions) -> None:
        self.conn = conn
        self.node, self.client = rediscover(conn, "finding the primary to write to",
                                            lambda topology: _connect_primary(conn, topology))

    def send(self, commands: list[list[Any]], concern: str, last_ids: dict[bytes, int]) -> None:
        """Pipelined; `last_ids` learns each stream's highest entry ID written. A lost
        connection, a demoted primary (READONLY) or one without its majority lease
        (NOREPLICAS, fenced mode) is retriable; any other error is not."""
        try:
            with self.client.pipeline(transaction=False) as pipe:
                for args in commands:
                    pipe.execute_command(*args)
                replies = pipe.execute(raise_on_error=False)
        except NODE_ERRORS as e:
            raise _Retriable(f"writing to {self.node} failed: {e}") from e
        for args, reply in zip(commands, replies):
            if isinstance(reply, bytes):
                entry = ids.parse(reply)
                if entry > last_ids.get(args[1], 0):
                    last_ids[args[1]] = entry
        errors = [r for r in replies if isinstance(r, Exception)]
        if not errors or concern == "0":
            if errors:
                log.warning("writeConcern=0: %d of %d XADDs on %s failed, the first with: %s", len(errors),
                            len(replies), self.node, errors[0])
            return
        first = errors[0]
        if _retriable_reply(first):
            raise _Retriable(f"{self.node} refused the write: {first}")
        raise RuntimeError(f"XADD failed on {self.node}: {first}") from first

    def confirm(self, concern: str, replicas: int, timeout: float, last_ids: dict[bytes, int]) -> None:
        """Ends the partition: until a majority holds what it wrote. On Rill that is each
        stream's committed entry (XCOMMITTED) reaching the last entry written, the node's own
        majority (what WAIT counts, over the replica set it knows); elsewhere WAIT for
        `replicas` replicas. `aof`: WAITAOF 1 `replicas`."""
        if concern not in ("majority", "aof") or not last_ids:
            return
        if concern == "majority" and servers.has_committed_reads(self.client):
            self._until_committed(last_ids, timeout)
            return
        if concern == "majority" and replicas == 0:
            return
        ms = max(1, int(timeout * 1000))
        try:
            if concern == "majority":
                count = int(self.client.execute_command("WAIT", replicas, ms))
                local = 1
            else:
                local, count = (int(x) for x in self.client.execute_command("WAITAOF", 1, replicas, ms))
        except NODE_ERRORS as e:
            raise _Retriable(f"confirming the writes on {self.node} failed: {e}") from e
        except redis.exceptions.ResponseError as e:
            if _retriable_reply(e):
                raise _Retriable(f"{self.node} could not confirm the writes: {e}") from e
            raise
        if count < replicas or local < 1:
            raise _Retriable(f"{self.node}: {'WAIT' if concern == 'majority' else 'WAITAOF'} confirmed the "
                             f"partition's writes on {count} of the {replicas} replicas a majority needs "
                             f"within {timeout:.1f}s (writeTimeoutMs)")

    def _until_committed(self, last_ids: dict[bytes, int], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        delay = 0.001
        streams = sorted(last_ids)
        while True:
            try:
                committed = self.client.execute_command("XCOMMITTED", *streams)
            except NODE_ERRORS as e:
                raise _Retriable(f"confirming the writes on {self.node} failed: {e}") from e
            behind = [s for s, c in zip(streams, committed) if c is None or ids.parse(c) < last_ids[s]]
            if not behind:
                return
            if time.monotonic() >= deadline:
                raise _Retriable(f"{self.node}: a majority of the replica set did not hold the partition's writes "
                                 f"to {behind[0].decode(errors='replace')} within {timeout:.1f}s (writeTimeoutMs): "
                                 f"committed up to {(committed[streams.index(behind[0])] or b'none').decode()}, "
                                 f"written up to {ids.fmt(last_ids[behind[0]])}")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def close(self) -> None:
        self.client.close()


def _connect_primary(conn: ConnectionOptions, topology: Topology) -> tuple[Node, redis.Redis]:
    """A connection to the node named as the primary, once it answers ROLE as one."""
    node = topology.primary
    client = node.client(conn.socket_timeout)
    try:
        role = client.execute_command("ROLE")[0]
    except BaseException:
        client.close()
        raise
    if role != b"master":
        client.close()
        raise NotPrimaryError(f"{node} is a {role.decode(errors='replace')}, not the primary (yet)")
    return node, client


def _await_primary(conn: ConnectionOptions) -> None:
    rediscover(conn, "waiting for a primary before the partition is sent again",
               lambda topology: _connect_primary(conn, topology)[1].close())


def _retriable_reply(error: Exception) -> bool:
    # redis-py strips the READONLY code into the exception's class; NOREPLICAS stays in the text.
    return isinstance(error, redis.exceptions.ReadOnlyError) or str(error).startswith("NOREPLICAS")


class _RillWriter:
    """What the batch and the streaming writer share: planning on the driver, writing in tasks."""

    def __init__(self, options: Mapping[str, str], schema: object, streaming: bool) -> None:
        self.conn = connection_options(options)
        self.opts = write_options(options)
        self.layout = layout(schema, self.opts)
        self.streaming = streaming
        # Identifies a batch job's tasks (retries included). A streaming query has its own ID.
        self.job = uuid.uuid4().hex
        self.concern = self.opts.write_concern
        self.replicas = 0  # replicas that, with the primary, make a majority (WAIT's count)
        self.idempotent = self._decide()

    def _decide(self) -> bool:
        """On the driver: the write concern, and whether to write with IDMP (said once)."""
        sink = _Sink(self.conn)
        try:
            size = servers.replica_set_size(sink.client)
            self.replicas = size // 2
            if self.concern == "auto":
                # Rill confirms with its committed point, whose replica set it knows itself (a
                # lone node is a majority of one); elsewhere the primary's replies are all.
                self.concern = "majority" if servers.has_committed_reads(sink.client) else "1"
            if self.opts.idempotence == "off":
                return False
            supported = idempotence.supports_idmp(sink.client)
            if not supported:
                if self.opts.idempotence == "required":
                    raise OptionError(f"idempotence=required but {sink.node} lacks XADD IDMP (Redis 8.6)")
                if sink.node not in _warned:
                    _warned.add(sink.node)
                    log.warning("%s: %s", sink.node, _FALLBACK)
                return False
            if sink.node not in _warned:
                _warned.add(sink.node)
                log.info("%s supports XADD IDMP: writes are exactly once (writeConcern %s, %d of %d nodes)",
                         sink.node, self.concern, self.replicas + 1, size)
            if self.opts.stream is not None:
                idempotence.configure(sink.client, self.opts.stream, self.opts.idmp_duration, self.opts.idmp_maxsize)
                self._check_window(sink.client, self.opts.stream)
            return True
        finally:
            sink.close()

    def _check_window(self, client: redis.Redis, stream: str) -> None:
        """Warns when the stream forgets idempotent IDs sooner than a failed task may be retried."""
        duration = idempotence.window(client, stream)
        needed = idempotence.RETRIES_COVERED * (self.conn.failover_timeout + self.opts.write_timeout)
        if duration is not None and duration < needed:
            log.warning("stream %s keeps idempotent IDs for %ds (IDMP-DURATION) but a task retried %d times after "
                        "failovers may resend them up to %.0fs later (failoverTimeoutMs + writeTimeoutMs each): a "
                        "late retry could add entries twice. Raise idmpDuration (or the stream's IDMP-DURATION)",
                        stream, duration, idempotence.RETRIES_COVERED, needed)

    def write_batches(self, batches: Iterator[pa.RecordBatch]) -> RillCommitMessage:
        from pyspark import TaskContext

        task = TaskContext.get()
        partition = task.partitionId() if task else 0
        query, batch_id = self._identity(task)
        sink = _Sink(self.conn)
        try:
            last_ids: dict[bytes, int] = {}
            written = self._write_partition(sink, batches, query, batch_id, last_ids)
            sink.confirm(self.concern, self.replicas, self.opts.write_timeout, last_ids)
        except _Retriable as e:
            sink.close()
            # The old primary may have acknowledged writes of this partition that a failover
            # takes back: only a resend of the whole partition is safe. Wait (bounded) until a
            # primary answers, so that Spark's retry finds it, then fail the task.
            _await_primary(self.conn)
            raise NotConfirmed(f"partition {partition}: {e}; the task fails so that Spark sends the whole partition "
                               f"again{' (IDMP deduplicates it)' if self.idempotent else ' (at least once)'}") from e
        finally:
            sink.close()
        return RillCommitMessage(partition, written, self.idempotent)

    def _identity(self, task: Any) -> tuple[str, str]:
        """(query ID, batch ID) the idempotent IDs are made of. A streaming write without them
        would silently lose its exactly-once promise: it fails instead."""
        if not self.streaming:
            return self.job, "0"
        query = task.getLocalProperty("sql.streaming.queryId") if task else None
        batch_id = task.getLocalProperty("streaming.sql.batchId") if task else None
        if self.idempotent and (not query or batch_id is None):
            raise RuntimeError("the streaming writer runs without Spark's query ID or batch ID "
                               f"(sql.streaming.queryId={query!r}, streaming.sql.batchId={batch_id!r}): "
                               "its idempotent IDs cannot be made, so exactly-once writes are impossible")
        return query or self.job, batch_id or "0"

    def _write_partition(self, sink: _Sink, batches: Iterator[pa.RecordBatch], query: str, batch_id: str,
                         last_ids: dict[bytes, int]) -> int:
        keys = idempotence.IdempotentIds(query, batch_id, self.opts.idmp_producers) if self.idempotent else None
        if self.idempotent and not idempotence.supports_idmp(sink.client):
            raise _Retriable(f"{sink.node} lacks XADD IDMP, which the driver found on the primary")
        trim: list[Any] = ["MAXLEN", "=" if self.opts.maxlen_exact else "~", self.opts.maxlen] \
            if self.opts.maxlen is not None else []
        default_stream = self.opts.stream.encode() if self.opts.stream is not None else None
        configured: set[bytes] = set()
        pending: list[list[Any]] = []
        written = 0
        for batch in batches:
            for stream, fields in _rows(batch, self.layout, default_stream):
                args: list[Any] = [b"XADD", stream]
                if keys is not None:
                    if stream not in configured and self.layout.stream_column:
                        idempotence.configure(sink.client, stream.decode(), self.opts.idmp_duration,
                                              self.opts.idmp_maxsize)
                        configured.add(stream)
                    args += [b"IDMP", *keys.next(stream, fields)]
                args += [*trim, b"*", *fields]
                pending.append(args)
                if len(pending) >= self.opts.batch_size:
                    sink.send(pending, self.concern, last_ids)
                    written += len(pending)
                    pending = []
        if pending:
            sink.send(pending, self.concern, last_ids)
            written += len(pending)
        return written

    def summarize(self, messages: list[WriterCommitMessage | None], batch_id: int | None) -> None:
        done = [m for m in messages if isinstance(m, RillCommitMessage)]
        entries = sum(m.entries for m in done)
        at_least_once = [m.partition for m in done if not m.idempotent]
        where = f"batch {batch_id}: " if batch_id is not None else ""
        log.info("%swrote %d entries from %d partitions (%s, writeConcern %s)", where, entries, len(done),
                 "exactly once" if not at_least_once else f"at least once in partitions {at_least_once}",
                 self.concern)


class RillBatchWriter(_RillWriter, DataSourceArrowWriter):
    def __init__(self, options: Mapping[str, str], schema: object) -> None:
        _RillWriter.__init__(self, options, schema, streaming=False)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RillCommitMessage:
        return self.write_batches(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self.summarize(messages, None)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        log.warning("write aborted after %d partitions: entries they added stay in the stream",
                    sum(1 for m in messages if m is not None))


class RillStreamWriter(_RillWriter, DataSourceStreamArrowWriter):
    def __init__(self, options: Mapping[str, str], schema: object) -> None:
        _RillWriter.__init__(self, options, schema, streaming=True)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> RillCommitMessage:
        return self.write_batches(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 (Spark's name)
        self.summarize(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        log.warning("batch %d aborted: entries its finished tasks added stay in the stream; Spark runs the batch "
                    "again%s", batchId, " and IDMP deduplicates them" if self.idempotent else "")
