"""Writes (``df.write.format("rill")`` and ``writeStream.format("rill")``): each task turns its
Arrow batches into XADDs (pipelined, ``batchSize`` per round trip) on the primary.

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
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import redis
from pyspark.sql.datasource import DataSourceArrowWriter, DataSourceStreamArrowWriter, WriterCommitMessage

from pipeline import idempotence
from pipeline.connection import Node, discover
from pipeline.options import ConnectionOptions, OptionError, WriteOptions, connection_options, write_options

log = logging.getLogger("pipeline.rill")

_RETRIES = 3
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


class _Sink:
    """One task's connection to the primary, following it through a failover."""

    def __init__(self, conn: ConnectionOptions) -> None:
        self.conn = conn
        self.node: Node = discover(conn).primary
        self.client = self.node.client(conn.socket_timeout)

    def reconnect(self) -> None:
        self.client.close()
        self.node = discover(self.conn).primary
        self.client = self.node.client(self.conn.socket_timeout)

    def send(self, commands: list[list[Any]]) -> None:
        """Pipelined; after a lost connection or a demoted primary the whole round trip is sent
        again to the primary found then (deduplicated when the writes are idempotent)."""
        for attempt in range(_RETRIES + 1):
            try:
                with self.client.pipeline(transaction=False) as pipe:
                    for args in commands:
                        pipe.execute_command(*args)
                    replies = pipe.execute(raise_on_error=False)
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
                if attempt == _RETRIES:
                    raise
                log.warning("writing to %s failed (%s); sending the last %d XADDs again", self.node, e, len(commands))
                self.reconnect()
                continue
            errors = [r for r in replies if isinstance(r, Exception)]
            if errors and any(str(e).startswith("READONLY") for e in errors) and attempt < _RETRIES:
                log.warning("%s is no longer the primary; sending the last %d XADDs to the new one", self.node,
                            len(commands))
                self.reconnect()
                continue
            if errors:
                raise RuntimeError(f"XADD failed on {self.node}: {errors[0]}") from errors[0]
            return

    def close(self) -> None:
        self.client.close()


class _RillWriter:
    """What the batch and the streaming writer share: planning on the driver, writing in tasks."""

    def __init__(self, options: Mapping[str, str], schema: object, streaming: bool) -> None:
        self.conn = connection_options(options)
        self.opts = write_options(options)
        self.layout = layout(schema, self.opts)
        self.streaming = streaming
        # Identifies a batch job's tasks (retries included) when there is no streaming query ID.
        self.job = uuid.uuid4().hex
        self.idempotent = self._decide()

    def _decide(self) -> bool:
        """On the driver: whether to write with IDMP, said once in the driver's log."""
        if self.opts.idempotence == "off":
            return False
        sink = _Sink(self.conn)
        try:
            supported = idempotence.supports_idmp(sink.client)
            if not supported:
                if self.opts.idempotence == "required":
                    raise OptionError(f"idempotence=required but {sink.node} lacks XADD IDMP (Redis 8.6)")
                if sink.node not in _warned:
                    _warned.add(sink.node)
                    log.warning("%s: %s", sink.node, _FALLBACK)
                return False
            log.info("%s supports XADD IDMP: writes are exactly once", sink.node)
            if self.opts.stream is not None:
                idempotence.configure(sink.client, self.opts.stream, self.opts.idmp_duration, self.opts.idmp_maxsize)
            return True
        finally:
            sink.close()

    def write_batches(self, batches: Iterator[pa.RecordBatch]) -> RillCommitMessage:
        from pyspark import TaskContext

        task = TaskContext.get()
        partition = task.partitionId() if task else 0
        query = (task.getLocalProperty("sql.streaming.queryId") if task else None) or self.job
        batch_id = (task.getLocalProperty("streaming.sql.batchId") if task else None) or "0"
        sink = _Sink(self.conn)
        idempotent = self.idempotent and idempotence.supports_idmp(sink.client)
        if self.idempotent and not idempotent:  # the primary changed since the driver looked
            if self.opts.idempotence == "required":
                raise RuntimeError(f"idempotence=required but {sink.node} lacks XADD IDMP (Redis 8.6)")
            log.warning("%s: %s", sink.node, _FALLBACK)
        ids = idempotence.IdempotentIds(query, batch_id, partition, self.opts.idmp_producers) if idempotent else None
        trim: list[Any] = ["MAXLEN", "=" if self.opts.maxlen_exact else "~", self.opts.maxlen] \
            if self.opts.maxlen is not None else []
        default_stream = self.opts.stream.encode() if self.opts.stream is not None else None
        configured: set[bytes] = set()
        pending: list[list[Any]] = []
        written = 0
        try:
            for batch in batches:
                for stream, fields in _rows(batch, self.layout, default_stream):
                    args: list[Any] = [b"XADD", stream]
                    if ids is not None:
                        if stream not in configured and self.layout.stream_column:
                            idempotence.configure(sink.client, stream.decode(), self.opts.idmp_duration,
                                                  self.opts.idmp_maxsize)
                            configured.add(stream)
                        args += [b"IDMP", *ids.next(stream, fields)]
                    args += [*trim, b"*", *fields]
                    pending.append(args)
                    if len(pending) >= self.opts.batch_size:
                        sink.send(pending)
                        written += len(pending)
                        pending = []
            if pending:
                sink.send(pending)
                written += len(pending)
        finally:
            sink.close()
        return RillCommitMessage(partition, written, idempotent)

    def summarize(self, messages: list[WriterCommitMessage | None], batch_id: int | None) -> None:
        done = [m for m in messages if isinstance(m, RillCommitMessage)]
        entries = sum(m.entries for m in done)
        at_least_once = [m.partition for m in done if not m.idempotent]
        where = f"batch {batch_id}: " if batch_id is not None else ""
        log.info("%swrote %d entries from %d partitions (%s)", where, entries, len(done),
                 "exactly once" if not at_least_once else f"at least once in partitions {at_least_once}")


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
