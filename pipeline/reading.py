"""Executor side of a read: one partition is one inclusive ID range of one stream, read with
XRANGE pages of ``batchSize`` entries, each page one Arrow batch.

A replica may lag behind the node the range was planned on: before reading, the reader waits
until the replica's stream has generated the range's last ID (replication applies a stream's
entries in order, so then it holds the whole range). When a node stops answering, the reader
moves to the next candidate (re-asking Sentinel when configured) and resumes after the last
entry it yielded, so a failover neither loses nor repeats entries of the range.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis
from pyspark.sql.datasource import InputPartition

from pipeline import arrow, ids
from pipeline.connection import Node, NoNodeError, discover, read_nodes
from pipeline.options import ConnectionOptions

log = logging.getLogger("pipeline.rill")

_NODE_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
_ATTEMPTS = 3


@dataclass(frozen=True)
class ReadSpec:
    """What every partition of one query needs besides its range."""

    conn: ConnectionOptions
    projection: arrow.Projection
    batch_size: int
    arrow_batches: bool = True


class RangePartition(InputPartition):
    """Entries ``lo..hi`` (inclusive) of ``stream``, read from ``nodes[0]`` (others on failure)."""

    def __init__(self, stream: str, lo: int, hi: int, nodes: tuple[Node, ...], spec: ReadSpec) -> None:
        super().__init__((stream, ids.fmt(lo), ids.fmt(hi)))
        self.stream = stream
        self.lo = lo
        self.hi = hi
        self.nodes = nodes
        self.spec = spec


def last_generated_id(client: redis.Redis, stream: str) -> int:
    """The stream's last generated ID (0-0 when it does not exist)."""
    try:
        info = client.xinfo_stream(stream)
    except redis.exceptions.ResponseError as e:
        if "no such key" in str(e):
            return ids.MIN_ID
        raise
    return ids.parse(info["last-generated-id"])


def wait_until_caught_up(client: redis.Redis, node: Node, stream: str, hi: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    delay = 0.005
    while (last := last_generated_id(client, stream)) < hi:
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{node} has stream {stream!r} up to {ids.fmt(last)} but the range to read ends at "
                               f"{ids.fmt(hi)}: still behind after {timeout:.0f}s (replicaWaitTimeoutMs)")
        time.sleep(delay)
        delay = min(delay * 2, 0.2)


def candidates(first: tuple[Node, ...], conn: ConnectionOptions) -> Iterator[Node]:
    """The planned nodes, then (after a failure) whatever discovery says now."""
    yield from first
    for _ in range(_ATTEMPTS):
        try:
            topology = discover(conn)
        except NoNodeError as e:
            log.warning("rediscovery failed: %s", e)
            time.sleep(0.5)
            continue
        yield from read_nodes(conn, topology)
        yield topology.primary


def read_range(part: RangePartition) -> Iterator[Any]:
    spec = part.spec
    lo = part.lo
    last_error: Exception | None = None
    for node in candidates(part.nodes, spec.conn):
        client = node.client(spec.conn.socket_timeout)
        try:
            wait_until_caught_up(client, node, part.stream, part.hi, spec.conn.replica_wait_timeout)
            while lo <= part.hi:
                entries = client.execute_command("XRANGE", part.stream, ids.fmt(lo), ids.fmt(part.hi),
                                                 "COUNT", spec.batch_size)
                if not entries:
                    return
                yield from arrow.output(spec.projection, part.stream, entries, spec.arrow_batches)
                if len(entries) < spec.batch_size:
                    return
                lo = ids.successor(ids.parse(entries[-1][0]))
            return
        except _NODE_ERRORS as e:
            last_error = e
            log.warning("reading %s from %s failed (%s); trying another node from %s", part.stream, node, e,
                        ids.fmt(lo))
        finally:
            client.close()
    raise NoNodeError(f"no node could serve stream {part.stream!r} from {ids.fmt(lo)}: {last_error}")
