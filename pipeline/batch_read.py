"""Batch reads (``spark.read.format("rill")``): the driver resolves each stream's bounds on one
node (the primary, or the first replica with readFrom=replica) — ``latest`` being the stream's
committed entry with committed reads — and cuts the range into ``partitionsPerStream`` ID
ranges, dealt round-robin over the read nodes; executors read them (pipeline.reading).

With ``pushFilters=true`` (and Spark's ``spark.sql.python.filterPushdown.enabled``, off by
default in 4.3, which refuses a reader offering pushdown while it is off) the filters Spark
pushes down narrow what is read: comparisons of ``ts`` (the time part of the ID) and equality of
``id`` become the ID range itself, and equality (or IN) of ``stream`` picks the streams, so a
filtered read fetches only its ID range. Spark evaluates every filter again on what comes back
(they are all handed back to it), so a read is never wider than the filter says, whatever
Spark's string comparison of ``id`` makes of digits of unequal length.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import redis
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)

from pipeline import arrow, ids, servers
from pipeline.endpoints import Node, discover, read_nodes
from pipeline.options import Bound, OptionError, connection_options, read_options
from pipeline.planning import batch_range, stream_state
from pipeline.reading import RangePartition, ReadSpec, read_range


def deal(nodes: tuple[Node, ...], k: int) -> tuple[Node, ...]:
    """The read nodes rotated so that partition ``k`` starts on node ``k mod n`` (read scaling);
    the others stay as fallbacks."""
    i = k % len(nodes)
    return nodes[i:] + nodes[:i]


def use_committed(client: redis.Redis, mode: str) -> bool:
    """readCommitted: auto (when the server has XCOMMITTED), true (it must), false."""
    if mode == "false":
        return False
    supported = servers.has_committed_reads(client)
    if mode == "true" and not supported:
        raise OptionError("readCommitted=true but the server has no committed reads (XCOMMITTED, a Rill command)")
    return supported


def first_entries(client: redis.Redis, pieces: Sequence[tuple[str, int, int]]) -> list[int | None]:
    """The first entry of each (stream, lo, hi) range now (None: empty), one pipelined round trip."""
    if not pieces:
        return []
    with client.pipeline(transaction=False) as pipe:
        for stream, lo, hi in pieces:
            pipe.execute_command("XRANGE", stream, ids.fmt(lo), ids.fmt(hi), "COUNT", 1)
        replies = pipe.execute()
    return [ids.parse(found[0][0]) if found else None for found in replies]


def _ms(value: Any) -> float | None:
    """A pushed-down ``ts`` literal as epoch milliseconds (None if it is no timestamp)."""
    if isinstance(value, datetime.datetime):
        at = value if value.tzinfo is not None else value.replace(tzinfo=datetime.UTC)
        return at.timestamp() * 1000
    return None


class RillBatchReader(DataSourceReader):
    def __init__(self, options: Mapping[str, str], schema: object) -> None:
        self.conn = connection_options(options)
        self.opts = read_options(options, streaming=False)
        self.spec = ReadSpec(self.conn, arrow.projection(schema), self.opts.batch_size, self.opts.arrow_batches,
                             fail_on_data_loss=self.opts.fail_on_data_loss)
        self.lo = ids.MIN_ID  # what pushed-down filters leave of the ID space
        self.hi = ids.MAX_ID
        self.only: set[str] | None = None  # pushed-down stream = / IN

    def _narrow(self, f: Filter) -> None:
        attribute: tuple[str, ...] = getattr(f, "attribute", ())
        column = attribute[0] if len(attribute) == 1 else None
        if column == "ts":
            ms = _ms(getattr(f, "value", None))
            if ms is None:
                return
            if isinstance(f, (GreaterThan, GreaterThanOrEqual)):
                # ts has millisecond resolution: ts > 5.2 ms means ID time >= 6
                first = math.floor(ms) + 1 if isinstance(f, GreaterThan) and ms == math.floor(ms) else math.ceil(ms)
                self.lo = max(self.lo, ids.make(max(first, 0), 0))
            elif isinstance(f, (LessThan, LessThanOrEqual)):
                last = math.ceil(ms) - 1 if isinstance(f, LessThan) and ms == math.ceil(ms) else math.floor(ms)
                self.hi = min(self.hi, ids.make(last, ids.MAX_PART) if last >= 0 else ids.MIN_ID)
            elif isinstance(f, EqualTo) and ms == math.floor(ms):
                self.lo = max(self.lo, ids.make(int(ms), 0))
                self.hi = min(self.hi, ids.make(int(ms), ids.MAX_PART))
        elif column == "id" and isinstance(f, EqualTo) and isinstance(f.value, str):
            try:
                exact = ids.parse(f.value)
            except ids.InvalidStreamId:
                self.hi, self.lo = ids.MIN_ID, ids.MAX_ID  # no entry has that ID
                return
            self.lo, self.hi = max(self.lo, exact), min(self.hi, exact)
        elif column == "stream" and isinstance(f, (EqualTo, In)):
            names = {f.value} if isinstance(f, EqualTo) else set(f.value)
            wanted = {n for n in names if isinstance(n, str)}
            self.only = wanted if self.only is None else self.only & wanted

    def _streams(self, client: redis.Redis) -> list[str]:
        if self.opts.streams_pattern is not None:
            streams = sorted(k.decode() for k in client.scan_iter(match=self.opts.streams_pattern, _type="stream",
                                                                 count=1000))
        else:
            streams = list(self.opts.streams)
        return [s for s in streams if self.only is None or s in self.only]

    def partitions(self) -> Sequence[InputPartition]:
        nodes = read_nodes(self.conn, discover(self.conn))
        client = nodes[0].client(self.conn.socket_timeout)
        try:
            committed = use_committed(client, self.opts.read_committed)
            spec = replace(self.spec, committed=committed)
            streams = self._streams(client)
            latest = servers.committed_ids(client, streams) if committed and streams else {}
            pieces: list[tuple[str, int, int]] = []
            for stream in streams:
                state = stream_state(client, stream)
                if committed and state is not None:
                    found = latest.get(stream)
                    state = replace(state, last_id=ids.parse(found) if found else None)
                bounds = batch_range(state, self.opts.starting.get(stream, self.opts.starting_default),
                                     self.opts.ending.get(stream, Bound("latest")))
                if bounds is None:
                    continue
                lo, hi = max(bounds[0], self.lo), min(bounds[1], self.hi)
                if lo > hi:
                    continue
                pieces += [(stream, a, b) for a, b in ids.split(lo, hi, self.opts.partitions_per_stream)]
            firsts = first_entries(client, pieces)
        finally:
            client.close()
        parts: list[InputPartition] = [RangePartition(stream, lo, hi, deal(nodes, k), spec, firsts[k])
                                       for k, (stream, lo, hi) in enumerate(pieces)]
        # Spark wants at least one partition; an empty range reads nothing.
        return parts or [RangePartition(self.opts.streams[0] if self.opts.streams else "", 1, 0, nodes, spec)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, RangePartition)
        if partition.lo > partition.hi:
            return iter(())
        return read_range(partition)


class RillFilteringBatchReader(RillBatchReader):
    """A batch reader that takes the filters Spark pushes down (option pushFilters=true)."""

    def pushFilters(self, filters: list[Filter]) -> Iterable[Filter]:  # noqa: N802 (Spark's name)
        for f in filters:
            self._narrow(f)
            yield f  # Spark checks every row again: pushed filters only narrow the read
