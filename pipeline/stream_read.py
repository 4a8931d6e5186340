"""Streaming reads (``spark.readStream.format("rill")``), micro-batch.

An offset is ``{stream: last ID read}`` (JSON, sorted keys): batch N reads the entries after
batch N-1's offset up to its own, inclusive, so a query restarted from its checkpoint goes on
exactly after the last committed batch.  Admission control: ``maxEntriesPerTrigger`` becomes
Spark's ``ReadMaxRows``; a limited batch takes the oldest entries across all streams (by ID
time, which keeps event-time processing in order).  Trigger.AvailableNow reads up to the ends
the streams had when the query started, honouring the limit.

Spark keeps this reader in one long-lived driver-side process for the whole run, which lets it
remember each offset's ordinal (how many entries were ever added up to it) for the data-loss
rule in pipeline.planning.
"""

from __future__ import annotations

import heapq
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import redis
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from pipeline import arrow, groups, ids
from pipeline.batch_read import deal
from pipeline.connection import Node, Topology, discover, read_nodes
from pipeline.options import connection_options, read_options
from pipeline.planning import StreamState, initial_offset, lost_after, stream_state
from pipeline.reading import RangePartition, ReadSpec, read_range

log = logging.getLogger("pipeline.rill")


class DataLossError(RuntimeError):
    """Entries after a committed offset were removed before the query read them."""


class RillStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str], schema: object) -> None:
        self.conn = connection_options(options)
        self.opts = read_options(options, streaming=True)
        self.spec = ReadSpec(self.conn, arrow.projection(schema), self.opts.batch_size, self.opts.arrow_batches)
        # stream -> {offset ID: entries ever added up to it}, for offsets planned in this run
        self._ordinals: dict[str, dict[int, int]] = {s: {} for s in self.opts.streams}
        self._target: dict[str, int] | None = None  # Trigger.AvailableNow: where to stop
        self._counts: dict[tuple[str, int], int] = {}  # (stream, end) -> entries of a limited batch
        self._topology: Topology | None = None
        self._client: redis.Redis | None = None
        self._node: Node | None = None

    # -- connections -------------------------------------------------------------------------

    def _planner(self) -> redis.Redis:
        """A connection to the node offsets are planned on (the primary in group mode, since
        XREADGROUP writes, else the first read node); rediscovered after an error."""
        if self._client is None:
            self._topology = discover(self.conn)
            self._node = self._topology.primary if self.opts.group else read_nodes(self.conn, self._topology)[0]
            self._client = self._node.client(self.conn.socket_timeout)
        return self._client

    def _states(self) -> dict[str, StreamState | None]:
        try:
            client = self._planner()
            return {s: stream_state(client, s) for s in self.opts.streams}
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
            self._drop_client()
            client = self._planner()
            return {s: stream_state(client, s) for s in self.opts.streams}

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None

    # -- offsets -----------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, str]:
        states = self._states()
        offsets: dict[str, int] = {}
        for stream in self.opts.streams:
            if self.opts.group:
                groups.ensure_group(self._planner(), stream, self.opts.group, self.opts.starting[stream])
                offsets[stream] = groups.group_position(self._planner(), stream, self.opts.group)
                continue
            offsets[stream], ordinal = initial_offset(states[stream], self.opts.starting[stream])
            if ordinal is not None:
                self._ordinals[stream][offsets[stream]] = ordinal
        return _offset_json(offsets)

    def _start(self, start: Mapping[str, str]) -> dict[str, int]:
        """The offsets a batch starts after. A stream added to option streams since the
        checkpoint starts at its startingOffsets."""
        parsed: dict[str, int] = {}
        missing = [s for s in self.opts.streams if s not in start]
        if missing:
            initial = self.initialOffset()
            log.info("streams %s are new to this query: starting them at %s", missing,
                     {s: initial[s] for s in missing})
        for stream in self.opts.streams:
            parsed[stream] = ids.parse(start[stream]) if stream in start else ids.parse(initial[stream])
        return parsed

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark's name)
        # Spark parses no admission option of its own for Python sources: this is where
        # maxEntriesPerTrigger becomes the limit latestOffset() is given.
        if self.opts.max_entries_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.opts.max_entries_per_trigger)

    def latestOffset(self, start: dict[str, str], limit: ReadLimit) -> dict[str, str]:  # noqa: N802
        begin = self._start(start)
        states = self._states()
        if not self.opts.group:
            self._check_loss(begin, states)
        ends: dict[str, int] = {}
        for stream, state in states.items():
            last = state.last_id if state is not None and state.last_id is not None else ids.MIN_ID
            ends[stream] = max(begin[stream], last)
            if self._target is not None:
                ends[stream] = max(begin[stream], min(ends[stream], self._target.get(stream, ids.MIN_ID)))
        listed: dict[str, list[int]] = {}
        if isinstance(limit, ReadMaxRows):
            if self.opts.group:
                # what the group has not delivered yet is what a limited batch can take
                client = self._planner()
                begin = {s: max(i, groups.group_position(client, s, self.opts.group)) for s, i in begin.items()}
                ends = {s: max(ends[s], begin[s]) for s in ends}
            ends, listed = self._limit(begin, ends, limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            raise ValueError(f"unsupported read limit {limit!r}")
        self._note_ordinals(begin, ends, states, listed)
        for stream, found in listed.items():
            self._counts[(stream, ends[stream])] = len(found)
        return _offset_json(ends)

    def _limit(self, begin: dict[str, int], ends: dict[str, int], max_rows: int) -> tuple[dict[str, int],
                                                                                         dict[str, list[int]]]:
        """The oldest ``max_rows`` entries (by ID time) across the streams: each stream's end
        moves to the last of its entries among them."""
        client = self._planner()
        listed: dict[str, list[int]] = {}
        for stream in self.opts.streams:
            if ends[stream] <= begin[stream]:
                continue
            entries = client.execute_command("XRANGE", stream, "(" + ids.fmt(begin[stream]), ids.fmt(ends[stream]),
                                             "COUNT", max_rows)
            listed[stream] = [ids.parse(e[0]) for e in entries]
        taken = heapq.nsmallest(max_rows, ((i, s) for s, found in listed.items() for i in found))
        limited = dict(begin)
        for entry_id, stream in taken:
            limited[stream] = max(limited[stream], entry_id)
        counts = {s: sum(1 for i in found if i <= limited[s]) for s, found in listed.items()}
        return limited, {s: found[:counts[s]] for s, found in listed.items()}

    def _note_ordinals(self, begin: dict[str, int], ends: dict[str, int], states: dict[str, StreamState | None],
                       listed: dict[str, list[int]]) -> None:
        for stream, end in ends.items():
            known = self._ordinals[stream]
            state = states[stream]
            if end == begin[stream]:
                continue
            if state is not None and end == state.last_id == state.last_generated:
                known[end] = state.entries_added
            elif stream in listed and begin[stream] in known:
                known[end] = known[begin[stream]] + len(listed[stream])

    def _check_loss(self, begin: dict[str, int], states: dict[str, StreamState | None]) -> None:
        for stream, start in begin.items():
            reason = lost_after(start, self._ordinals[stream].get(start), states[stream])
            if reason is None:
                continue
            message = f"stream {stream!r}, committed offset {ids.fmt(start)}: {reason}"
            if self.opts.fail_on_data_loss:
                raise DataLossError(message + ". Set failOnDataLoss=false to go on from the first entry left.")
            log.warning("%s; going on from the first entry left (failOnDataLoss=false)", message)
            state = states[stream]
            if state is not None and state.first_id is not None:
                # Accept the loss: the offset counts as if everything up to the first entry was read.
                self._ordinals[stream][start] = state.removed

    def reportLatestOffset(self) -> dict[str, str] | None:
        states = self._states()
        return _offset_json({s: st.last_id if st is not None and st.last_id is not None else ids.MIN_ID
                             for s, st in states.items()})

    def prepareForTriggerAvailableNow(self) -> None:
        states = self._states()
        self._target = {s: st.last_id if st is not None and st.last_id is not None else ids.MIN_ID
                        for s, st in states.items()}
        log.info("Trigger.AvailableNow: reading up to %s", _offset_json(self._target))

    # -- batches -----------------------------------------------------------------------------

    def partitions(self, start: dict[str, str], end: dict[str, str]) -> Sequence[InputPartition]:
        begin = self._start(start)
        self._planner()
        assert self._topology is not None
        parts: list[InputPartition] = []
        if self.opts.group:
            return self._group_partitions(begin, end)
        nodes = read_nodes(self.conn, self._topology)
        for stream in self.opts.streams:
            lo, hi = ids.successor(begin[stream]), ids.parse(end[stream])
            for a, b in ids.split(lo, hi, self.opts.partitions_per_stream):
                parts.append(RangePartition(stream, a, b, deal(nodes, len(parts)), self.spec))
        return parts

    def _group_partitions(self, begin: dict[str, int], end: dict[str, str]) -> list[InputPartition]:
        assert self._topology is not None and self.opts.group is not None
        parts: list[InputPartition] = []
        for stream in self.opts.streams:
            # Every stream gets its consumers even when its offset did not move: a batch run
            # again after a failure starts from an offset computed anew from the group, and
            # its consumers must still deliver what they hold pending.
            hi = ids.parse(end[stream])
            # A limited batch knows its size: the consumers share it. Otherwise each reads
            # until it passes the batch's end.
            count = self._counts.get((stream, hi))
            n = self.opts.partitions_per_stream
            quota = math.ceil(count / n) if count else None
            for i in range(n):
                parts.append(groups.GroupPartition(stream, self.opts.group, groups.consumer_name(self.opts.consumer, i),
                                                   hi, quota, self._topology.primary, self.spec))
        return parts

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if isinstance(partition, groups.GroupPartition):
            return groups.read_group(partition)
        assert isinstance(partition, RangePartition)
        return read_range(partition)

    def commit(self, end: dict[str, str]) -> None:
        for stream, offset in end.items():
            known = self._ordinals.get(stream, {})
            committed = ids.parse(offset)
            for old in [i for i in known if i < committed]:
                del known[old]
            for key in [k for k in self._counts if k[0] == stream and k[1] <= committed]:
                del self._counts[key]
        if self.opts.group:
            client = self._planner()
            consumers = [groups.consumer_name(self.opts.consumer, i) for i in range(self.opts.partitions_per_stream)]
            for stream in self.opts.streams:
                acked = groups.ack_all(client, stream, self.opts.group, consumers)
                log.info("acknowledged %d entries of %s for group %s up to batch end %s", acked, stream,
                         self.opts.group, end.get(stream))

    def stop(self) -> None:
        self._drop_client()


def _offset_json(offsets: Mapping[str, int]) -> dict[str, str]:
    # Spark compares offsets as JSON text: sorted keys keep equal offsets equal.
    return {s: ids.fmt(offsets[s]) for s in sorted(offsets)}
