"""Consumer-group mode (options ``group`` and ``consumer``): tasks read with XREADGROUP as
consumers ``<prefix>-<i>`` (``i`` < partitionsPerStream, stable across restarts) and the
entries are acknowledged with XACK when Spark commits the batch. The prefix is option
``consumer`` when given (queries that name the same one share their consumers), else
``spark-<id>`` with an ID the query draws once and keeps in its offsets, so two queries
reading one group never read or acknowledge each other's pending entries.

Spark commits batch N only after it has planned batch N+1 and before N+1 runs, so at that
moment every entry pending on these consumers was delivered by a finished batch: commit acks
them all.  The last batch of a run is never committed; its entries stay pending and the next
run delivers them again (each task first re-reads its consumer's pending entries, which also
covers a retried task).  Delivery is therefore at least once.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import redis
from pyspark.sql.datasource import InputPartition

from pipeline import arrow, ids
from pipeline.endpoints import Node
from pipeline.options import Bound
from pipeline.reading import ReadSpec

log = logging.getLogger("pipeline.rill")


def consumer_name(prefix: str, index: int) -> str:
    return f"{prefix}-{index}"


def consumer_prefix(option: str | None, query_consumer: str) -> str:
    """Option ``consumer`` if given; else the query's own (``spark`` for a checkpoint written
    before queries had one, so its pending entries are still found)."""
    if option:
        return option
    return f"spark-{query_consumer}" if query_consumer else "spark"


def ensure_group(client: redis.Redis, stream: str, group: str, start: Bound) -> None:
    """Create the group (and the stream) unless it exists; an existing group keeps its place."""
    if start.kind == "earliest":
        position = "0"
    elif start.kind == "latest":
        position = "$"
    else:
        position = ids.fmt(ids.predecessor(start.id))
    try:
        client.xgroup_create(stream, group, id=position, mkstream=True)
        log.info("created consumer group %s on %s at %s", group, stream, position)
    except redis.exceptions.ResponseError as e:
        if "BUSYGROUP" not in str(e):
            raise


def group_position(client: redis.Redis, stream: str, group: str) -> int:
    for info in client.xinfo_groups(stream):
        name = info["name"]
        if (name.decode() if isinstance(name, bytes) else name) == group:
            return ids.parse(info["last-delivered-id"])
    raise LookupError(f"consumer group {group!r} of stream {stream!r} is gone")


class GroupPartition(InputPartition):
    """One consumer's share of a batch: its own pending entries, then new ones up to ``quota``
    entries (None: until an entry past ``hi`` comes or nothing is left)."""

    def __init__(self, stream: str, group: str, consumer: str, hi: int, quota: int | None, primary: Node,
                 spec: ReadSpec) -> None:
        super().__init__((stream, group, consumer, ids.fmt(hi), quota))
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.hi = hi
        self.quota = quota
        self.primary = primary
        self.spec = spec


def _entries(reply: object) -> list[list[object]]:
    """The entries of a one-stream XREADGROUP reply: RESP2 ``[[stream, entries]]``, RESP3
    ``{stream: entries}``, or nil."""
    if not reply:
        return []
    if isinstance(reply, dict):
        return list(next(iter(reply.values())))
    return list(reply[0][1])  # type: ignore[index]


def read_group(part: GroupPartition) -> Iterator[Any]:
    spec = part.spec
    client = part.primary.client(spec.conn.socket_timeout)
    try:
        # 1. what this consumer was given before and has not acknowledged (a failed attempt,
        #    or the uncommitted last batch of a previous run)
        cursor = "0"
        while True:
            entries = _entries(client.execute_command("XREADGROUP", "GROUP", part.group, part.consumer, "COUNT",
                                                      spec.batch_size, "STREAMS", part.stream, cursor))
            if not entries:
                break
            gone = [bytes(e[0]) for e in entries if e[1] is None]  # type: ignore[call-overload]  # deleted while pending
            if gone:
                client.xack(part.stream, part.group, *gone)
            live = [e for e in entries if e[1] is not None]
            if live:
                yield from arrow.output(spec.projection, part.stream, live, spec.arrow_batches)
            cursor = entries[-1][0].decode()  # type: ignore[attr-defined]
        # 2. new entries
        delivered = 0
        while part.quota is None or delivered < part.quota:
            count = spec.batch_size if part.quota is None else min(spec.batch_size, part.quota - delivered)
            entries = _entries(client.execute_command("XREADGROUP", "GROUP", part.group, part.consumer, "COUNT",
                                                      count, "STREAMS", part.stream, ">"))
            if not entries:
                break
            yield from arrow.output(spec.projection, part.stream, entries, spec.arrow_batches)
            delivered += len(entries)
            if ids.parse(entries[-1][0]) >= part.hi:  # type: ignore[arg-type]
                break
    finally:
        client.close()


def ack_all(client: redis.Redis, stream: str, group: str, consumers: list[str]) -> int:
    """Acknowledge everything pending on these consumers; returns how many."""
    acked = 0
    for consumer in consumers:
        while True:
            pending = client.xpending_range(stream, group, min="-", max="+", count=10_000, consumername=consumer)
            if not pending:
                break
            done = client.xack(stream, group, *[p["message_id"] for p in pending])
            acked += done
            if not done:  # acknowledged meanwhile by someone else: nothing left to do here
                break
    return acked
