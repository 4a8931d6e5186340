"""Streaming reads (``spark.readStream.format("rill")``), micro-batch.

An offset (pipeline.offsets) holds per stream the last ID read: batch N reads the entries after
batch N-1's offset up to its own, inclusive, so a query restarted from its checkpoint goes on
exactly after the last committed batch. With committed reads (``readCommitted``, on by default
against a server that has XCOMMITTED) a batch ends at most at each stream's committed entry, so
nothing a failover could take back reaches Spark; the offset records the replication history it
was read in, and a batch planned in another history first checks that it still holds the entry
each stream was read up to (`planning.vouch`). ``failOnDataLoss`` decides what happens when it
does not, or when unread entries were trimmed or deleted, or a stream read before is gone.

Admission control: ``maxEntriesPerTrigger`` becomes Spark's ``ReadMaxRows``; a limited batch
takes the oldest entries across all streams (by ID time, which keeps event-time processing in
order). ``minOffsetsPerTrigger`` holds a trigger back until that many entries wait, for at most
``maxTriggerDelay``. Trigger.AvailableNow reads up to the ends the streams had when the query
started, honouring the limit. ``streamsPattern`` finds the streams at every batch.

Spark keeps this reader in one long-lived driver-side process for the whole run, which lets it
remember each offset's ordinal (how many entries were ever added up to it) for the data-loss
rule in pipeline.planning.
"""

from __future__ import annotations

import heapq
import logging
import math
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import redis
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow

from pipeline import arrow, groups, ids, servers
from pipeline.batch_read import deal, first_entries, use_committed
from pipeline.endpoints import NODE_ERRORS, Node, Topology, discover, read_nodes
from pipeline.offsets import Offset, fingerprint
from pipeline.options import connection_options, read_options
from pipeline.planning import BEHIND, StreamState, initial_offset, lost_after, stream_state, vouch
from pipeline.reading import DataLossError, RangePartition, ReadSpec, read_range

log = logging.getLogger("pipeline.rill")


class RillStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str], schema: object) -> None:
        self.conn = connection_options(options)
        self.opts = read_options(options, streaming=True)
        self.spec = ReadSpec(self.conn, arrow.projection(schema), self.opts.batch_size, self.opts.arrow_batches,
                             fail_on_data_loss=self.opts.fail_on_data_loss)
        # stream -> {offset ID: entries ever added up to it}, for offsets planned in this run
        self._ordinals: dict[str, dict[int, int]] = {}
        self._target: dict[str, int] | None = None  # Trigger.AvailableNow: where to stop
        self._counts: dict[tuple[str, int], int] = {}  # (stream, end) -> entries of a limited batch
        self._deleted_reported: dict[str, int] = {}  # stream -> greatest deleted ID already reported
        self._behind_since: float | None = None  # when a new history was first found behind the offset
        self._last_batch = time.monotonic()  # minOffsetsPerTrigger: when the last batch was planned
        self._topology: Topology | None = None
        self._client: redis.Redis | None = None
        self._node: Node | None = None
        self._committed: bool | None = None
        self._vouched: tuple[str, str] | None = None  # (old, new) history already checked

    # -- connections -------------------------------------------------------------------------

    def _planner(self) -> redis.Redis:
        """A connection to the node offsets are planned on (the primary in group mode, since
        XREADGROUP writes, else the first read node); rediscovered after an error."""
        if self._client is None:
            self._topology = discover(self.conn)
            self._node = self._topology.primary if self.opts.group else read_nodes(self.conn, self._topology)[0]
            self._client = self._node.client(self.conn.socket_timeout)
        return self._client

    def _with_planner(self, work: Any) -> Any:
        """`work(client)`, once more on a node found anew if the first one does not answer."""
        try:
            return work(self._planner())
        except NODE_ERRORS:
            self._drop_client()
            return work(self._planner())

    def _drop_client(self) -> None:
        if self._client is not None:
            self._client.close()
        self._client = None

    def _uses_committed(self) -> bool:
        if self._committed is None:
            # Consumer groups read with XREADGROUP, which no committed point bounds.
            self._committed = not self.opts.group and self._with_planner(
                lambda c: use_committed(c, self.opts.read_committed))
            self.spec = replace(self.spec, committed=bool(self._committed))
        return bool(self._committed)

    # -- what the streams hold ---------------------------------------------------------------

    def _streams(self, known: Sequence[str] = ()) -> list[str]:
        if self.opts.streams_pattern is None:
            return list(self.opts.streams)
        pattern = self.opts.streams_pattern
        found = self._with_planner(lambda c: {k.decode() for k in c.scan_iter(match=pattern, _type="stream",
                                                                                count=1000)})
        return sorted(found | set(known))

    def _states(self, streams: Sequence[str]) -> dict[str, StreamState | None]:
        return dict(self._with_planner(lambda c: [(s, stream_state(c, s)) for s in streams]))

    def _ends(self, states: Mapping[str, StreamState | None]) -> dict[str, int]:
        """How far each stream may be read now: its committed entry, or its last one."""
        if self._uses_committed():
            names = [s for s, st in states.items() if st is not None]
            found = self._with_planner(lambda c: servers.committed_ids(c, names)) if names else {}
            return {s: ids.parse(found[s]) if found.get(s) else ids.MIN_ID for s in states}
        return {s: st.last_id if st is not None and st.last_id is not None else ids.MIN_ID for s, st in states.items()}

    def _tails(self, positions: Mapping[str, int], previous: Offset | None) -> dict[str, str]:
        """The fingerprint of each stream's entry at its position (kept from `previous` when the
        position did not move)."""
        def fetch(client: redis.Redis) -> dict[str, str]:
            tails: dict[str, str] = {}
            for stream, position in positions.items():
                if previous is not None and stream in previous.tails and previous.positions.get(stream) == position:
                    tails[stream] = previous.tails[stream]
                    continue
                if position == ids.MIN_ID:
                    continue
                found = client.execute_command("XRANGE", stream, ids.fmt(position), ids.fmt(position))
                if found:
                    tails[stream] = fingerprint(found[0][0], found[0][1])
            return tails

        return dict(self._with_planner(fetch))

    def _offset(self, positions: Mapping[str, int], consumer: str, previous: Offset | None) -> dict[str, Any]:
        history = self._with_planner(servers.history)
        tails = self._tails(positions, previous)
        return Offset(dict(positions), history.replid, history.epoch, consumer, tails).to_json()

    # -- offsets -----------------------------------------------------------------------------

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802 (Spark's name)
        streams = self._streams()
        if self.opts.group:
            consumer = self.opts.consumer or uuid.uuid4().hex[:12]
            positions = {}
            for stream in streams:
                self._with_planner(lambda c, s=stream: groups.ensure_group(c, s, self.opts.group, self.opts.bound(s)))
                positions[stream] = self._with_planner(lambda c, s=stream: groups.group_position(c, s, self.opts.group))
            return self._offset(positions, consumer, None)
        return self._offset(self._initial_positions(streams), "", None)

    def _initial_positions(self, streams: Sequence[str]) -> dict[str, int]:
        states = self._states(streams)
        ends = self._ends(states) if self._uses_committed() else {}
        positions: dict[str, int] = {}
        for stream in streams:
            bound = self.opts.bound(stream)
            positions[stream], ordinal = initial_offset(states[stream], bound)
            if bound.kind == "latest" and stream in ends and ends[stream] < positions[stream]:
                # Only what is committed counts as there: the uncommitted tail comes later.
                positions[stream], ordinal = ends[stream], None
            if ordinal is not None:
                self._ordinals.setdefault(stream, {})[positions[stream]] = ordinal
        return positions

    def _begin(self, start: Offset, streams: Sequence[str]) -> dict[str, int]:
        """The positions a batch starts after; streams new to the query start at their
        startingOffsets."""
        missing = [s for s in streams if s not in start.positions]
        begin = {s: start.positions[s] for s in streams if s in start.positions}
        if missing:
            if self.opts.group:
                for stream in missing:
                    self._with_planner(lambda c, s=stream: groups.ensure_group(c, s, self.opts.group,
                                                                             self.opts.bound(s)))
                    begin[stream] = self._with_planner(lambda c, s=stream: groups.group_position(c, s,
                                                                                              self.opts.group))
            else:
                begin.update(self._initial_positions(missing))
            log.info("streams %s are new to this query: starting them at %s", missing,
                     {s: ids.fmt(begin[s]) for s in missing})
        return begin

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802 (Spark's name)
        # Spark parses no admission option of its own for Python sources: this is where
        # maxEntriesPerTrigger becomes the limit latestOffset() is given.
        if self.opts.max_entries_per_trigger is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.opts.max_entries_per_trigger)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802
        previous = Offset.from_json(start)
        streams = self._streams(list(previous.positions))
        begin = self._begin(previous, streams)
        states = self._states(streams)
        if not self.opts.group:
            if not self._vouch(previous, states):
                return start  # a replica of the new history has not reached the offset yet: later
            self._check_loss(begin, states, previous)
        ends: dict[str, int] = {}
        latest = self._ends(states)
        for stream in streams:
            ends[stream] = max(begin[stream], latest[stream])
            if self._target is not None:
                ends[stream] = max(begin[stream], min(ends[stream], self._target.get(stream, ids.MIN_ID)))
        listed: dict[str, list[int]] = {}
        if isinstance(limit, ReadMaxRows):
            if self.opts.group:
                # what the group has not delivered yet is what a limited batch can take
                begin = {s: max(i, self._with_planner(lambda c, s=s: groups.group_position(c, s, self.opts.group)))
                         for s, i in begin.items()}
                ends = {s: max(ends[s], begin[s]) for s in ends}
            ends, listed = self._limit(begin, ends, limit.max_rows)
        elif not isinstance(limit, ReadAllAvailable):
            raise ValueError(f"unsupported read limit {limit!r}")
        if self._held_back(begin, ends):
            return start
        self._note_ordinals(begin, ends, states, listed)
        for stream, found in listed.items():
            self._counts[(stream, ends[stream])] = len(found)
        self._log_lag(ends, states)
        if ends != begin:
            self._last_batch = time.monotonic()
        return self._offset(ends, previous.consumer, previous)

    def _vouch(self, previous: Offset, states: Mapping[str, StreamState | None]) -> bool:
        """After a change of history, whether the offset still stands (False: wait). Reports
        (or fails on) a history that lost what the query read."""
        if not previous.replid or not previous.tails:
            return True
        history = self._with_planner(servers.history)
        if history.replid == previous.replid or self._vouched == (previous.replid, history.replid):
            return True
        behind = False
        for stream, tail in previous.tails.items():
            position = previous.positions.get(stream)
            if position is None:
                continue
            verdict = self._with_planner(lambda c, s=stream, p=position, t=tail: vouch(
                c, s, p, t, states.get(s), primary=history.role == "master"))
            if verdict == BEHIND:
                behind = True
            elif verdict is not None:
                self._report(stream, position, verdict + f" (history {previous.replid[:8]} epoch {previous.epoch} -> "
                             f"{history.replid[:8]} epoch {history.epoch})")
        if behind:
            now = time.monotonic()
            self._behind_since = self._behind_since or now
            if now - self._behind_since < self.conn.failover_timeout:
                log.info("the read node's new history %s has not reached the offset yet: waiting", history.replid[:8])
                return False
            self._drop_client()  # another node may serve better next time
            for stream, position in previous.positions.items():
                self._report(stream, position, f"no node of the new history reached the offset within "
                             f"{self.conn.failover_timeout:.0f}s (failoverTimeoutMs)")
        self._behind_since = None
        self._vouched = (previous.replid, history.replid)
        log.warning("the read node's history changed (%s epoch %d -> %s epoch %d); the offset is still in it",
                    previous.replid[:8], previous.epoch, history.replid[:8], history.epoch)
        return True

    def _report(self, stream: str, position: int, reason: str) -> None:
        message = f"stream {stream!r}, committed offset {ids.fmt(position)}: {reason}"
        if self.opts.fail_on_data_loss:
            raise DataLossError(message + ". Set failOnDataLoss=false to go on from the first entry left.")
        log.warning("%s; going on (failOnDataLoss=false)", message)

    def _held_back(self, begin: Mapping[str, int], ends: Mapping[str, int]) -> bool:
        """minOffsetsPerTrigger: too few entries wait and maxTriggerDelay has not passed."""
        wanted = self.opts.min_entries_per_trigger
        if wanted is None or self._target is not None or ends == begin:
            return False
        if time.monotonic() - self._last_batch >= self.opts.max_trigger_delay:
            return False

        def count(client: redis.Redis) -> int:
            waiting = 0
            for stream, end in ends.items():
                if end > begin[stream] and waiting < wanted:
                    waiting += len(client.execute_command("XRANGE", stream, "(" + ids.fmt(begin[stream]), ids.fmt(end),
                                                          "COUNT", wanted - waiting))
            return waiting

        return bool(self._with_planner(count) < wanted)

    def _log_lag(self, ends: Mapping[str, int], states: Mapping[str, StreamState | None]) -> None:
        """The source's lag: entries added after the batch's end (when the reader knows it)."""
        lag = {}
        for stream, end in ends.items():
            state, known = states.get(stream), self._ordinals.get(stream, {})
            if state is not None and end in known:
                lag[stream] = state.entries_added - known[end]
        if lag:
            log.info("batch ends %s entries behind the latest (lag)", lag)

    def _limit(self, begin: dict[str, int], ends: dict[str, int], max_rows: int) -> tuple[dict[str, int],
                                                                                         dict[str, list[int]]]:
        """The oldest ``max_rows`` entries (by ID time) across the streams: each stream's end
        moves to the last of its entries among them."""
        def listing(client: redis.Redis) -> dict[str, list[int]]:
            listed: dict[str, list[int]] = {}
            for stream in ends:
                if ends[stream] <= begin[stream]:
                    continue
                entries = client.execute_command("XRANGE", stream, "(" + ids.fmt(begin[stream]),
                                                 ids.fmt(ends[stream]), "COUNT", max_rows)
                listed[stream] = [ids.parse(e[0]) for e in entries]
            return listed

        listed = self._with_planner(listing)
        taken = heapq.nsmallest(max_rows, ((i, s) for s, found in listed.items() for i in found))
        limited = dict(begin)
        for entry_id, stream in taken:
            limited[stream] = max(limited[stream], entry_id)
        counts = {s: sum(1 for i in found if i <= limited[s]) for s, found in listed.items()}
        return limited, {s: found[:counts[s]] for s, found in listed.items()}

    def _note_ordinals(self, begin: dict[str, int], ends: dict[str, int], states: Mapping[str, StreamState | None],
                       listed: dict[str, list[int]]) -> None:
        for stream, end in ends.items():
            known = self._ordinals.setdefault(stream, {})
            state = states.get(stream)
            if end == begin[stream]:
                continue
            if state is not None and end == state.last_id == state.last_generated:
                known[end] = state.entries_added
            elif stream in listed and begin[stream] in known:
                known[end] = known[begin[stream]] + len(listed[stream])

    def _check_loss(self, begin: dict[str, int], states: Mapping[str, StreamState | None], previous: Offset) -> None:
        for stream, start in begin.items():
            state = states.get(stream)
            reason = lost_after(start, self._ordinals.get(stream, {}).get(start), state,
                                existed=stream in previous.tails, deletions_seen=self._deleted_reported.get(stream, 0))
            if reason is None:
                continue
            self._report(stream, start, reason)
            if state is not None:
                self._deleted_reported[stream] = state.max_deleted
                if state.first_id is not None:
                    # Accept the loss: the offset counts as if everything up to the first entry was read.
                    self._ordinals.setdefault(stream, {})[start] = state.removed

    def reportLatestOffset(self) -> dict[str, Any] | None:  # noqa: N802
        streams = self._streams()
        return Offset(self._ends(self._states(streams))).to_json()

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        self._target = self._ends(self._states(self._streams()))
        log.info("Trigger.AvailableNow: reading up to %s", Offset(self._target).to_json()["streams"])

    # -- batches -----------------------------------------------------------------------------

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, last = Offset.from_json(start), Offset.from_json(end)
        streams = sorted(last.positions)
        begin = self._begin(first, streams)
        self._uses_committed()
        self._planner()
        assert self._topology is not None
        if self.opts.group:
            return self._group_partitions(begin, last)
        nodes = read_nodes(self.conn, self._topology)
        pieces = [(stream, a, b) for stream in streams
                  for a, b in ids.split(ids.successor(begin[stream]), last.positions[stream],
                                        self.opts.partitions_per_stream)]
        firsts = self._with_planner(lambda c: first_entries(c, pieces))
        return [RangePartition(stream, a, b, deal(nodes, k), self.spec, firsts[k])
                for k, (stream, a, b) in enumerate(pieces)]

    def _group_partitions(self, begin: dict[str, int], end: Offset) -> list[InputPartition]:
        assert self._topology is not None and self.opts.group is not None
        parts: list[InputPartition] = []
        prefix = groups.consumer_prefix(self.opts.consumer, end.consumer)
        for stream in sorted(end.positions):
            # Every stream gets its consumers even when its offset did not move: a batch run
            # again after a failure starts from an offset computed anew from the group, and
            # its consumers must still deliver what they hold pending.
            hi = end.positions[stream]
            # A limited batch knows its size: the consumers share it. Otherwise each reads
            # until it passes the batch's end.
            count = self._counts.get((stream, hi))
            n = self.opts.partitions_per_stream
            quota = math.ceil(count / n) if count else None
            for i in range(n):
                parts.append(groups.GroupPartition(stream, self.opts.group, groups.consumer_name(prefix, i), hi,
                                                   quota, self._topology.primary, self.spec))
        return parts

    def read(self, partition: InputPartition) -> Iterator[Any]:
        if isinstance(partition, groups.GroupPartition):
            return groups.read_group(partition)
        assert isinstance(partition, RangePartition)
        return read_range(partition)

    def commit(self, end: dict[str, Any]) -> None:
        offset = Offset.from_json(end)
        for stream, committed in offset.positions.items():
            known = self._ordinals.get(stream, {})
            for old in [i for i in known if i < committed]:
                del known[old]
            for key in [k for k in self._counts if k[0] == stream and k[1] <= committed]:
                del self._counts[key]
        if self.opts.group:
            prefix = groups.consumer_prefix(self.opts.consumer, offset.consumer)
            consumers = [groups.consumer_name(prefix, i) for i in range(self.opts.partitions_per_stream)]
            for stream in offset.positions:
                acked = self._with_planner(lambda c, s=stream: groups.ack_all(c, s, self.opts.group, consumers))
                log.info("acknowledged %d entries of %s for group %s up to batch end %s", acked, stream,
                         self.opts.group, ids.fmt(offset.positions[stream]))

    def stop(self) -> None:
        self._drop_client()
