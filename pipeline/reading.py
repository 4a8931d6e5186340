"""Executor side of a read: one partition is one inclusive ID range of one stream, read with
XRANGE pages of ``batchSize`` entries, each page one Arrow batch.

A replica may lag behind the node the range was planned on: before reading, the reader waits
until its node holds the whole range — with committed reads until the node's committed entry
(XCOMMITTED) reaches the range's end, so the node vouches for every entry it returns; otherwise
until its stream has generated the range's last ID (replication applies a stream's entries in
order, so it then holds the whole range). When a node stops answering, the reader moves to the
next candidate, then to whatever discovery (Sentinel) names, with backoff for at most
``failoverTimeoutMs``, and resumes after the last entry it yielded, so a failover neither loses
nor repeats entries of the range.

The planner also noted the range's first entry: if it is gone when the task starts reading (a
trim or an XDEL between planning and reading, or before a retried task), entries the batch
should hold were lost: ``failOnDataLoss`` fails the task, or the task says so and goes on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis
from pyspark.sql.datasource import InputPartition

from pipeline import arrow, ids, servers
from pipeline.endpoints import NODE_ERRORS, Node, NoNodeError, Topology, discover, read_nodes
from pipeline.options import ConnectionOptions

log = logging.getLogger("pipeline.rill")

_FIRST_DELAY = 0.1
_MAX_DELAY = 2.0


class DataLossError(RuntimeError):
    """Entries a query should read were removed, or a history no longer holds what it read."""


@dataclass(frozen=True)
class ReadSpec:
    """What every partition of one query needs besides its range."""

    conn: ConnectionOptions
    projection: arrow.Projection
    batch_size: int
    arrow_batches: bool = True
    committed: bool = False  # read only what XCOMMITTED vouches for
    fail_on_data_loss: bool = True


class RangePartition(InputPartition):
    """Entries ``lo..hi`` (inclusive) of ``stream``, read from ``nodes[0]`` (others on failure);
    ``first`` is the first entry the planner saw in the range (None: none, or not looked up)."""

    def __init__(self, stream: str, lo: int, hi: int, nodes: tuple[Node, ...], spec: ReadSpec,
                 first: int | None = None) -> None:
        super().__init__((stream, ids.fmt(lo), ids.fmt(hi)))
        self.stream = stream
        self.lo = lo
        self.hi = hi
        self.nodes = nodes
        self.spec = spec
        self.first = first


def last_generated_id(client: redis.Redis, stream: str) -> int:
    """The stream's last generated ID (0-0 when it does not exist)."""
    try:
        info = client.xinfo_stream(stream)
    except redis.exceptions.ResponseError as e:
        if "no such key" in str(e):
            return ids.MIN_ID
        raise
    return ids.parse(info["last-generated-id"])


def held_up_to(client: redis.Redis, stream: str, committed: bool) -> int:
    """How far the node vouches for the stream: its committed entry, or its last generated ID."""
    if committed:
        found = servers.committed_ids(client, [stream])[stream]
        return ids.parse(found) if found else ids.MIN_ID
    return last_generated_id(client, stream)


def wait_until_caught_up(client: redis.Redis, node: Node, stream: str, hi: int, timeout: float,
                         committed: bool = False) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.005
    while (held := held_up_to(client, stream, committed)) < hi:
        if time.monotonic() >= deadline:
            what = "committed" if committed else "generated"
            raise TimeoutError(f"{node} has stream {stream!r} {what} up to {ids.fmt(held)} but the range to read "
                               f"ends at {ids.fmt(hi)}: still behind after {timeout:.0f}s (replicaWaitTimeoutMs)")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def candidates(first: tuple[Node, ...], conn: ConnectionOptions) -> Iterator[Node]:
    """The planned nodes, then (after failures) whatever discovery says now, looked for again
    with backoff until `failoverTimeoutMs` has passed."""
    yield from first
    deadline = time.monotonic() + conn.failover_timeout
    delay = _FIRST_DELAY
    while time.monotonic() < deadline:
        try:
            topology: Topology = discover(conn)
        except NoNodeError as e:
            log.warning("rediscovery failed: %s", e)
        else:
            yield from read_nodes(conn, topology)
            yield topology.primary
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 2, _MAX_DELAY)


def _check_first(part: RangePartition, entries: list[Any]) -> None:
    """The range's first entry, seen by the planner, must still be there."""
    if part.first is None:
        return
    if entries and ids.parse(entries[0][0]) == part.first:
        return
    message = (f"stream {part.stream!r}: entry {ids.fmt(part.first)}, the first of the range "
               f"{ids.fmt(part.lo)}..{ids.fmt(part.hi)} this batch reads, was removed (trimmed or deleted) after the "
               "batch was planned")
    if part.spec.fail_on_data_loss:
        raise DataLossError(message + ". Set failOnDataLoss=false to go on without it.")
    log.warning("%s; going on (failOnDataLoss=false)", message)


def read_range(part: RangePartition) -> Iterator[Any]:
    spec = part.spec
    lo = part.lo
    checked = False
    last_error: Exception | None = None
    for node in candidates(part.nodes, spec.conn):
        client = node.client(spec.conn.socket_timeout)
        try:
            wait_until_caught_up(client, node, part.stream, part.hi, spec.conn.replica_wait_timeout, spec.committed)
            while lo <= part.hi:
                entries = client.execute_command("XRANGE", part.stream, ids.fmt(lo), ids.fmt(part.hi),
                                                 "COUNT", spec.batch_size)
                if not checked:
                    _check_first(part, entries)
                    checked = True
                if not entries:
                    return
                yield from arrow.output(spec.projection, part.stream, entries, spec.arrow_batches)
                if len(entries) < spec.batch_size:
                    return
                lo = ids.successor(ids.parse(entries[-1][0]))
            return
        except NODE_ERRORS as e:
            last_error = e
            log.warning("reading %s from %s failed (%s); trying another node from %s", part.stream, node, e,
                        ids.fmt(lo))
        finally:
            client.close()
    raise NoNodeError(f"no node could serve stream {part.stream!r} from {ids.fmt(lo)} within "
                      f"{spec.conn.failover_timeout:.0f}s (failoverTimeoutMs): {last_error}")
