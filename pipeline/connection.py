"""Finding the nodes and talking to them: the primary and the replicas come from the ``url``
option, from Sentinel (``sentinels`` + ``masterName``) or from ``replicaUrls``; a `Node` is a
picklable address that travels inside Spark partitions to the executors, which open their own
redis-py connections (RESP only: the same code reads redis-server and Rill).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from urllib.parse import unquote, urlparse

import redis
from redis.sentinel import Sentinel

from pipeline.options import ConnectionOptions

log = logging.getLogger("pipeline.rill")

# Replies parsed by hand for speed (raw nested lists straight from hiredis), see pipeline.arrow.
_RAW_REPLIES = ("XRANGE", "XREVRANGE", "XREADGROUP", "XREAD", "XCLAIM", "XAUTOCLAIM")


class NoNodeError(ConnectionError):
    """No node of the configured set answers."""


@dataclass(frozen=True)
class Node:
    """One server to connect to; picklable, so it can travel in a Spark partition."""

    host: str
    port: int
    db: int = 0
    username: str | None = None
    password: str | None = None
    ssl: bool = False

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    def client(self, socket_timeout: float) -> redis.Redis:
        """A connection whose stream replies stay raw lists of bytes (no per-entry dicts)."""
        client = redis.Redis(host=self.host, port=self.port, db=self.db, username=self.username,
                              password=self.password, ssl=self.ssl, socket_timeout=socket_timeout,
                              socket_connect_timeout=socket_timeout, decode_responses=False)
        for command in _RAW_REPLIES:
            client.response_callbacks.pop(command, None)
        return client


def node_from_url(url: str) -> Node:
    parsed = urlparse(url)
    path = parsed.path.lstrip("/")
    return Node(
        host=parsed.hostname or "127.0.0.1",
        port=parsed.port or 6379,
        db=int(path) if path.isdigit() else 0,
        username=unquote(parsed.username) if parsed.username else None,
        password=unquote(parsed.password) if parsed.password else None,
        ssl=parsed.scheme == "rediss",
    )


@dataclass(frozen=True)
class Topology:
    """The primary and the replicas as discovered at one moment."""

    primary: Node
    replicas: tuple[Node, ...]


def discover(conn: ConnectionOptions) -> Topology:
    """Ask Sentinel (when configured) or read the options: the primary, and the replicas that
    readFrom=replica would use. Credentials and db come from ``url`` in every case."""
    base = node_from_url(conn.url)
    if conn.sentinels:
        assert conn.master_name is not None
        sentinel = Sentinel(list(conn.sentinels), socket_timeout=conn.socket_timeout,
                            sentinel_kwargs={"password": conn.sentinel_password} if conn.sentinel_password else None)
        try:
            host, port = sentinel.discover_master(conn.master_name)
            found = sentinel.discover_slaves(conn.master_name)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
            raise NoNodeError(f"Sentinel at {conn.sentinels} could not name a primary for {conn.master_name!r}: {e}") from e
        primary = replace(base, host=host, port=int(port))
        replicas = tuple(replace(base, host=h, port=int(p)) for h, p in sorted(found))
    else:
        primary = base
        replicas = tuple(node_from_url(u) for u in conn.replica_urls)
    return Topology(primary, replicas)


def read_nodes(conn: ConnectionOptions, topology: Topology) -> tuple[Node, ...]:
    """The nodes that serve reads, in the order partitions are dealt to them."""
    if conn.read_from == "primary":
        return (topology.primary,)
    if not topology.replicas:
        log.warning("readFrom=replica but no replica is known (%s): reading from the primary %s",
                    "Sentinel lists none" if conn.sentinels else "option replicaUrls is empty", topology.primary)
        return (topology.primary,)
    return topology.replicas

