"""Exactly-once writes through Redis 8.6's idempotent production (``XADD key IDMP pid iid``):
deciding whether the server supports it, configuring a stream's deduplication window, and
deriving each row's (producer ID, idempotent ID) so a retried task or batch adds nothing twice.

Support is probed, not assumed from a version: ``XADD <fresh key> NOMKSTREAM IDMP p i * f v``
answers nil on a server with IDMP (NOMKSTREAM: nothing is created) and an error on one without
(the 7.x parser takes ``IDMP`` for the entry ID).  Rill implements IDMP, so the writer is
exactly once on Rill and says it is at least once on redis-server 7.

IDs.  The server remembers, per stream and producer ID, the last IDMP-MAXSIZE idempotent IDs
for IDMP-DURATION seconds (first in, first out).  Spark re-runs a task or a batch with the same
query ID and batch ID and recomputes the same rows, though not always in the same order, and
after a restart not always in the same partitions (another partitioning of the source, another
number of tasks).  So a row's IDs depend on nothing but the query, the batch and the row: the
idempotent ID is ``<batch>:<hash of the fields>:<n>``, ``n`` counting earlier identical rows of
the partition (identical rows stay distinct entries), and the producer ID
``rill:<query>:<bucket>`` spreads a batch over ``buckets`` producers by the hash, so a batch may
write buckets x IDMP-MAXSIZE rows per stream and still have all of them remembered when a task
is retried.  Batches reuse the producer IDs, so the window holds the latest batch, which is the
only one Spark may re-run.  One case stays open: identical rows of a batch that a re-planned run
spreads over other partitions than the first run get other counts ``n``, so such copies may be
added once too often or too seldom.
"""

from __future__ import annotations

import hashlib
import logging
import uuid
from collections import Counter
from collections.abc import Sequence

import redis

log = logging.getLogger("pipeline.rill")

_support: dict[tuple[str, int, int], bool] = {}  # per process: node -> IDMP supported

# Task attempts a stream's IDMP window should outlast: Spark's spark.task.maxFailures default.
RETRIES_COVERED = 4


def supports_idmp(client: redis.Redis) -> bool:
    """Whether the server understands ``XADD … IDMP`` (cached per node for this process)."""
    kwargs = client.connection_pool.connection_kwargs
    key = (str(kwargs.get("host")), int(kwargs.get("port", 0)), int(kwargs.get("db", 0)))
    if key not in _support:
        probe = f"__rill:idmp-probe:{uuid.uuid4().hex}"
        try:
            reply = client.execute_command("XADD", probe, "NOMKSTREAM", "IDMP", "probe", "probe", "*", "f", "v")
            _support[key] = reply is None
        except redis.exceptions.ResponseError:
            _support[key] = False
    return _support[key]


def configure(client: redis.Redis, stream: str, duration: int, maxsize: int) -> None:
    """Give ``stream`` the deduplication window the writer needs, before its first IDMP write.

    XCFGSET clears the stream's IDMP history whenever it changes a value, and needs the stream
    to exist: a missing stream is created empty and configured in one transaction; an existing
    one is reconfigured only while it tracks no producer, so no one's history is lost."""
    for _ in range(10):
        with client.pipeline(transaction=True) as pipe:
            try:
                pipe.watch(stream)
                try:
                    info = pipe.xinfo_stream(stream)
                except redis.exceptions.ResponseError as e:
                    if "no such key" not in str(e):
                        raise
                    info = None
                pipe.multi()
                if info is None:
                    group = f"__rill-create-{uuid.uuid4().hex}"
                    pipe.xgroup_create(stream, group, id="$", mkstream=True)
                    pipe.xgroup_destroy(stream, group)
                elif (int(info["idmp-duration"]), int(info["idmp-maxsize"])) == (duration, maxsize):
                    return
                elif int(info["pids-tracked"]):
                    log.warning("stream %s keeps IDMP-DURATION %s and IDMP-MAXSIZE %s (the writer asks for %d and "
                                "%d): changing them would clear the deduplication history of its %s producers",
                                stream, info["idmp-duration"], info["idmp-maxsize"], duration, maxsize,
                                info["pids-tracked"])
                    return
                pipe.execute_command("XCFGSET", stream, "IDMP-DURATION", duration, "IDMP-MAXSIZE", maxsize)
                pipe.execute()
                return
            except redis.exceptions.WatchError:
                continue
    raise RuntimeError(f"could not configure IDMP on stream {stream!r}: it kept changing")


def window(client: redis.Redis, stream: str) -> int | None:
    """The stream's IDMP-DURATION in seconds (None when it does not exist)."""
    try:
        return int(client.xinfo_stream(stream)["idmp-duration"])
    except redis.exceptions.ResponseError as e:
        if "no such key" in str(e):
            return None
        raise


class IdempotentIds:
    """(producer ID, idempotent ID) of each row one task writes."""

    def __init__(self, query: str, batch: str, buckets: int) -> None:
        self.producer_prefix = f"rill:{query}:"
        self.batch = batch
        self.buckets = buckets
        self._seen: Counter[bytes] = Counter()

    def next(self, stream: bytes, fields: Sequence[bytes]) -> tuple[bytes, bytes]:
        h = hashlib.blake2b(digest_size=16)
        h.update(len(stream).to_bytes(4, "big"))
        h.update(stream)
        for item in fields:
            h.update(len(item).to_bytes(4, "big"))
            h.update(item)
        digest = h.digest()
        n = self._seen[digest]
        self._seen[digest] = n + 1
        bucket = int.from_bytes(digest[:4], "big") % self.buckets
        return (f"{self.producer_prefix}{bucket}".encode(), f"{self.batch}:{digest.hex()}:{n}".encode())
